package rewrite

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/pctab/pctab/objscan"
)

// span maps a range of old addresses (or offsets) to new ones. With
// interior set, every address in [oldStart, oldEnd] moves by the same amount;
// otherwise only the range's start and end can be mapped, because the bytes
// inside were re-encoded.
type span struct {
	name             string
	oldStart, oldEnd uint64
	newStart, newEnd uint64
	interior         bool
}

// remap maps old addresses to new ones through a list of spans.
type remap []span

// addr returns the new address of old address v, and whether v lies in one
// of the spans. It fails (ok but err != nil) for an address inside a span
// whose bytes were re-encoded.
func (m remap) addr(v uint64) (nv uint64, in bool, err error) {
	for _, s := range m {
		if v >= s.oldStart && v < s.oldEnd {
			if v == s.oldStart {
				return s.newStart, true, nil
			}
			if !s.interior {
				return 0, true, fmt.Errorf("address %#x lies inside the re-encoded %s (%#x..%#x)", v, s.name, s.oldStart, s.oldEnd)
			}
			return s.newStart + (v - s.oldStart), true, nil
		}
	}
	for _, s := range m {
		if v == s.oldEnd && s.oldEnd > s.oldStart {
			return s.newEnd, true, nil
		}
	}
	return v, false, nil
}

// shift returns m with every span's old and new addresses moved by the
// given bases (offsets within a pclntab to addresses).
func (m remap) shift(oldBase, newBase uint64) remap {
	out := make(remap, len(m))
	for i, s := range m {
		s.oldStart += oldBase
		s.oldEnd += oldBase
		s.newStart += newBase
		s.newEnd += newBase
		out[i] = s
	}
	return out
}

// pclnHeader holds the Go 1.20 pcHeader fields.
type pclnHeader struct {
	nfunc, nfiles, textStart                          uint64
	funcnameOff, cuOff, filetabOff, pctabOff, pclnOff uint64
}

// newPclntab is a replace-mode pclntab and the account of its parts.
type newPclntab struct {
	data  []byte
	remap remap // offsets in the old pclntab -> offsets in the new one

	// Sizes of the parts that change, old and new. Spans run from a part's
	// start to the next part's start, alignment padding included.
	oldHeader, newHeader   int64
	oldPCTab, newPCTab     int64
	oldFuncTab, newFuncTab int64
	newTailPad             int64 // padding added after the functab to keep the funcdata's alignment
	oldTail                int64 // go:func.* and findfunctab (and the old padding before them): copied unchanged

	// A pclntab converted from a Go 1.2-1.17 layout (convertPclntab):
	// the old layout's name, its names-and-files part, the start of its
	// old pctab and functab, the moduledata slice lengths it changes (by
	// offset in the old pclntab), and the inline tree name offsets to
	// rewrite outside the pclntab.
	converted                      string
	oldFtab, newFtab, newRecords   int64 // the ftab, and the records as they would be without the length field
	oldNames, newNames             int64
	oldPCTabStart, oldFuncTabStart uint64
	lenFixOff                      map[uint64][2]uint64
	inlPatches                     []inlPatch
}

// buildPclntab builds the replace-mode pclntab of f (see objscan's
// linear.go for the format): the pcHeader gets objscan.LinearMagic and the
// variant name, the pctab holds the linear tables, and every _func record
// gets its function's length in PC units after nfuncdata. Function names,
// the CU and file tables, the funcdata (go:func.*) and findfunctab are copied
// unchanged. tailAlign is the alignment the part after the functab (the
// funcdata) keeps: its offset in the new table is congruent to the old one
// modulo tailAlign.
func buildPclntab(f *objscan.File, lt *linearTables, tailAlign uint64) (*newPclntab, error) {
	// The Go 1.18-1.19 layout differs from Go 1.20's only in the _func
	// record, which lacks startLine: its records are written in the Go 1.20
	// layout with startLine 0 (objscan's linear layout is Go 1.20's). Older
	// layouts, with absolute entry PCs and funcdata pointers, are converted.
	switch f.Magic {
	case objscan.Go12Magic, objscan.Go116Magic:
		return convertPclntab(f, lt)
	case objscan.Go120Magic, objscan.Go118Magic:
	default:
		return nil, fmt.Errorf("replace mode reads the Go 1.2+ pclntab layouts (magics %#x, %#x, %#x, %#x); this binary's magic is %#x", objscan.Go12Magic, objscan.Go116Magic, objscan.Go118Magic, objscan.Go120Magic, f.Magic)
	}
	startLine := f.Magic == objscan.Go120Magic // the records have a startLine field
	old := f.Pclntab()[:pclntabLen(f)]
	o := f.ByteOrder
	ps := uint64(f.PtrSize)
	word := func(b []byte, off uint64) uint64 {
		if ps == 4 {
			return uint64(o.Uint32(b[off:]))
		}
		return o.Uint64(b[off:])
	}
	putWord := func(b []byte, off, v uint64) {
		if ps == 4 {
			o.PutUint32(b[off:], uint32(v))
		} else {
			o.PutUint64(b[off:], v)
		}
	}
	hdrEnd := 8 + 8*ps
	if uint64(len(old)) < hdrEnd {
		return nil, fmt.Errorf("pclntab of %d bytes is shorter than its header", len(old))
	}
	var h pclnHeader
	fields := []*uint64{&h.nfunc, &h.nfiles, &h.textStart, &h.funcnameOff, &h.cuOff, &h.filetabOff, &h.pctabOff, &h.pclnOff}
	for i, p := range fields {
		*p = word(old, 8+uint64(i)*ps)
	}
	n := uint64(len(old))
	if h.nfunc != uint64(len(f.Funcs)) || !(hdrEnd <= h.funcnameOff && h.funcnameOff <= h.cuOff && h.cuOff <= h.filetabOff &&
		h.filetabOff <= h.pctabOff && h.pctabOff <= h.pclnOff && h.pclnOff <= n) {
		return nil, fmt.Errorf("pcHeader fields are inconsistent (nfunc %d for %d functions, offsets %#x %#x %#x %#x %#x in %d bytes)",
			h.nfunc, len(f.Funcs), h.funcnameOff, h.cuOff, h.filetabOff, h.pctabOff, h.pclnOff, n)
	}
	if h.funcnameOff%ps != 0 || h.pctabOff%ps != 0 || h.pclnOff%ps != 0 {
		return nil, fmt.Errorf("pclntab parts are not %d-byte aligned", ps)
	}
	if f.Sizes.FuncTab < 0 {
		return nil, fmt.Errorf("functab size %d is negative", f.Sizes.FuncTab)
	}
	oldTail := h.pclnOff + uint64(f.Sizes.FuncTab)
	if oldTail < h.pclnOff || oldTail > n {
		return nil, fmt.Errorf("functab ends at %#x, past the %d-byte pclntab", oldTail, n)
	}

	np := &newPclntab{}
	out := make([]byte, 0, n+uint64(len(lt.data))-(h.pclnOff-h.pctabOff)+8*uint64(len(f.Funcs))+tailAlign+64)
	// pcHeader, then the variant name.
	out = append(out, old[:hdrEnd]...)
	out = lt.markHeader(out, o)
	newHdrEnd := uint64(len(out))
	// Function names, CU table and file table, unchanged.
	shift := newHdrEnd - h.funcnameOff
	out = append(out, old[h.funcnameOff:h.pctabOff]...)
	// The linear pctab.
	newPctab := uint64(len(out))
	out = append(out, lt.data...)
	out = appendZeros(out, alignUp(uint64(len(out)), ps))
	newPcln := uint64(len(out))
	// The functab: ftab, then the _func records, each aligned to the
	// pointer size as cmd/link's calculateFunctabSize does.
	nfunc := uint64(len(f.Funcs))
	if oldTail-h.pclnOff < nfunc*8+4 {
		return nil, fmt.Errorf("ftab of %d functions runs past the functab", nfunc)
	}
	ft := make([]byte, nfunc*8+4, oldTail-h.pclnOff+8*nfunc)
	copy(ft, old[h.pclnOff:]) // entryoffs, and the end offset after them
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		recOff := h.pclnOff + uint64(fn.Offset)
		fixed := uint64(44) // the Go 1.20 _func, up to nfuncdata
		if !startLine {
			fixed = 40
		}
		npc, nfd := uint64(len(fn.PCData)), uint64(len(fn.FuncData))
		recLen := fixed + 4*npc + 4*nfd
		if recOff > n || n-recOff < recLen {
			return nil, fmt.Errorf("function %s: _func record at %#x runs past the pclntab", fn.Name, recOff)
		}
		rec := old[recOff : recOff+recLen]
		if got := uint64(o.Uint32(rec[28:])); got != npc {
			return nil, fmt.Errorf("function %s: npcdata %d, objscan read %d", fn.Name, got, npc)
		}
		ft = appendZeros(ft, alignUp(uint64(len(ft)), ps))
		if uint64(len(ft)) > 1<<32-1 {
			return nil, fmt.Errorf("the new functab is too large for 32-bit record offsets")
		}
		o.PutUint32(ft[8*i+4:], uint32(len(ft)))
		r := len(ft)
		if startLine {
			ft = append(ft, rec[:fixed]...)
		} else {
			ft = append(ft, rec[:36]...) // up to cuOffset
			ft = appendU32(ft, o, 0)     // startLine, unknown before Go 1.20
			ft = append(ft, rec[36:40]...)
		}
		offs := lt.offs[i]
		o.PutUint32(ft[r+16:], offs[0])
		o.PutUint32(ft[r+20:], offs[1])
		o.PutUint32(ft[r+24:], offs[2])
		if !lt.derived {
			ft = appendU32(ft, o, lt.funcLen[i]) // at objscan.LinearFuncLenOffset
		}
		for _, off := range offs[3:] {
			ft = appendU32(ft, o, off)
		}
		ft = append(ft, rec[fixed+4*npc:]...) // funcdata offsets
	}
	if lt.derived {
		// The end of the text, where the next record's entryOff would be.
		ft = appendZeros(ft, alignUp(uint64(len(ft)), ps))
		ft = appendU32(ft, o, o.Uint32(ft[8*nfunc:]))
	}
	out = append(out, ft...)
	newRecsEnd := uint64(len(out))
	// go:func.* and findfunctab, at the same offset modulo tailAlign.
	newTail := newRecsEnd + (oldTail%tailAlign+tailAlign-newRecsEnd%tailAlign)%tailAlign
	out = appendZeros(out, newTail)
	out = append(out, old[oldTail:]...)

	// Header offsets.
	putWord(out, 8+3*ps, newHdrEnd)
	putWord(out, 8+4*ps, h.cuOff+shift)
	putWord(out, 8+5*ps, h.filetabOff+shift)
	putWord(out, 8+6*ps, newPctab)
	putWord(out, 8+7*ps, newPcln)

	np.data = out
	np.remap = remap{
		{name: "pcHeader", oldStart: 0, oldEnd: hdrEnd, newStart: 0, newEnd: newHdrEnd},
		{name: "funcnametab, cutab and filetab", oldStart: h.funcnameOff, oldEnd: h.pctabOff, newStart: newHdrEnd, newEnd: newPctab, interior: true},
		{name: "pctab", oldStart: h.pctabOff, oldEnd: h.pclnOff, newStart: newPctab, newEnd: newPcln},
		{name: "functab", oldStart: h.pclnOff, oldEnd: oldTail, newStart: newPcln, newEnd: newRecsEnd},
		{name: "funcdata and findfunctab", oldStart: oldTail, oldEnd: n, newStart: newTail, newEnd: uint64(len(out)), interior: true},
	}
	np.oldHeader, np.newHeader = int64(h.funcnameOff), int64(newHdrEnd)
	np.oldPCTab, np.newPCTab = int64(h.pclnOff-h.pctabOff), int64(newPcln-newPctab)
	np.oldFuncTab, np.newFuncTab = int64(oldTail-h.pclnOff), int64(newRecsEnd-newPcln)
	np.oldTail = int64(n - oldTail)
	np.newTailPad = int64(newTail - newRecsEnd)
	return np, nil
}

// appendU32 appends v in byte order o.
func appendU32(b []byte, o binary.ByteOrder, v uint32) []byte {
	var w [4]byte
	o.PutUint32(w[:], v)
	return append(b, w[:]...)
}

// appendZeros appends zero bytes to b until it is n bytes long.
func appendZeros(b []byte, n uint64) []byte {
	for uint64(len(b)) < n {
		b = append(b, 0)
	}
	return b
}

// pclntabLen returns how many bytes of f.Pclntab() belong to the table.
// objscan knows the exact extent of a table it found by section or by
// symbols; one found by scanning for its magic (a stripped PE file) runs
// to the end of its section, over whatever follows (typelinks and
// itablinks). For a Go 1.18+ table the real end is then derived as the
// linker lays it out: findfunctab after the funcdata, when go:func.* is
// inside the table (Go 1.26), else the end of the functab.
func pclntabLen(f *objscan.File) uint64 {
	n := uint64(len(f.Pclntab()))
	if !strings.HasPrefix(f.PclntabSource, "magic scan") || f.Magic != objscan.Go120Magic && f.Magic != objscan.Go118Magic || uint64(len(f.Pclntab())) < 8+8*uint64(f.PtrSize) {
		return n
	}
	h := pclnHeaderOf(f)
	end := h.pclnOff + uint64(f.Sizes.FuncTab)
	if g := f.GoFuncAddr; g > f.PclntabAddr && g < f.PclntabAddr+n && f.Sizes.FuncData >= 0 {
		end = max(end, g-f.PclntabAddr+uint64(f.Sizes.FuncData)+uint64(f.Sizes.FindFuncTab))
	}
	return min(n, end)
}

// markHeader writes the linear magic (plain or derived) over the magic of
// the pcHeader at the start of out and appends the variant name after the
// header, which must end out.
func (lt *linearTables) markHeader(out []byte, o binary.ByteOrder) []byte {
	magic := uint32(objscan.LinearMagic)
	if lt.derived {
		magic = objscan.LinearDerivedMagic
	}
	o.PutUint32(out, magic)
	var name [objscan.LinearVariantLen]byte
	copy(name[:], lt.name())
	return append(out, name[:]...)
}
