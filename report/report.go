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
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/pctab/pctab/internal/par"
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
	PclntabMagic   string `json:"pclntab_magic"` // the Go magic of the layout read
	// PclntabHeaderMagic is the magic the pcHeader holds: PclntabMagic,
	// unless PclntabMagicForeign (an obfuscator such as garble wrote its
	// own; objscan.File.ForeignMagic).
	PclntabHeaderMagic  string `json:"pclntab_header_magic"`
	PclntabMagicForeign bool   `json:"pclntab_magic_foreign"`
	// EntryOffKey is the key garble encrypted the _func records' entryOff
	// with (objscan.File.EntryOffKey); "0x0" when they are plain.
	EntryOffKey  string `json:"entryoff_key"`
	ByteOrder    string `json:"byte_order"`
	PtrSize      int    `json:"ptr_size"`
	PCQuantum    int    `json:"pc_quantum"`
	Functions    int    `json:"functions"`
	PclntabBytes int64  `json:"pclntab_bytes"`

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
	// Mix is the pctab toolchain's pctab_varln tables: pcln in varint,
	// every other kind in cf-palette-short (MixDoc).
	Mix  *VariantRow `json:"mix,omitempty"`
	Best string      `json:"best_variant,omitempty"`
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
	// Variants are the kind's bytes in each linearpc variant that does
	// not pool chunks, other than the spec (with Options.Variants).
	Variants []KindVariant `json:"variants,omitempty"`
}

// KindVariant is a table kind's bytes in one linear variant: each distinct
// encoding is charged to the kind of its first reference, so a variant's
// rows add up to its VariantRow.
type KindVariant struct {
	Name         string  `json:"name"`
	Bytes        int64   `json:"bytes"`
	DeltaPercent float64 `json:"delta_percent"` // of the kind's varint bytes
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
	Workers  int  // goroutines for the parallel passes (a pooled variant's Set fills in one more); 0 means GOMAXPROCS
}

// tabInfo is what Compute keeps of one distinct table.
type tabInfo struct {
	specLen   uint32
	first     int32  // index of the first table with the same spec encoding
	constDup  uint32 // chunks that reuse an earlier constant chunk of this table
	constSave uint32 // bytes those chunks would take
}

// shapeAcc accumulates shape statistics; one per worker, merged at the end.
type shapeAcc struct {
	chunks, changes, runs hist
	widths                [3]int64
	single, zeroLen       int
}

// digests holds the standalone encoding of every table in each digested
// variant as a key: its length in the high 32 bits and 32 bits of its
// hash in the low ones. Equal encodings have equal keys; equal keys are
// confirmed byte for byte before tables are taken as equal.
type digests struct {
	tabs []objscan.Table
	vs   []linearpc.Variant // the spec first
	keys []uint64           // table i's key in vs[k] is keys[i*len(vs)+k]
}

func (d *digests) key(i, k int) uint64 { return d.keys[i*len(d.vs)+k] }

func (d *digests) len(i, k int) uint32 { return uint32(d.key(i, k) >> 32) }

// decoder decodes tables into scratch space it reuses.
type decoder struct {
	runs []pcvalue.Run
}

// decode decodes tab; the table is valid until the next call.
func (dc *decoder) decode(tab *objscan.Table) (pcvalue.Table, error) {
	t, _, err := varintpc.AppendDecode(dc.runs[:0], tab.Data)
	if err != nil {
		return t, fmt.Errorf("table at pctab offset %#x: %w", tab.Offset, err)
	}
	dc.runs = t.Runs // keeps its capacity for the next table
	return t, nil
}

// verifier confirms that two tables whose keys are equal have equal
// encodings.
type verifier struct {
	da, db decoder
	enc    linearpc.Encoder
	seen   dedup // scratch space of distinctBytes
}

// equal reports whether tables a and b have the same encoding in v. Both
// decoded without error before, so errors cannot happen here; if one did,
// the tables would be reported unequal.
func (vf *verifier) equal(a, b *objscan.Table, v linearpc.Variant) bool {
	ta, err1 := vf.da.decode(a)
	tb, err2 := vf.db.decode(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return vf.enc.Equal(ta, tb, v)
}

// Compute builds the report for f.
func Compute(f *objscan.File, opt Options) (*Report, error) {
	if l := f.Linear; l != nil && l.Mode == "replace" {
		return nil, fmt.Errorf("report: the pclntab's tables are already in the linear format (%s variant, written by rewrite-binary or the pctab toolchain); the report sizes varint tables: check it with pctab-stats verify -orig ORIGINAL or -twin TWIN", l.Variant)
	}
	r := newReport(f)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// The pooled variants' Sets are built table by table in order, the
	// longest serial work: start them now, beside the parallel pass.
	var pooled []pooledSet
	var wg sync.WaitGroup
	if opt.Variants {
		pooled = startPooled(f.Tabs, &wg)
	}
	defer wg.Wait()

	d := &digests{tabs: f.Tabs, vs: digestVariants(opt.Variants)}
	info, accs, err := digestTables(d, workers)
	if err != nil {
		return nil, err
	}
	contentFirsts(info, d, workers)
	r.OutOfBandBytes = 4 * int64(len(f.Funcs))

	rt := newRefTables(f)
	if err := r.chargeTables(f, rt, info); err != nil {
		return nil, err
	}
	r.Shape = shape(f, rt, accs, len(info))
	if opt.Variants {
		if err := r.variants(f, rt, info, d, pooled, wg.Wait, workers); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// newReport returns a report with f's header fields filled in.
func newReport(f *objscan.File) *Report {
	r := &Report{
		Path: f.Path, FileBytes: f.FileSize, GOOS: f.GOOS, GOARCH: f.GOARCH, GoVersion: f.GoVersion,
		PclntabVersion: f.Version, PclntabMagic: fmt.Sprintf("%#x", f.Magic),
		PclntabHeaderMagic: fmt.Sprintf("%#x", f.HeaderMagic), PclntabMagicForeign: f.ForeignMagic,
		EntryOffKey: fmt.Sprintf("%#x", f.EntryOffKey),
		PtrSize:     f.PtrSize, PCQuantum: f.PCQuantum, Functions: len(f.Funcs),
		PclntabBytes: int64(len(f.Pclntab())), Parts: f.Sizes, Assumption: SizeAssumption,
	}
	r.ByteOrder = "little"
	if f.ByteOrder.String() == "BigEndian" {
		r.ByteOrder = "big"
	}
	return r
}

// startPooled starts filling the Set of every pooled variant from tabs,
// each in its own goroutine that wg waits for.
func startPooled(tabs []objscan.Table, wg *sync.WaitGroup) []pooledSet {
	var pooled []pooledSet
	for _, v := range linearpc.Variants() {
		if v.Pooled() {
			pooled = append(pooled, pooledSet{v: v})
		}
	}
	for i := range pooled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pooled[i].fill(tabs)
		}()
	}
	return pooled
}

// digestTables decodes each of d's tables once and digests it in every
// variant of d, filling d.keys. It returns what Compute keeps of each
// table and each worker's shape statistics.
func digestTables(d *digests, workers int) ([]tabInfo, []shapeAcc, error) {
	n := len(d.tabs)
	d.keys = make([]uint64, n*len(d.vs))
	seed := maphash.MakeSeed()
	info := make([]tabInfo, n)
	accs := make([]shapeAcc, workers)
	type scratch struct {
		dc     decoder
		enc    linearpc.Encoder
		consts constSeen
		dg     []linearpc.Digest
	}
	scr := make([]scratch, workers)
	err := par.For(n, workers, func(w, i int) error {
		sc := &scr[w]
		t, err := sc.dc.decode(&d.tabs[i])
		if err != nil {
			return err
		}
		sc.dg = slices.Grow(sc.dg[:0], len(d.vs))[:len(d.vs)]
		sc.enc.Digests(t, d.vs, seed, sc.dg)
		for k, dg := range sc.dg {
			d.keys[i*len(d.vs)+k] = uint64(dg.Len)<<32 | uint64(uint32(dg.Hash))
		}
		info[i] = tabInfo{specLen: sc.dg[0].Len}
		info[i].constDup, info[i].constSave = sc.consts.dedup(&t)
		accs[w].add(&t)
		return nil
	})
	return info, accs, err
}

// chargeTables fills the totals and the per-kind rows, charging a table
// that several functions or kinds share to its first reference.
func (r *Report) chargeTables(f *objscan.File, rt *refTables, info []tabInfo) error {
	var kinds [256]*KindRow
	kindRow := func(k objscan.TableKind) *KindRow {
		if kinds[k] == nil {
			kinds[k] = &KindRow{Kind: f.KindName(k)}
		}
		return kinds[k]
	}
	for k := objscan.KindPCSP; k < objscan.NumNamedKinds; k++ {
		kindRow(k)
	}
	seenOff := make([]bool, len(info))
	seenContent := make([]bool, len(info))
	kindMask := make([]uint32, len(info)) // kinds < 32 that reference each table
	seenKindTab := map[[2]uint32]bool{}   // the rest
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			off := fn.TableOffset(k)
			if off == 0 {
				continue
			}
			ti, ok := rt.index(fi, k)
			if !ok {
				return fmt.Errorf("%s: %v table at %#x is not among the distinct tables", fn.Name, k, off)
			}
			row := kindRow(k)
			row.References++
			r.Tables.References++
			if k < 32 {
				if kindMask[ti]&(1<<k) == 0 {
					kindMask[ti] |= 1 << k
					row.Distinct++
				}
			} else if key := [2]uint32{uint32(k), off}; !seenKindTab[key] {
				seenKindTab[key] = true
				row.Distinct++
			}
			if !seenOff[ti] {
				seenOff[ti] = true
				r.chargeVarint(row, len(f.Tabs[ti].Data), info[ti].specLen)
			}
			if c := info[ti].first; !seenContent[c] {
				seenContent[c] = true
				r.chargeLinear(row, &info[ti])
			}
		}
	}
	r.Tables.Distinct = len(info)
	r.Tables.DeltaBytes = r.Tables.LinearBytes - r.Tables.VarintBytes
	r.Tables.DeltaPercent = pct(r.Tables.DeltaBytes, r.Tables.VarintBytes)
	r.TablesFileDeltaPercent = pct(r.Tables.DeltaBytes, r.FileBytes)
	r.FileDeltaPercent = pct(r.Tables.DeltaBytes+r.OutOfBandBytes, r.FileBytes)
	for _, row := range kinds {
		if row != nil {
			row.DeltaPercent = pct(row.LinearBytes-row.VarintBytes, row.VarintBytes)
			r.Kinds = append(r.Kinds, *row)
		}
	}
	return nil
}

// chargeVarint charges a table's first reference by offset: its varint
// bytes, and its spec encoding to the total without deduplication.
func (r *Report) chargeVarint(row *KindRow, varintLen int, specLen uint32) {
	row.VarintBytes += int64(varintLen)
	r.Tables.VarintBytes += int64(varintLen)
	r.Tables.LinearNoDedup += int64(specLen)
}

// chargeLinear charges the first table with a given spec encoding.
func (r *Report) chargeLinear(row *KindRow, in *tabInfo) {
	row.LinearBytes += int64(in.specLen)
	r.Tables.LinearBytes += int64(in.specLen)
	r.Tables.LinearDistinct++
	r.Tables.ConstChunks += int(in.constDup)
	r.Tables.ConstDedupSave += int64(in.constSave)
}

// contentFirsts sets, for each table, the index of the first table whose
// spec encoding has the same content. Equal keys are confirmed by encoding
// both tables again and comparing the bytes, so the figures are exact.
// Equal encodings have equal keys, so the workers split the tables by key
// and each goes through its share in order.
func contentFirsts(info []tabInfo, d *digests, workers int) {
	vfs := make([]verifier, workers)
	par.For(workers, workers, func(w, _ int) error {
		vf := &vfs[w]
		mine := func(i int) bool { return int(d.key(i, 0)%uint64(workers)) == w }
		n := 0
		for i := range info {
			if mine(i) {
				n++
			}
		}
		vf.seen.reset(n)
		for i := range info {
			if mine(i) {
				info[i].first = vf.seen.add(d.key(i, 0), int32(i), func(j int32) bool {
					return vf.equal(&d.tabs[j], &d.tabs[i], d.vs[0])
				})
			}
		}
		return nil
	})
}

// pooledSet sizes a variant that pools chunks, by filling its Set.
type pooledSet struct {
	v     linearpc.Variant
	bytes int64
	err   error
}

// fill adds every table to a Set of p.v, in order, and records its size.
func (p *pooledSet) fill(tabs []objscan.Table) {
	// Linear encodings take about a fifth more than varint ones: ask for
	// half more, which costs only address space if unused.
	varint := 0
	for i := range tabs {
		varint += len(tabs[i].Data)
	}
	set := linearpc.NewSetSize(p.v, varint*3/2, len(tabs))
	var dc decoder
	for i := range tabs {
		t, err := dc.decode(&tabs[i])
		if err != nil {
			p.err = err
			return
		}
		set.Add(t)
	}
	p.bytes = int64(set.Size())
}

// dedup finds equal encodings by key: an open-addressing hash table of
// table indexes, probed linearly, holding the first table of each distinct
// encoding. Tables with equal keys but different encodings (rare) each
// get a slot. Keys are already hashes, so they are not hashed again.
type dedup struct {
	slots []int32  // table index + 1; 0 is empty
	keys  []uint64 // the key of the table in each slot
	shift uint     // 64 - log2(len(slots))
}

// reset empties d and sizes it for n tables, reusing its storage.
func (d *dedup) reset(n int) {
	size := 1 << bits.Len(uint(max(8, n+n/2))) // load factor at most 2/3
	if len(d.slots) != size {
		d.slots, d.keys = make([]int32, size), make([]uint64, size)
		d.shift = uint(64 - bits.TrailingZeros(uint(size)))
		return
	}
	clear(d.slots)
}

// add returns the first table j added before whose encoding, of key h,
// equals table i's (same(j) confirms equality), or i, which it records,
// if there is none. At most the n tables of the last reset may be added.
func (d *dedup) add(h uint64, i int32, same func(j int32) bool) int32 {
	mask := uint64(len(d.slots) - 1)
	for p := (h * 0x9e3779b97f4a7c15) >> d.shift; ; p = (p + 1) & mask {
		j := d.slots[p] - 1
		if j < 0 {
			d.slots[p], d.keys[p] = i+1, h
			return i
		}
		if d.keys[p] == h && same(j) {
			return j
		}
	}
}

// constSeen is the scratch space of constDedup: the values of the constant
// chunks seen so far in a table, in a slice while few and in a map beyond.
type constSeen struct {
	list []int32
	set  map[int32]bool
}

// manyConsts is the number of constant-chunk values constSeen keeps in its
// list before it switches to a map.
const manyConsts = 32

// seen records v and reports whether it was recorded before.
func (c *constSeen) seen(v int32) bool {
	if c.set != nil {
		if c.set[v] {
			return true
		}
		c.set[v] = true
		return false
	}
	if slices.Contains(c.list, v) {
		return true
	}
	c.list = append(c.list, v)
	if len(c.list) > manyConsts {
		c.set = make(map[int32]bool, 2*manyConsts)
		for _, x := range c.list {
			c.set[x] = true
		}
	}
	return false
}

// dedup counts the chunks of t that constant-chunk dedup shares with an
// earlier constant chunk of the same value, and the bytes they would take
// if each were encoded: n (1 byte), one vlen byte and the value.
func (c *constSeen) dedup(t *pcvalue.Table) (chunks, saved uint32) {
	c.list, c.set = c.list[:0], nil
	forEachChunk(t, linearpc.ChunkUnits, func(start int32, inner []pcvalue.Run) {
		if len(inner) != 0 {
			return
		}
		if c.seen(start) {
			chunks++
			saved += 2 + uint32(width(start))
		}
	})
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

func (a *shapeAcc) add(t *pcvalue.Table) {
	if t.Len == 0 {
		a.zeroLen++
	}
	n := int64((t.Len + linearpc.ChunkUnits - 1) / linearpc.ChunkUnits)
	a.chunks.add(n)
	a.runs.add(int64(len(t.Runs)))
	if n <= 1 {
		a.single++
	}
	forEachChunk(t, linearpc.ChunkUnits, func(start int32, inner []pcvalue.Run) {
		a.changes.add(int64(len(inner)))
		a.widths[widthIndex(start)]++
		// Values after the first are stored relative to the chunk start.
		for _, r := range inner {
			a.widths[widthIndex(r.Value-start)]++
		}
	})
}

func shape(f *objscan.File, rt *refTables, accs []shapeAcc, ntabs int) Shape {
	var s Shape
	var all shapeAcc
	for _, a := range accs {
		all.chunks.merge(&a.chunks)
		all.changes.merge(&a.changes)
		all.runs.merge(&a.runs)
		for i := range all.widths {
			all.widths[i] += a.widths[i]
		}
		all.single += a.single
		all.zeroLen += a.zeroLen
	}
	var fsz []int64
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		fsz = append(fsz, int64(fn.Size))
		var l uint32
		mismatch := false
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			if ti, ok := rt.index(i, k); ok {
				t := &f.Tabs[ti]
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
	s.ChunksPerTable = all.chunks.dist()
	s.ChangesPerChunk = all.changes.dist()
	s.RunsPerTable = all.runs.dist()
	s.ValueWidths = all.widths
	s.ZeroLengthTables = all.zeroLen
	if ntabs > 0 {
		s.SingleChunkShare = float64(all.single) / float64(ntabs)
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

// digestVariants returns the variants Compute digests every table in: the
// spec and, with variants, every variant that does not pool chunks (the
// size of such a variant's Set is the sum of the lengths of its distinct
// standalone encodings).
func digestVariants(variants bool) []linearpc.Variant {
	vs := []linearpc.Variant{linearpc.Spec()}
	if variants {
		for _, v := range linearpc.Variants() {
			if !v.IsSpec() && !v.Pooled() {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// variants sizes every variant other than the spec (whose row is the
// totals) and the hybrid encoding. Compute digested each table in every
// variant that does not pool chunks; such a variant's size is the sum of
// the lengths of its distinct encodings, found by key and confirmed byte
// for byte, exactly what its Set would hold. A pooled variant's Set
// stores chunks that refer to earlier tables, so Compute built it
// (pooled). A table whose spec encoding and length equal an earlier
// table's (info.first) is the same table, which every set would find
// already stored, so it is skipped.
func (r *Report) variants(f *objscan.File, rt *refTables, info []tabInfo, d *digests, pooled []pooledSet, waitPooled func(), workers int) error {
	varint := r.Tables.VarintBytes
	vs := linearpc.Variants()
	rows := make([]VariantRow, len(vs))
	// rep[i] is the first table equal to table i.
	rep := make([]int32, len(f.Tabs))
	nrep := 0
	for i := range f.Tabs {
		rep[i] = int32(i)
		if j := info[i].first; f.Tabs[j].Len == f.Tabs[i].Len {
			rep[i] = j
		}
		if rep[i] == int32(i) {
			nrep++
		}
	}
	// One job per digested variant other than the spec.
	type job struct {
		row, k int // index into rows and into d.vs
		bytes  int64
	}
	var jobs []job
	for i, v := range vs {
		rows[i] = VariantRow{Name: v.Name, Doc: v.Doc, Bytes: r.Tables.LinearBytes}
		if k := slices.IndexFunc(d.vs, func(dv linearpc.Variant) bool { return dv.Name == v.Name }); k > 0 {
			jobs = append(jobs, job{row: i, k: k})
		}
	}
	// The pooled Sets may still be filling: this runs beside them.
	vfs := make([]verifier, workers)
	par.Dynamic(len(jobs), workers, func(w, j int) error {
		jobs[j].bytes = d.distinctBytes(jobs[j].k, rep, nrep, &vfs[w])
		return nil
	})
	waitPooled()
	for i, v := range vs {
		for _, p := range pooled {
			if p.err != nil {
				return p.err
			}
			if p.v.Name == v.Name {
				rows[i].Bytes = p.bytes
			}
		}
	}
	for _, jb := range jobs {
		rows[jb.row].Bytes = jb.bytes
	}
	var bestBytes int64 = -1
	for _, row := range rows {
		row.DeltaPercent = pct(row.Bytes-varint, varint)
		row.FileDeltaPercent = pct(row.Bytes-varint+r.OutOfBandBytes, r.FileBytes)
		r.Variants = append(r.Variants, row)
		if bestBytes < 0 || row.Bytes < bestBytes {
			r.Best, bestBytes = row.Name, row.Bytes
		}
	}
	// Hybrid: the spec set of the tables referenced by a hot kind holds
	// their distinct spec encodings (info.first); a table referenced by a
	// cold kind is stored in varint too.
	hotContent := make([]bool, len(f.Tabs))
	cold := make([]bool, len(f.Tabs))
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			if i, ok := rt.index(fi, k); ok {
				if hotKind(k) {
					hotContent[info[i].first] = true
				} else {
					cold[i] = true
				}
			}
		}
	}
	h := VariantRow{Name: "hybrid", Doc: HybridDoc}
	for i := range f.Tabs {
		if hotContent[i] {
			h.Bytes += int64(info[i].specLen)
		}
		if cold[i] {
			h.Bytes += int64(len(f.Tabs[i].Data))
		}
	}
	h.DeltaPercent = pct(h.Bytes-varint, varint)
	h.FileDeltaPercent = pct(h.Bytes-varint+r.OutOfBandBytes, r.FileBytes)
	r.Hybrid = &h
	r.kindVariants(f, rt, rep, nrep, d, &vfs[0])
	return r.mix(f, rt, rep, d, &vfs[0])
}

// kindVariants fills each kind row's Variants: for every digested variant
// but the spec, the lengths of its distinct encodings (found by key and
// confirmed with vf, as distinctBytes finds them), each charged to the
// kind of its first reference in functab order.
func (r *Report) kindVariants(f *objscan.File, rt *refTables, rep []int32, nrep int, d *digests, vf *verifier) {
	row := map[string]int{}
	for i := range r.Kinds {
		row[r.Kinds[i].Kind] = i
	}
	first := make([]int32, len(f.Tabs))
	seen := make([]bool, len(f.Tabs))
	for k := 1; k < len(d.vs); k++ {
		vf.seen.reset(nrep)
		for i := range f.Tabs {
			if rep[i] == int32(i) {
				first[i] = vf.seen.add(d.key(i, k), int32(i), func(j int32) bool {
					return vf.equal(&d.tabs[j], &d.tabs[i], d.vs[k])
				})
			}
		}
		clear(seen)
		bytes := make([]int64, len(r.Kinds))
		for fi := range f.Funcs {
			fn := &f.Funcs[fi]
			for kind := objscan.KindPCSP; kind < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); kind++ {
				i, ok := rt.index(fi, kind)
				if !ok {
					continue
				}
				if c := first[rep[i]]; !seen[c] {
					seen[c] = true
					bytes[row[f.KindName(kind)]] += int64(d.len(int(c), k))
				}
			}
		}
		for i := range r.Kinds {
			kr := &r.Kinds[i]
			kr.Variants = append(kr.Variants, KindVariant{Name: d.vs[k].Name, Bytes: bytes[i], DeltaPercent: pct(bytes[i]-kr.VarintBytes, kr.VarintBytes)})
		}
	}
}

// MixName and MixDoc name and describe the Mix row.
const (
	MixName = objscan.LinearVarintPCLnName
	MixDoc  = "pcln tables in varint, as the stock linker writes them, and every other kind in " + objscan.LinearVarintPCLnVariant + " (the pctab toolchain's pctab_varln tables; a table used both ways is stored both ways)"
)

// mix sizes the Mix row: the varint bytes of every table a pcln reference
// uses, and a set of objscan.LinearVarintPCLnVariant holding the distinct encodings of the
// tables every other kind uses.
func (r *Report) mix(f *objscan.File, rt *refTables, rep []int32, d *digests, vf *verifier) error {
	k := slices.IndexFunc(d.vs, func(v linearpc.Variant) bool { return v.Name == objscan.LinearVarintPCLnVariant })
	if k < 0 {
		return fmt.Errorf("report: variant %s is not digested", objscan.LinearVarintPCLnVariant)
	}
	ln := make([]bool, len(f.Tabs))
	linear := make([]int32, len(f.Tabs)) // like rep, -1 for tables no other kind uses
	for i := range linear {
		linear[i] = -1
	}
	nlinear := 0
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for kind := objscan.KindPCSP; kind < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); kind++ {
			i, ok := rt.index(fi, kind)
			switch {
			case !ok:
			case kind == objscan.KindPCLn:
				ln[i] = true
			case linear[rep[i]] < 0:
				linear[rep[i]] = rep[i]
				nlinear++
			}
		}
	}
	m := VariantRow{Name: MixName, Doc: MixDoc, Bytes: d.distinctBytes(k, linear, nlinear, vf)}
	for i := range ln {
		if ln[i] {
			m.Bytes += int64(len(f.Tabs[i].Data))
		}
	}
	varint := r.Tables.VarintBytes
	m.DeltaPercent = pct(m.Bytes-varint, varint)
	m.FileDeltaPercent = pct(m.Bytes-varint+r.OutOfBandBytes, r.FileBytes)
	r.Mix = &m
	return nil
}

// distinctBytes returns the sum of the lengths of the distinct encodings
// in variant d.vs[k] of the tables i with rep[i] == i: the size of a Set of
// that variant holding them; there are nrep of them. Equal keys are
// confirmed with vf.
func (d *digests) distinctBytes(k int, rep []int32, nrep int, vf *verifier) int64 {
	dd := &vf.seen
	dd.reset(nrep)
	var size int64
	for i := range d.tabs {
		if rep[i] != int32(i) {
			continue
		}
		j := dd.add(d.key(i, k), int32(i), func(j int32) bool {
			return vf.equal(&d.tabs[j], &d.tabs[i], d.vs[k])
		})
		if j == int32(i) {
			size += int64(d.len(i, k))
		}
	}
	return size
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
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	q := func(p float64) int64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	return Dist{N: len(v), Mean: sum / float64(len(v)), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: v[len(v)-1]}
}

// hist counts non-negative integers for a [Dist] without keeping each one:
// values below histDense are counted by value, larger ones listed.
type hist struct {
	dense []int64 // dense[v] is the number of values v
	big   []int64 // the values >= histDense
	n     int
	sum   int64
}

// histDense bounds the values a hist counts by value.
const histDense = 1 << 12

func (h *hist) add(v int64) {
	h.n++
	h.sum += v
	if v >= histDense {
		h.big = append(h.big, v)
		return
	}
	if int(v) >= len(h.dense) {
		h.dense = append(h.dense, make([]int64, max(int(v)+1, 2*len(h.dense))-len(h.dense))...)
	}
	h.dense[v]++
}

// merge adds o's values to h.
func (h *hist) merge(o *hist) {
	if len(o.dense) > len(h.dense) {
		h.dense = append(h.dense, make([]int64, len(o.dense)-len(h.dense))...)
	}
	for v, c := range o.dense {
		h.dense[v] += c
	}
	h.big = append(h.big, o.big...)
	h.n += o.n
	h.sum += o.sum
}

// dist is [dist] of the values counted: the same figures, since the sum of
// integers is exact in a float64 up to 2^53 whatever the order.
func (h *hist) dist() Dist {
	if h.n == 0 {
		return Dist{}
	}
	slices.Sort(h.big)
	// at returns the value of rank i in ascending order.
	at := func(i int) int64 {
		for v, c := range h.dense {
			if int64(i) < c {
				return int64(v)
			}
			i -= int(c)
		}
		return h.big[i]
	}
	q := func(p float64) int64 { return at(min(h.n-1, int(p*float64(h.n)))) }
	return Dist{N: h.n, Mean: float64(h.sum) / float64(h.n), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: at(h.n - 1)}
}

// refTables finds the table behind each function's table reference without
// a search, from the references objscan lists per table: entry base[fi]+k
// of tab is 1 + the index in f.Tabs of function fi's kind-k table, or 0.
type refTables struct {
	f    *objscan.File
	base []int
	tab  []int32
}

func newRefTables(f *objscan.File) *refTables {
	rt := &refTables{f: f, base: make([]int, len(f.Funcs)+1)}
	for fi := range f.Funcs {
		rt.base[fi+1] = rt.base[fi] + int(objscan.KindPCData) + len(f.Funcs[fi].PCData)
	}
	rt.tab = make([]int32, rt.base[len(f.Funcs)])
	for i := range f.Tabs {
		for _, r := range f.Tabs[i].Refs {
			if j := rt.base[r.Func] + int(r.Kind); j < rt.base[r.Func+1] {
				rt.tab[j] = int32(i) + 1
			}
		}
	}
	return rt
}

// index returns the index in f.Tabs of function fi's table of kind k, as
// f.TableIndex(fn.TableOffset(k)) does.
func (rt *refTables) index(fi int, k objscan.TableKind) (int, bool) {
	off := rt.f.Funcs[fi].TableOffset(k)
	if off == 0 {
		return 0, false
	}
	if j := rt.base[fi] + int(k); j < rt.base[fi+1] {
		if t := rt.tab[j]; t > 0 {
			return int(t - 1), true
		}
	}
	return rt.f.TableIndex(off) // a reference objscan does not list (kinds past 255)
}
