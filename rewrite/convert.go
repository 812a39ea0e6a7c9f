package rewrite

import (
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// inlPatch is a uint32 replace mode writes outside the pclntab: the
// nameOff field of an inline tree entry, at an address of the input.
type inlPatch struct {
	addr uint64
	val  uint32
}

// convertPclntab builds the replace-mode pclntab of a binary whose pclntab
// has the Go 1.2-1.15 (objscan.Go12Magic) or Go 1.16-1.17
// (objscan.Go116Magic) layout. objscan's linear format is Go 1.20's
// layout, so the old one is converted:
//
//   - Entry PCs become offsets from moduledata.text, which the pcHeader's
//     textStart word also holds: the ftab's (entry, funcoff) pairs of two
//     pointers become two uint32s, and _func.entry becomes entryOff.
//   - Funcdata pointers become uint32 offsets from the same text start
//     (the text precedes the read-only data that holds the funcdata in
//     every Go layout; objscan reads the base back as GoFuncAddr); absent
//     funcdata (nil) become objscan.NoFuncData.
//   - The _func records get Go 1.20's layout, startLine 0 (unknown before
//     Go 1.20).
//   - Go 1.16-1.17: the function names, CU and file tables are copied,
//     and the header gains the textStart word.
//   - Go 1.2-1.15, whose names and file names are strings anywhere in the
//     pclntab and whose pcfile values index one global file table: a
//     funcnametab of the function names and of the names the inline trees
//     use, a filetab of the file names, and one compilation unit whose cutab
//     maps file number i to file i (entry 0, the old table's count, is
//     ^uint32(0)), so that every pcfile value and inline tree file number
//     names the same file. Both tables hold each string of the old table
//     once (nameTable), and nfiles counts the filetab's strings. The
//     inline trees, which stay in the read-only data in the release's
//     format, get their name offsets rewritten to index the new
//     funcnametab (the patches returned in np.inlPatches).
//
// The funcdata, findfunctab and inline trees of these releases are
// outside the pclntab and keep their addresses.
func convertPclntab(f *objscan.File, lt *linearTables) (*newPclntab, error) {
	old := f.Pclntab()
	o := f.ByteOrder
	ps := uint64(f.PtrSize)
	n := uint64(len(old))
	word := func(off uint64) uint64 {
		if ps == 4 {
			return uint64(o.Uint32(old[off:]))
		}
		return o.Uint64(old[off:])
	}
	// The funcdata keep the release's format, which objscan reads back
	// by the release the build info (or runtime.buildVersion) names.
	if m := f.GoMinor(); f.Magic == objscan.Go12Magic && (m < 2 || m > 15) || f.Magic == objscan.Go116Magic && m != 16 && m != 17 {
		return nil, fmt.Errorf("the release that wrote the %s pclntab is unknown (the build info and runtime.buildVersion give %q): a converted table keeps the release's funcdata and inline tree format, which readers tell by the version", f.Version, f.GoVersion)
	}
	text, ok := f.ModuleText()
	if !ok {
		return nil, fmt.Errorf("no moduledata points at the %s pclntab at %#x (Go 1.2-1.4 have none): the text start that entry PCs become offsets from is unknown", f.Version, f.PclntabAddr)
	}
	nfunc := uint64(len(f.Funcs))
	if nfunc == 0 {
		return nil, fmt.Errorf("the %s pclntab has no functions", f.Version)
	}
	// Entries and funcdata become uint32 offsets from text.
	rel := func(what string, fn *objscan.Func, v uint64) (uint32, error) {
		if v < text || v-text >= objscan.NoFuncData {
			return 0, fmt.Errorf("function %s: %s %#x is not within 4 GiB above the text start %#x", fn.Name, what, v, text)
		}
		return uint32(v - text), nil
	}
	if _, err := rel("end", &f.Funcs[nfunc-1], f.Funcs[nfunc-1].End); err != nil {
		return nil, err
	}

	np := &newPclntab{}
	hdrEnd := 8 + 8*ps // Go 1.20's pcHeader
	out := make([]byte, hdrEnd, n+uint64(len(lt.data))+16*nfunc+64)
	copy(out, old[:8])
	out = lt.markHeader(out, o)
	newHdrEnd := uint64(len(out))

	// Function names, CU and file tables; each function's name offset.
	var cuOff, filetabOff, nfiles uint64
	nameOffs := make([]uint32, nfunc)
	var oldHdr, oldNamesEnd uint64 // Go 1.16: the header's size, the end of the copied tables
	switch f.Magic {
	case objscan.Go116Magic:
		oldHdr = 8 + 7*ps
		if n < oldHdr {
			return nil, fmt.Errorf("pclntab of %d bytes is shorter than its Go 1.16 header", n)
		}
		h := make([]uint64, 7) // nfunc, nfiles, funcnameOffset, cuOffset, filetabOffset, pctabOffset, pclnOffset
		for i := range h {
			h[i] = word(8 + uint64(i)*ps)
		}
		if h[0] != nfunc || !(oldHdr <= h[2] && h[2] <= h[3] && h[3] <= h[4] && h[4] <= h[5] && h[5] <= h[6] && h[6] <= n) {
			return nil, fmt.Errorf("Go 1.16 pcHeader fields are inconsistent (nfunc %d for %d functions, offsets %#x %#x %#x %#x %#x in %d bytes)", h[0], nfunc, h[2], h[3], h[4], h[5], h[6], n)
		}
		nfiles = h[1]
		cuOff = newHdrEnd + h[3] - h[2]
		filetabOff = newHdrEnd + h[4] - h[2]
		out = append(out, old[h[2]:h[5]]...)
		oldNamesEnd = h[5]
		np.remap = append(np.remap, span{name: "pcHeader", oldStart: 0, oldEnd: oldHdr, newStart: 0, newEnd: newHdrEnd},
			span{name: "funcnametab, cutab and filetab", oldStart: h[2], oldEnd: h[5], newStart: newHdrEnd, newEnd: uint64(len(out)), interior: true})
		np.lenFixOff = map[uint64][2]uint64{}
		// The names are copied: each function keeps its name offset.
		for i := range f.Funcs {
			nameOffs[i] = f.Funcs[i].NameOff
		}
		np.oldPCTabStart, np.oldFuncTabStart = h[5], h[6]
	case objscan.Go12Magic:
		var err error
		if out, err = convertGo12Names(f, out, newHdrEnd, nameOffs, np); err != nil {
			return nil, err
		}
		// One compilation unit: file number i is file i of the old table.
		files := max(f.Files, 1)
		if out, cuOff, filetabOff, nfiles, err = convertGo12Files(f, out); err != nil {
			return nil, err
		}
		// The old functab (with the file table offset after it) and file
		// table move to the new functab and cutab, which moduledata's ftab
		// and filetab slices point at; moduledata.pclntable spans the
		// whole table.
		oldFtab := 8 + ps
		ftabEnd := oldFtab + (2*nfunc+1)*ps
		oldFiletab := uint64(o.Uint32(old[ftabEnd:])) // objscan has read and bounded it
		np.remap = append(np.remap,
			span{name: "ftab", oldStart: oldFtab, oldEnd: ftabEnd + 4},
			span{name: "file table", oldStart: oldFiletab, oldEnd: oldFiletab + 4*uint64(files), newStart: cuOff, newEnd: filetabOff})
		oldHdr = 8 + ps
		np.oldFuncTabStart = oldFtab
	default:
		return nil, fmt.Errorf("internal error: convertPclntab called for the %s layout", f.Version)
	}
	if uint64(len(out)) > 1<<32-1 {
		return nil, fmt.Errorf("the new name and file tables take more than 4 GiB")
	}
	tabsEnd := uint64(len(out))
	out = appendZeros(out, alignUp(uint64(len(out)), ps))
	newPctab := uint64(len(out))
	out = append(out, lt.data...)
	out = appendZeros(out, alignUp(uint64(len(out)), ps))
	newPcln := uint64(len(out))

	// The functab: ftab of uint32 pairs, then the Go 1.20 records.
	ft := make([]byte, nfunc*8+4, nfunc*64)
	var oldRecords uint64
	noLen := nfunc*8 + 4 // the functab's size as it would be without the length field
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		entry, err := rel("entry", fn, fn.Entry)
		if err != nil {
			return nil, err
		}
		npc, nfd := len(fn.PCData), len(fn.FuncData)
		if nfd > 255 {
			return nil, fmt.Errorf("function %s: %d funcdata do not fit Go 1.20's uint8 nfuncdata", fn.Name, nfd)
		}
		ft = appendZeros(ft, alignUp(uint64(len(ft)), ps))
		if uint64(len(ft)) > 1<<32-1 {
			return nil, fmt.Errorf("the new functab is too large for 32-bit record offsets")
		}
		o.PutUint32(ft[8*i:], entry)
		o.PutUint32(ft[8*i+4:], uint32(len(ft)))
		offs := lt.offs[i]
		cu := fn.CUOffset
		if f.Magic == objscan.Go12Magic {
			cu = 0 // the one compilation unit
		}
		for _, v := range []uint32{entry, nameOffs[i], uint32(fn.Args), fn.Deferreturn, offs[0], offs[1], offs[2], uint32(npc), cu, 0} {
			ft = appendU32(ft, o, v) // entryOff ... cuOffset, startLine
		}
		ft = append(ft, fn.FuncID, fn.Flag, 0, uint8(nfd))
		if !lt.derived {
			ft = appendU32(ft, o, lt.funcLen[i]) // at objscan.LinearFuncLenOffset
		}
		for _, off := range offs[3:] {
			ft = appendU32(ft, o, off)
		}
		for _, p := range fn.FuncData {
			v := uint32(objscan.NoFuncData)
			if p != 0 {
				if v, err = rel("funcdata", fn, p); err != nil {
					return nil, err
				}
			}
			ft = appendU32(ft, o, v)
		}
		noLen = alignUp(noLen, ps) + 44 + 4*uint64(npc+nfd)
		// The old record: entry, seven or eight 4-byte fields, the pcdata
		// array, then pointer-aligned funcdata pointers.
		rec := ps + 32 + 4*uint64(npc)
		if f.Magic == objscan.Go116Magic {
			rec += 4 // cuOffset
		}
		oldRecords += alignUp(rec, ps) + ps*uint64(nfd)
	}
	end, _ := rel("end", &f.Funcs[nfunc-1], f.Funcs[nfunc-1].End)
	o.PutUint32(ft[8*nfunc:], end)
	if lt.derived {
		ft = appendZeros(ft, alignUp(uint64(len(ft)), ps))
		ft = appendU32(ft, o, end)
	}
	out = append(out, ft...)
	newRecsEnd := uint64(len(out))

	// Header words.
	putWord := func(off, v uint64) {
		if ps == 4 {
			o.PutUint32(out[off:], uint32(v))
		} else {
			o.PutUint64(out[off:], v)
		}
	}
	for i, v := range []uint64{nfunc, nfiles, text, newHdrEnd, cuOff, filetabOff, newPctab, newPcln} {
		putWord(8+uint64(i)*ps, v)
	}

	np.data = out
	np.newFtab, np.newRecords = int64(8*nfunc+4), int64(noLen-(8*nfunc+4))
	np.oldFtab = int64((2*nfunc + 1) * ps)
	if f.Magic == objscan.Go12Magic {
		np.oldFtab += 4 // the file table's offset
	}
	np.newHeader = int64(newHdrEnd)
	np.newPCTab = int64(newPcln - newPctab)
	np.newFuncTab = int64(newRecsEnd - newPcln)
	np.newNames = int64(newPctab - newHdrEnd)
	np.oldHeader = int64(oldHdr)
	switch f.Magic {
	case objscan.Go116Magic:
		np.oldPCTab = int64(np.oldFuncTabStart - oldNamesEnd)
		np.oldFuncTab = int64(n - np.oldFuncTabStart)
		np.oldNames = int64(oldNamesEnd - oldHdr)
		np.newNames = int64(tabsEnd - newHdrEnd) // copied: the same size
		np.newPCTab = int64(newPcln - tabsEnd)
		np.remap = append(np.remap,
			span{name: "pctab", oldStart: oldNamesEnd, oldEnd: np.oldFuncTabStart, newStart: newPctab, newEnd: newPcln},
			span{name: "functab", oldStart: np.oldFuncTabStart, oldEnd: n, newStart: newPcln, newEnd: newRecsEnd})
		np.lenFixOff[oldNamesEnd] = [2]uint64{uint64(np.oldPCTab), newPcln - newPctab}
		np.lenFixOff[np.oldFuncTabStart] = [2]uint64{uint64(np.oldFuncTab), uint64(np.newFuncTab)}
	case objscan.Go12Magic:
		// The varint tables, the records and the ftab are what the old
		// table held besides the header; the rest was names, file names,
		// the file table and alignment.
		np.oldPCTab = lt.varintBytes
		np.oldFuncTab = int64((2*nfunc+1)*ps+4) + int64(oldRecords)
		np.oldNames = int64(n) - np.oldHeader - np.oldPCTab - np.oldFuncTab
		if np.oldNames < 0 {
			return nil, fmt.Errorf("the Go 1.2 pclntab's %d bytes are fewer than its header, tables and records (%d)", n, np.oldHeader+np.oldPCTab+np.oldFuncTab)
		}
		np.remap[0].newStart, np.remap[0].newEnd = newPcln, newPcln+8*nfunc+4
		np.remap = append(np.remap, span{name: "pclntab", oldStart: 0, oldEnd: n, newStart: 0, newEnd: uint64(len(out))})
		np.lenFixOff = map[uint64][2]uint64{0: {n, uint64(len(out))}}
	}
	np.converted = f.Version
	return np, nil
}

// convertParts itemizes the size change of a converted pclntab (see
// pclnParts).
func convertParts(f *objscan.File, lt *linearTables, np *newPclntab) []Part {
	ps := uint64(f.PtrSize)
	magic := map[bool]uint32{false: objscan.LinearMagic, true: objscan.LinearDerivedMagic}[lt.derived]
	names := Part{Name: "function names, CU and file tables", Old: np.oldNames, New: np.newNames, Note: "copied"}
	header := fmt.Sprintf("the Go 1.16 header (no textStart) -> Go 1.20's, new magic %#x, %d-byte variant name", magic, objscan.LinearVariantLen)
	rec := "Go 1.16"
	if f.Magic == objscan.Go12Magic {
		names.Note = fmt.Sprintf("Go 1.2 layout: names, file names and the file table lay among the records and tables; rebuilt as a funcnametab (function and inline tree names), one compilation unit of %d files and a filetab", f.Files)
		header = fmt.Sprintf("the Go 1.2 header (magic, nfunc) -> Go 1.20's, new magic %#x, %d-byte variant name", magic, objscan.LinearVariantLen)
		rec = "Go 1.2"
	}
	lenNew := np.newFuncTab - np.newFtab - np.newRecords
	return []Part{
		{Name: "pcHeader", Old: np.oldHeader, New: np.newHeader, Note: header},
		names,
		{Name: "pctab", Old: np.oldPCTab, New: np.newPCTab, Note: lt.pctabNote(ps), kind: kindTables},
		{Name: "ftab", Old: np.oldFtab, New: np.newFtab, Note: fmt.Sprintf("(entry, funcoff) pairs of %d-byte words -> uint32 (entryoff, funcoff) pairs", ps)},
		{Name: "_func records in Go 1.20's layout", Old: np.oldFuncTab - np.oldFtab, New: np.newRecords,
			Note: fmt.Sprintf("%s records: entry -> uint32 entryOff, funcdata pointers -> uint32 offsets from the text start, startLine (0) added; %d-byte aligned", rec, ps)},
		{Name: "functab length field", New: lenNew, Note: funcTabNote(lt, len(f.Funcs), ps), kind: kindOutOfBand},
	}
}

// convertGo12Names appends the funcnametab of a Go 1.2-1.15 pclntab, whose
// names lie anywhere in it, to out, where the table starts at offset base:
// the function names, then the names the inline trees use. It sets each
// function's name offset in nameOffs, and the patches of the inline trees'
// name offsets in np.
func convertGo12Names(f *objscan.File, out []byte, base uint64, nameOffs []uint32, np *newPclntab) ([]byte, error) {
	names := nameTable{byValue: true}
	for i := range f.Funcs {
		names.add(uint64(f.Funcs[i].NameOff), f.Funcs[i].Name)
	}
	inl, err := addInlNames(f, &names)
	if err != nil {
		return nil, err
	}
	out, offs, err := names.write(out, base)
	if err != nil {
		return nil, fmt.Errorf("function names: %w", err)
	}
	if uint64(len(out))-base > 1<<32-1 {
		return nil, fmt.Errorf("function names take more than 4 GiB")
	}
	copy(nameOffs, offs)
	np.inlPatches, err = inlPatchesOf(inl, offs)
	return out, err
}

// inlName is an inline tree entry whose name offset a converted pclntab
// rewrites.
type inlName struct {
	fn  *objscan.Func
	j   int    // the entry's index in fn's tree
	at  uint64 // the address of its nameOff field
	ref int    // its name's index in the nameTable
}

// addInlNames adds the names of f's inline trees to names, and returns
// where each entry's name offset is.
func addInlNames(f *objscan.File, names *nameTable) ([]inlName, error) {
	var inl []inlName
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if len(fn.InlTree) == 0 {
			continue
		}
		addr, size, nameAt, ok, err := f.InlTreeAt(fn)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for j, c := range fn.InlTree {
			inl = append(inl, inlName{fn, j, addr + uint64(j)*uint64(size) + uint64(nameAt), names.add(uint64(c.NameOff), c.Name)})
		}
	}
	return inl, nil
}

// inlPatchesOf returns the patches that give the entries inl their names'
// offsets in the new funcnametab, offs: one per address.
func inlPatchesOf(inl []inlName, offs []uint32) ([]inlPatch, error) {
	var patches []inlPatch
	patched := map[uint64]uint32{}
	for _, e := range inl {
		v := offs[e.ref]
		if prev, dup := patched[e.at]; dup {
			if prev != v {
				return nil, fmt.Errorf("inline tree of %s: entry %d (name offset at %#x) overlaps another tree's entry with another name", e.fn.Name, e.j, e.at)
			}
			continue
		}
		patched[e.at] = v
		patches = append(patches, inlPatch{e.at, v})
	}
	return patches, nil
}

// convertGo12Files appends the cutab of one compilation unit, whose file
// number i is file i of a Go 1.2-1.15 pclntab's file table, and the
// filetab of their names, to out. It returns the offsets of both in out,
// and the number of strings in the filetab, the pcHeader's nfiles: each
// string of the old table once (a real binary's file names are separate
// strings, so one per file).
func convertGo12Files(f *objscan.File, out []byte) (_ []byte, cuOff, filetabOff, nfiles uint64, _ error) {
	out = appendZeros(out, alignUp(uint64(len(out)), 4))
	cuOff = uint64(len(out))
	files := max(f.Files, 1)
	out = append(out, make([]byte, 4*files)...)
	filetabOff = uint64(len(out))
	f.ByteOrder.PutUint32(out[cuOff:], ^uint32(0)) // entry 0 held the old table's size
	var names nameTable
	r := f.FileNames()
	dummy := &objscan.Func{Name: "file table"}
	for i := 1; i < files; i++ {
		s, off, err := r.Name(dummy, int32(i))
		if err != nil {
			return nil, 0, 0, 0, fmt.Errorf("file %d of the Go 1.2 file table: %w", i, err)
		}
		names.add(uint64(off), s)
	}
	out, offs, err := names.write(out, filetabOff)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("file names: %w", err)
	}
	for i, off := range offs {
		f.ByteOrder.PutUint32(out[cuOff+4*uint64(i+1):], off)
	}
	return out, cuOff, filetabOff, uint64(names.strings), nil
}
