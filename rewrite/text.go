package rewrite

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes a human-readable account of res: the real size
// difference, est (if not nil) next to it, the gap between them item by
// item, the parts of the difference, the notes and the verification result.
func WriteText(w io.Writer, res *Result, est *Estimate) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	lengths := ""
	if res.Derived {
		lengths = ", function lengths derived from the functab"
	}
	p("mode\t%s, variant %s%s\n", res.Mode, res.Variant, lengths)
	p("target\t%s/%s %s, %d functions\n", res.GOOS, res.GOARCH, res.GoVersion, res.Funcs)
	p("file size\t%d -> %d bytes: %+d bytes (%+.3f%%)\n", res.InBytes, res.OutBytes, res.DeltaBytes, res.DeltaPercent)
	p("tables\t%d bytes of varint tables -> %d bytes of linear encodings (%d distinct, %d (table, length) pairs, %d extended to their function's length)\n",
		res.VarintBytes, res.LinearBytes, res.LinearTables, res.IndexEntries, res.PaddedTables)
	if res.Mode == Replace {
		p("pclntab\t%d -> %d bytes: %+d\n", res.OldPclntab, res.NewPclntab, res.NewPclntab-res.OldPclntab)
	} else {
		p("section\t%d bytes (the %d-byte varint pclntab is kept)\n", res.SectionBytes, res.OldPclntab)
	}
	if est != nil {
		p("estimate\t%+d bytes (%+.3f%%): pctab-stats' linear %d - varint %d + out-of-band %d\n",
			est.Bytes, est.Percent, est.LinearBytes, est.VarintBytes, est.OutOfBandBytes)
		p("gap\t%+d bytes (real - estimate):\n", res.DeltaBytes-est.Bytes)
		for _, g := range Gap(res, est) {
			p("\t%+10d  %s\n", g.Bytes, g.Name)
		}
	}
	p("parts\t     old ->       new    delta  what\n")
	for _, pt := range res.Parts {
		p("\t%8d -> %9d %+8d  %s", pt.Old, pt.New, pt.Delta(), pt.Name)
		if pt.Note != "" {
			p(" (%s)", pt.Note)
		}
		p("\n")
	}
	for i, n := range res.Notes {
		label := ""
		if i == 0 {
			label = "notes"
		}
		p("%s\t%s\n", label, n)
	}
	if v := res.Verify; v != nil {
		status := "ok"
		if !v.OK() {
			status = "FAIL"
		}
		p("verify\t%s: %d tables, %d PCs, %d lookups, %d mismatches\n", status, v.Tables, v.PCs, v.Lookups, v.Mismatches)
		for _, e := range v.Examples {
			p("\t%s\n", e)
		}
	}
	return tw.Flush()
}
