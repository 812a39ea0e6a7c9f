package report

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/pctab/pctab/internal/textfmt"
)

// WriteText writes r as an aligned, readable report.
func WriteText(w io.Writer, r *Report) error {
	ew := &textfmt.ErrWriter{W: w}
	p := func(format string, args ...any) { fmt.Fprintf(ew, format, args...) }
	p("%s\n", r.Path)
	p("  file %s bytes, %s/%s, %s, pclntab %s layout (%s), %s-endian, %d-byte pointers, PC quantum %d\n",
		textfmt.Commas(r.FileBytes), r.GOOS, r.GOARCH, textfmt.GoVersion(r.GoVersion), r.PclntabVersion, magicText(r), r.ByteOrder, r.PtrSize, r.PCQuantum)
	if r.EntryOffKey != "" && r.EntryOffKey != "0x0" {
		p("  _func entryOffs encrypted as garble does (entryOff XOR nameOff*key), key %s: read through the functab, which every record matches\n", r.EntryOffKey)
	}
	p("  %s functions, pclntab %s bytes (%.1f%% of the file)\n", textfmt.Commas(int64(r.Functions)), textfmt.Commas(r.PclntabBytes), pctOf(r.PclntabBytes, r.FileBytes))
	if r.GOARCH == "wasm" {
		p("  wasm: sizes are of linear memory; the module's data segments leave out runs of 8 or more zero bytes, so the file holds less\n")
	}
	pt := r.Parts
	p("  pclntab parts: funcnametab %s, cutab %s, filetab %s, pctab %s, functab %s, funcdata %s, findfunctab %s\n",
		textfmt.Commas(pt.FuncNameTab), textfmt.Commas(pt.CUTab), textfmt.Commas(pt.FileTab), textfmt.Commas(pt.PCTab), textfmt.Commas(pt.FuncTab), sizeOrUnknown(pt.FuncData), textfmt.Commas(pt.FindFuncTab))
	p("\n")

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "table kind\treferences\tdistinct\tvarint bytes\tlinear bytes\tchange\t\n")
	for _, k := range r.Kinds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", k.Kind, textfmt.Commas(int64(k.References)), textfmt.Commas(int64(k.Distinct)), textfmt.Commas(k.VarintBytes), textfmt.Commas(k.LinearBytes), signedPct(k.DeltaPercent))
	}
	t := r.Tables
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t%s\t\n", textfmt.Commas(int64(t.References)), textfmt.Commas(int64(t.Distinct)), textfmt.Commas(t.VarintBytes), textfmt.Commas(t.LinearBytes), signedPct(t.DeltaPercent))
	tw.Flush()
	p("\n")
	p("  linear before content dedup: %s bytes (%s distinct encodings after)\n", textfmt.Commas(t.LinearNoDedup), textfmt.Commas(int64(t.LinearDistinct)))
	p("  constant-chunk dedup: %s chunks reuse an earlier constant chunk, saving %s bytes\n", textfmt.Commas(int64(t.ConstChunks)), textfmt.Commas(t.ConstDedupSave))
	p("  change: %+s bytes = %s of the tables, %s of the file (tables only)\n", textfmt.Commas(t.DeltaBytes), signedPct(t.DeltaPercent), signedPct(r.TablesFileDeltaPercent))
	p("          %s of the file with a uint32 function size per function (%s bytes out of band)\n", signedPct(r.FileDeltaPercent), textfmt.Commas(r.OutOfBandBytes))
	p("\n")

	s := r.Shape
	p("shape (p50 / p90 / p99 / max):\n")
	p("  function bytes      %s\n", distString(s.FuncBytes))
	p("  chunks per table    %s; %.1f%% of distinct tables fit in one chunk\n", distString(s.ChunksPerTable), 100*s.SingleChunkShare)
	p("  changes per chunk   %s\n", distString(s.ChangesPerChunk))
	p("  runs per table      %s\n", distString(s.RunsPerTable))
	tot := s.ValueWidths[0] + s.ValueWidths[1] + s.ValueWidths[2]
	p("  value widths        1 byte %.1f%%, 2 bytes %.1f%%, 4 bytes %.1f%% of %s values\n",
		pctOf(s.ValueWidths[0], tot), pctOf(s.ValueWidths[1], tot), pctOf(s.ValueWidths[2], tot), textfmt.Commas(tot))
	if s.MismatchedLengths > 0 {
		p("  %d functions have tables of different lengths\n", s.MismatchedLengths)
	}
	if len(r.Variants) > 0 {
		p("\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "variant\tbytes\tvs varint\tfile\tidea\n")
		rows := slices.Clone(r.Variants)
		for _, v := range []*VariantRow{r.Hybrid, r.Mix} {
			if v != nil {
				rows = append(rows, *v)
			}
		}
		for _, v := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Name, textfmt.Commas(v.Bytes), signedPct(v.DeltaPercent), signedPct(v.FileDeltaPercent), v.Doc)
		}
		tw.Flush()
		p("  smallest linear variant: %s\n", r.Best)
	}
	p("\n  assumption: %s\n", r.Assumption)
	return ew.Err
}

// WriteComparison writes one row per report: the figures that matter when
// comparing binaries side by side.
func WriteComparison(w io.Writer, rs []*Report) error {
	ew := &textfmt.ErrWriter{W: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "binary\ttarget\tgo\tfunctions\tfile bytes\tvarint bytes\tlinear bytes\ttables\tfile\tfile+size\t\n")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Path, r.GOOS, r.GOARCH, textfmt.GoVersion(r.GoVersion),
			textfmt.Commas(int64(r.Functions)), textfmt.Commas(r.FileBytes), textfmt.Commas(r.Tables.VarintBytes), textfmt.Commas(r.Tables.LinearBytes),
			signedPct(r.Tables.DeltaPercent), signedPct(r.TablesFileDeltaPercent), signedPct(r.FileDeltaPercent))
	}
	tw.Flush()
	return ew.Err
}

func distString(d Dist) string {
	return fmt.Sprintf("%s / %s / %s / %s (mean %.1f)", textfmt.Commas(d.P50), textfmt.Commas(d.P90), textfmt.Commas(d.P99), textfmt.Commas(d.Max), d.Mean)
}

func pctOf(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func signedPct(v float64) string { return fmt.Sprintf("%+.2f%%", v) }

func sizeOrUnknown(v int64) string {
	if v < 0 {
		return "?"
	}
	return textfmt.Commas(v)
}

// magicText describes the pclntab's magic: Go's, or one of an
// obfuscator's own read in Go's layout.
func magicText(r *Report) string {
	if r.PclntabMagicForeign {
		return fmt.Sprintf("magic %s, not Go's: an obfuscator's such as garble; every other header field matches the layout of %s", r.PclntabHeaderMagic, r.PclntabMagic)
	}
	return "magic " + r.PclntabMagic
}
