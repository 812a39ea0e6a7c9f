// Package report computes pctab's size report for a Go binary: how many
// bytes its PC-value tables take in Go's varint format and in the proposed
// linear-index format (golang/go#61984) and its variants, per table kind and
// in total, and the shape of the tables that explains the difference.
//
// Definitions, used everywhere in pctab:
//
//   - varint bytes: the sum of the encoded lengths, terminator included, of
//     the distinct tables, deduplicated by pctab offset (as the linker stores
//     them).
//   - linear bytes: the sum of the lengths of the distinct linear encodings,
//     deduplicated by content.
//
// A table that several kinds share (the same pctab offset used, say, as one
// function's pcfile and another's PCDATA) is charged to the kind of its first
// reference, in functab order and, within a function, in the order pcsp,
// pcfile, pcln, PCDATA 0, 1, .... Per-kind rows therefore add up to the totals.
package report

import (
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// SizeAssumption states how the whole-file figures count what the linear
// format needs out of band: the function's size in PC units.
const SizeAssumption = "the linear format needs each function's size out of band; " +
	"file_delta_percent adds a uint32 per function for it (Go's _func has no free 4-byte slot), " +
	"tables_file_delta_percent counts the tables alone, as the proposal does"

// Report is the size report of one binary. Field names and JSON names are
// stable: scripts depend on them.
type Report struct {
	Path           string `json:"path"`
	FileBytes      int64  `json:"file_bytes"`
	GOOS           string `json:"goos"`
	GOARCH         string `json:"goarch"`
	GoVersion      string `json:"go_version"`
	PclntabVersion string `json:"pclntab_version"`
	PclntabMagic   string `json:"pclntab_magic"`
	ByteOrder      string `json:"byte_order"`
	PtrSize        int    `json:"ptr_size"`
	PCQuantum      int    `json:"pc_quantum"`
	Functions      int    `json:"functions"`
	PclntabBytes   int64  `json:"pclntab_bytes"`

	Parts objscan.Sizes `json:"pclntab_parts"`

	Tables Totals    `json:"tables"`
	Kinds  []KindRow `json:"kinds"`

	// OutOfBandBytes is what the linear format needs outside the tables:
	// a uint32 function size per function.
	OutOfBandBytes int64 `json:"out_of_band_bytes"`
	// FileDeltaPercent is the change of the whole file, out-of-band bytes
	// included, as a percentage of the file size.
	FileDeltaPercent float64 `json:"file_delta_percent"`
	// TablesFileDeltaPercent is the change of the tables alone as a
	// percentage of the file size (the proposal's figure).
	TablesFileDeltaPercent float64 `json:"tables_file_delta_percent"`
	Assumption             string  `json:"assumption"`

	Shape    Shape        `json:"shape"`
	Variants []VariantRow `json:"variants,omitempty"`
	Hybrid   *VariantRow  `json:"hybrid,omitempty"`
	Best     string       `json:"best_variant,omitempty"`
}

// Totals are the table sizes of a binary.
type Totals struct {
	References     int     `json:"references"`                // table references from functions (offset != 0)
	Distinct       int     `json:"distinct"`                  // distinct tables by pctab offset
	VarintBytes    int64   `json:"varint_bytes"`              // distinct varint tables, terminators included
	LinearNoDedup  int64   `json:"linear_bytes_before_dedup"` // one spec encoding per distinct varint table
	LinearBytes    int64   `json:"linear_bytes"`              // distinct spec encodings by content
	LinearDistinct int     `json:"linear_distinct"`           // distinct spec encodings
	ConstChunks    int     `json:"const_chunks_deduped"`      // chunks that reuse an earlier constant chunk
	ConstDedupSave int64   `json:"const_dedup_saved_bytes"`   // bytes those chunks would take if encoded again
	DeltaBytes     int64   `json:"delta_bytes"`               // LinearBytes - VarintBytes
	DeltaPercent   float64 `json:"delta_percent"`             // of VarintBytes
}

// KindRow is the size of one table kind.
type KindRow struct {
	Kind         string  `json:"kind"`
	References   int     `json:"references"`
	Distinct     int     `json:"distinct"` // distinct tables this kind references (shared ones count in each kind)
	VarintBytes  int64   `json:"varint_bytes"`
	LinearBytes  int64   `json:"linear_bytes"`
	DeltaPercent float64 `json:"delta_percent"`
}

// VariantRow is the size of the whole table set in one linear variant.
type VariantRow struct {
	Name             string  `json:"name"`
	Doc              string  `json:"doc"`
	Bytes            int64   `json:"bytes"`
	DeltaPercent     float64 `json:"delta_percent"`      // of varint bytes
	FileDeltaPercent float64 `json:"file_delta_percent"` // out-of-band bytes included
}

// Dist summarizes a distribution of non-negative integers.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  int64   `json:"p50"`
	P90  int64   `json:"p90"`
	P99  int64   `json:"p99"`
	Max  int64   `json:"max"`
}

// Shape describes the tables.
type Shape struct {
	FuncBytes       Dist `json:"func_bytes"`        // function size in bytes (code the tables cover)
	ChunksPerTable  Dist `json:"chunks_per_table"`  // 256-unit chunks per distinct table
	ChangesPerChunk Dist `json:"changes_per_chunk"` // value changes inside a chunk
	// ValueWidths counts the values of all chunks by the width the spec
	// encoding gives them: 1, 2 or 4 bytes.
	ValueWidths       [3]int64 `json:"value_widths_1_2_4"`
	SingleChunkShare  float64  `json:"single_chunk_share"` // distinct tables that fit in one chunk
	RunsPerTable      Dist     `json:"runs_per_table"`
	ZeroLengthTables  int      `json:"zero_length_tables"`
	MismatchedLengths int      `json:"funcs_with_mismatched_table_lengths"`
}

// Options select what Compute does.
type Options struct {
	Variants bool // also size every linearpc variant and the hybrid
	Workers  int  // goroutines for encoding; 0 means GOMAXPROCS
}

// decoded is one distinct varint table, decoded.
type decoded struct {
	tab  *objscan.Table
	t    pcvalue.Table
	spec []byte
}

// Compute builds the report for f.
func Compute(f *objscan.File, opt Options) (*Report, error) {
	r := &Report{
		Path: f.Path, FileBytes: f.FileSize, GOOS: f.GOOS, GOARCH: f.GOARCH, GoVersion: f.GoVersion,
		PclntabVersion: f.Version, PclntabMagic: fmt.Sprintf("%#x", f.Magic),
		PtrSize: f.PtrSize, PCQuantum: f.PCQuantum, Functions: len(f.Funcs),
		PclntabBytes: int64(len(f.Pclntab())), Parts: f.Sizes, Assumption: SizeAssumption,
	}
	r.ByteOrder = "little"
	if f.ByteOrder.String() == "BigEndian" {
		r.ByteOrder = "big"
	}
	dec, err := decodeAll(f, opt.Workers)
	if err != nil {
		return nil, err
	}
	r.OutOfBandBytes = 4 * int64(len(f.Funcs))

	// Totals and per-kind rows, charging shared tables to their first reference.
	kinds := map[objscan.TableKind]*KindRow{}
	kindRow := func(k objscan.TableKind) *KindRow {
		if kinds[k] == nil {
			kinds[k] = &KindRow{Kind: k.String()}
		}
		return kinds[k]
	}
	for k := objscan.KindPCSP; k < objscan.NumNamedKinds; k++ {
		kindRow(k)
	}
	seenOff := map[uint32]bool{}
	seenContent := map[string]bool{}
	type kindTab struct {
		k   objscan.TableKind
		off uint32
	}
	seenKindTab := map[kindTab]bool{}
	byOff := make(map[uint32]*decoded, len(dec))
	for i := range dec {
		byOff[dec[i].tab.Offset] = &dec[i]
	}
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			off := fn.TableOffset(k)
			if off == 0 {
				continue
			}
			row := kindRow(k)
			row.References++
			r.Tables.References++
			if !seenKindTab[kindTab{k, off}] {
				seenKindTab[kindTab{k, off}] = true
				row.Distinct++
			}
			d := byOff[off]
			if !seenOff[off] {
				seenOff[off] = true
				row.VarintBytes += int64(len(d.tab.Data))
				r.Tables.VarintBytes += int64(len(d.tab.Data))
				r.Tables.LinearNoDedup += int64(len(d.spec))
			}
			if !seenContent[string(d.spec)] {
				seenContent[string(d.spec)] = true
				row.LinearBytes += int64(len(d.spec))
				r.Tables.LinearBytes += int64(len(d.spec))
			}
		}
	}
	r.Tables.Distinct = len(dec)
	r.Tables.LinearDistinct = len(seenContent)
	r.Tables.DeltaBytes = r.Tables.LinearBytes - r.Tables.VarintBytes
	r.Tables.DeltaPercent = pct(r.Tables.DeltaBytes, r.Tables.VarintBytes)
	r.TablesFileDeltaPercent = pct(r.Tables.DeltaBytes, r.FileBytes)
	r.FileDeltaPercent = pct(r.Tables.DeltaBytes+r.OutOfBandBytes, r.FileBytes)
	for k := objscan.TableKind(0); k < 255; k++ {
		if row := kinds[k]; row != nil {
			row.DeltaPercent = pct(row.LinearBytes-row.VarintBytes, row.VarintBytes)
			r.Kinds = append(r.Kinds, *row)
		}
	}
	r.Tables.ConstChunks, r.Tables.ConstDedupSave = constDedup(dec)
	r.Shape = shape(f, dec)
	if opt.Variants {
		r.variants(f, dec)
	}
	return r, nil
}

// decodeAll decodes and spec-encodes every distinct table, in parallel.
func decodeAll(f *objscan.File, workers int) ([]decoded, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	dec := make([]decoded, len(f.Tabs))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(dec); i += workers {
				tab := &f.Tabs[i]
				t, _, err := varintpc.Decode(tab.Data)
				if err != nil {
					errs[w] = fmt.Errorf("table at pctab offset %#x: %w", tab.Offset, err)
					return
				}
				dec[i] = decoded{tab: tab, t: t, spec: linearpc.Encode(t)}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return dec, nil
}

// constDedup counts the chunks that constant-chunk dedup shares, and the
// bytes they would take if each were encoded: n (1 byte), one vlen byte and
// the value.
func constDedup(dec []decoded) (chunks int, saved int64) {
	seen := map[string]bool{}
	for i := range dec {
		if seen[string(dec[i].spec)] {
			continue // content dedup stores this encoding once
		}
		seen[string(dec[i].spec)] = true
		t := &dec[i].t
		consts := map[int32]bool{}
		forEachChunk(t, linearpc.ChunkUnits, func(start int32, inner []pcvalue.Run) {
			if len(inner) != 0 {
				return
			}
			if consts[start] {
				chunks++
				saved += 2 + int64(width(start))
			}
			consts[start] = true
		})
	}
	return chunks, saved
}

// forEachChunk calls fn for each chunk of t with the chunk's start value and
// the runs that start inside it (a run that starts at the chunk's first PC
// is not inside: its value is the start value).
func forEachChunk(t *pcvalue.Table, units uint32, fn func(start int32, inner []pcvalue.Run)) {
	runs := t.Runs
	ri := 0
	for c := uint32(0); c*units < t.Len && len(runs) > 0; c++ {
		lo, hi := c*units, min((c+1)*units, t.Len)
		for ri+1 < len(runs) && runs[ri+1].PC <= lo {
			ri++
		}
		j := ri + 1
		for j < len(runs) && runs[j].PC < hi {
			j++
		}
		fn(runs[ri].Value, runs[ri+1:j])
		ri = max(ri, j-1)
	}
}

func width(v int32) int {
	switch {
	case v == int32(int8(v)):
		return 1
	case v == int32(int16(v)):
		return 2
	}
	return 4
}

func shape(f *objscan.File, dec []decoded) Shape {
	var s Shape
	var fsz, chunks, changes, runs []int64
	for i := range f.Funcs {
		fsz = append(fsz, int64(f.Funcs[i].Size))
	}
	single := 0
	for i := range dec {
		t := &dec[i].t
		if t.Len == 0 {
			s.ZeroLengthTables++
		}
		n := int64((t.Len + linearpc.ChunkUnits - 1) / linearpc.ChunkUnits)
		chunks = append(chunks, n)
		runs = append(runs, int64(len(t.Runs)))
		if n <= 1 {
			single++
		}
		forEachChunk(t, linearpc.ChunkUnits, func(start int32, inner []pcvalue.Run) {
			changes = append(changes, int64(len(inner)))
			s.ValueWidths[widthIndex(start)]++
			// Values after the first are stored relative to the chunk start.
			for _, r := range inner {
				s.ValueWidths[widthIndex(r.Value-start)]++
			}
		})
	}
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		var l uint32
		mismatch := false
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			if t := f.Table(fn.TableOffset(k)); t != nil {
				if l != 0 && t.Len != l {
					mismatch = true
				}
				l = t.Len
			}
		}
		if mismatch {
			s.MismatchedLengths++
		}
	}
	s.FuncBytes = dist(fsz)
	s.ChunksPerTable = dist(chunks)
	s.ChangesPerChunk = dist(changes)
	s.RunsPerTable = dist(runs)
	if len(dec) > 0 {
		s.SingleChunkShare = float64(single) / float64(len(dec))
	}
	return s
}

func widthIndex(v int32) int {
	switch width(v) {
	case 1:
		return 0
	case 2:
		return 1
	}
	return 2
}

// hotKind reports whether the runtime reads tables of kind k on hot paths
// (unwinding, GC stack scans, async preemption, inline expansion).
func hotKind(k objscan.TableKind) bool {
	switch k {
	case objscan.KindPCSP, objscan.KindStackMapIndex, objscan.KindInlTreeIndex, objscan.KindUnsafePoint:
		return true
	}
	return false
}

// HybridDoc describes the hybrid encoding.
const HybridDoc = "spec linear for pcsp, StackMapIndex, InlTreeIndex and UnsafePoint; varint for pcfile, pcln, ArgLiveIndex and PanicBounds (a table used both ways is stored both ways)"

func (r *Report) variants(f *objscan.File, dec []decoded) {
	varint := r.Tables.VarintBytes
	best := ""
	var bestBytes int64 = -1
	for _, v := range linearpc.Variants() {
		set := linearpc.NewSet(v)
		for i := range dec {
			set.Add(dec[i].t)
		}
		row := VariantRow{Name: v.Name, Doc: v.Doc, Bytes: int64(set.Size())}
		row.DeltaPercent = pct(row.Bytes-varint, varint)
		row.FileDeltaPercent = pct(row.Bytes-varint+r.OutOfBandBytes, r.FileBytes)
		r.Variants = append(r.Variants, row)
		if bestBytes < 0 || row.Bytes < bestBytes {
			best, bestBytes = v.Name, row.Bytes
		}
	}
	r.Best = best
	// Hybrid: which distinct tables are referenced by a hot kind, which by a cold one.
	hot := map[uint32]bool{}
	cold := map[uint32]bool{}
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			if off := fn.TableOffset(k); off != 0 {
				if hotKind(k) {
					hot[off] = true
				} else {
					cold[off] = true
				}
			}
		}
	}
	h := VariantRow{Name: "hybrid", Doc: HybridDoc}
	set := linearpc.NewSet(linearpc.Spec())
	for i := range dec {
		off := dec[i].tab.Offset
		if cold[off] {
			h.Bytes += int64(len(dec[i].tab.Data))
		}
		if hot[off] {
			set.Add(dec[i].t)
		}
	}
	h.Bytes += int64(set.Size())
	h.DeltaPercent = pct(h.Bytes-varint, varint)
	// Only functions with a hot linear table need their size out of band.
	h.FileDeltaPercent = pct(h.Bytes-varint+r.OutOfBandBytes, r.FileBytes)
	r.Hybrid = &h
}

func pct(delta, base int64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * float64(delta) / float64(base)
}

func dist(v []int64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	q := func(p float64) int64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	return Dist{N: len(v), Mean: sum / float64(len(v)), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: v[len(v)-1]}
}
