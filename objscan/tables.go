package objscan

import (
	"fmt"
	"math/bits"
	"sort"
)

// radixBits is the digit width of collectTables' radix sort.
const radixBits = 11

// walkTable finds the extent of the varint table at off in pctab: the number
// of bytes it occupies (terminator included), the PC-quantum units it covers,
// and its largest value. It follows the runtime's decoding rules: the value
// starts at -1, and a 0 byte ends the table unless the PC is still at 0.
func walkTable(pctab []byte, off uint32) (n int, length uint32, maxVal int32, err error) {
	if uint64(off) >= uint64(len(pctab)) {
		return 0, 0, 0, formatErr("pctab", int64(off), "table offset past the end of the %d-byte pctab", len(pctab))
	}
	d := pctab[off:]
	p := 0
	val := int32(-1)
	maxVal = -1
	var pc uint64
	uvarint := func() (uint32, error) {
		var v uint32
		for shift := uint(0); ; shift += 7 {
			if p >= len(d) {
				return 0, formatErr("pctab", int64(off)+int64(p), "table at %#x is truncated inside a varint", off)
			}
			b := d[p]
			p++
			if shift == 28 && b > 0x0f {
				return 0, formatErr("pctab", int64(off)+int64(p-1), "table at %#x has a varint that overflows 32 bits", off)
			}
			v |= uint32(b&0x7f) << shift
			if b < 0x80 {
				return v, nil
			}
		}
	}
	for {
		if p >= len(d) {
			return 0, 0, 0, formatErr("pctab", int64(off)+int64(p), "table at %#x has no terminating 0 byte", off)
		}
		// Like runtime.pcvalue, a 0 byte is a value delta while the PC is
		// still at the entry, and the terminator after that.
		if d[p] == 0 && pc != 0 {
			p++
			break
		}
		// Most varints are one byte: read those inline.
		var uv, pd uint32
		if b := d[p]; b < 0x80 {
			uv = uint32(b)
			p++
		} else if uv, err = uvarint(); err != nil {
			return 0, 0, 0, err
		}
		val += int32(-(uv & 1) ^ (uv >> 1))
		maxVal = max(maxVal, val)
		if p < len(d) && d[p] < 0x80 {
			pd = uint32(d[p])
			p++
		} else if pd, err = uvarint(); err != nil {
			return 0, 0, 0, err
		}
		pc += uint64(pd)
		if pc > 1<<32-1 {
			return 0, 0, 0, formatErr("pctab", int64(off)+int64(p), "table at %#x covers more than 2^32 PC units", off)
		}
	}
	return p, uint32(pc), maxVal, nil
}

// collectTables builds the set of distinct tables, keyed by pctab offset.
func (f *File) collectTables() error {
	if f.Linear != nil { // rewrite-binary replace mode: linear tables (linear.go)
		return f.collectLinear()
	}
	// Gather every reference, sort by offset (keeping functab order within
	// an offset), then cut Tabs and their Refs out of two flat arrays. This
	// allocates a handful of slices instead of one per table.
	type rec struct {
		off  uint32
		fn   int32
		kind TableKind
	}
	nrecs := 0
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for k := KindPCSP; k < KindPCData+TableKind(len(fn.PCData)); k++ {
			if fn.TableOffset(k) != 0 {
				nrecs++
			}
			if k == 255 {
				break
			}
		}
	}
	recs := make([]rec, 0, nrecs)
	for fi := range f.Funcs {
		fn := &f.Funcs[fi]
		for k := KindPCSP; k < KindPCData+TableKind(len(fn.PCData)); k++ {
			if off := fn.TableOffset(k); off != 0 {
				recs = append(recs, rec{off, int32(fi), k})
			}
			if k == 255 {
				break
			}
		}
	}
	// By offset, keeping functab order within an offset: a least
	// significant digit radix sort, which is stable, in as few passes of
	// radixBits as the largest offset needs.
	var maxOff uint32
	for _, r := range recs {
		maxOff = max(maxOff, r.off)
	}
	tmp := make([]rec, len(recs))
	var count [1 << radixBits]int
	for shift := 0; shift < bits.Len32(maxOff); shift += radixBits {
		clear(count[:])
		for _, r := range recs {
			count[r.off>>shift&(1<<radixBits-1)]++
		}
		pos := 0
		for d, c := range count {
			count[d] = pos
			pos += c
		}
		for _, r := range recs {
			d := r.off >> shift & (1<<radixBits - 1)
			tmp[count[d]] = r
			count[d]++
		}
		recs, tmp = tmp, recs
	}
	refs := make([]Ref, len(recs))
	ntabs := 0
	for i := range recs {
		refs[i] = Ref{Func: recs[i].fn, Kind: recs[i].kind}
		if i == 0 || recs[i].off != recs[i-1].off {
			ntabs++
		}
	}
	f.Tabs = make([]Table, 0, ntabs)
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].off == recs[i].off {
			j++
		}
		off := recs[i].off
		n, length, maxVal, err := walkTable(f.pctab, off)
		if err != nil {
			return fmt.Errorf("%s table of %s: %w", recs[i].kind, f.Funcs[recs[i].fn].Name, err)
		}
		f.Tabs = append(f.Tabs, Table{Offset: off, Data: f.pctab[off : int(off)+n : int(off)+n], Len: length, MaxVal: maxVal, Refs: refs[i:j:j]})
		bytes := uint64(length) * uint64(f.PCQuantum)
		for _, r := range refs[i:j] {
			fn := &f.Funcs[r.Func]
			if err := f.checkExtent(fn, r.Kind, off, bytes); err != nil {
				return err
			}
			fn.Size = max(fn.Size, bytes)
		}
		i = j
	}
	return nil
}

// checkExtent rejects a table that covers more code than its function
// has: past the next function's entry, or past the end of the code section
// that holds the function (when the file's sections are known). Everything
// downstream (reports, verification, flat tables, lookups) works in
// proportion to a table's length, so a few hostile bytes claiming 2^32 PCs
// must stop here.
func (f *File) checkExtent(fn *Func, kind TableKind, off uint32, bytes uint64) error {
	if extent := fn.End - fn.Entry; bytes > extent {
		return formatErr("pctab", int64(off), "%s table of %s covers %d bytes of code, past the function's extent of %d bytes (entry %#x, next entry %#x)", kind, fn.Name, bytes, extent, fn.Entry, fn.End)
	}
	if f.im == nil || len(f.im.sections) == 0 {
		return nil
	}
	s := f.im.sectionAt(fn.Entry)
	if s == nil || !s.exec {
		return nil // code outside any executable section is for the caller to judge (rewritten or stripped layouts)
	}
	if end := s.addr + s.filesize; bytes > end-fn.Entry {
		return formatErr("pctab", int64(off), "%s table of %s covers %d bytes of code from entry %#x, past the end %#x of section %s", kind, fn.Name, bytes, fn.Entry, end, s.name)
	}
	return nil
}

// Table returns the distinct table at pctab offset off, or nil.
func (f *File) Table(off uint32) *Table {
	if i, ok := f.TableIndex(off); ok {
		return &f.Tabs[i]
	}
	return nil
}

// TableOffset returns the pctab offset of fn's table of the given kind, or 0
// if fn has none.
func (fn *Func) TableOffset(kind TableKind) uint32 {
	switch kind {
	case KindPCSP:
		return fn.PCSP
	case KindPCFile:
		return fn.PCFile
	case KindPCLn:
		return fn.PCLn
	}
	if id := int(kind - KindPCData); kind >= KindPCData && id < len(fn.PCData) {
		return fn.PCData[id]
	}
	return 0
}

// PCTab returns the raw pctab: table offsets index into it.
func (f *File) PCTab() []byte { return f.pctab }

// Pclntab returns the raw pclntab bytes, from the pcHeader on.
func (f *File) Pclntab() []byte { return f.pcln }

// TableIndex returns the index in Tabs of the table at pctab offset off.
func (f *File) TableIndex(off uint32) (int, bool) {
	i, j := 0, len(f.Tabs) // the first table at or after off is in [i, j]
	for i < j {
		h := int(uint(i+j) >> 1)
		if f.Tabs[h].Offset < off {
			i = h + 1
		} else {
			j = h
		}
	}
	if off == 0 || i == len(f.Tabs) || f.Tabs[i].Offset != off {
		return 0, false
	}
	return i, true
}

// CodeSection is an executable section of a binary: its file bytes at its
// virtual address.
type CodeSection struct {
	Name string
	Addr uint64
	Data []byte
}

// Code reads the binary's executable sections that have file data, in
// address order, for disassembly. It reads through the file f was opened
// from, so f must not be closed yet.
func (f *File) Code() ([]CodeSection, error) {
	size := f.FileSize
	if size == 0 {
		size = 1<<63 - 1
	}
	var out []CodeSection
	for i := range f.im.sections {
		s := &f.im.sections[i]
		if !s.exec {
			continue
		}
		d, err := s.data(size)
		if err != nil {
			return nil, fmt.Errorf("objscan: reading code: %w", err)
		}
		out = append(out, CodeSection{Name: s.name, Addr: s.addr, Data: d})
	}
	if len(out) == 0 {
		return nil, formatErr(f.Format, -1, "no executable section with file data")
	}
	return out, nil
}

// CodeAt returns the bytes of [lo, hi) from the section of secs that holds
// lo, clipped to that section, or nil if no section holds lo. secs must be
// in address order, as Code returns them.
func CodeAt(secs []CodeSection, lo, hi uint64) []byte {
	i := sort.Search(len(secs), func(i int) bool { return secs[i].Addr+uint64(len(secs[i].Data)) > lo })
	if i == len(secs) || secs[i].Addr > lo || hi < lo {
		return nil
	}
	s := &secs[i]
	end := min(hi, s.Addr+uint64(len(s.Data)))
	return s.Data[lo-s.Addr : end-s.Addr]
}
