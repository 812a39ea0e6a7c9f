package objscan

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// parseHeader reads the pcHeader at the start of f.pcln: magic, byte order,
// PC quantum and pointer size.
func (f *File) parseHeader() error {
	d := f.pcln
	if len(d) < 16 {
		return formatErr("pclntab", 0, "only %d bytes, too short for a pcHeader", len(d))
	}
	le, be := binary.LittleEndian.Uint32(d), binary.BigEndian.Uint32(d)
	switch {
	case le == Go12Magic || le == Go116Magic || le == Go118Magic || le == Go120Magic:
		f.ByteOrder, f.Magic = binary.LittleEndian, le
	case be == Go12Magic || be == Go116Magic || be == Go118Magic || be == Go120Magic:
		f.ByteOrder, f.Magic = binary.BigEndian, be
	case f.linearMagic(le, be): // rewrite-binary replace mode: Go 1.20 layout (linear.go)
	default:
		if err := f.foreignMagic(d); err != nil { // garble's own magic (obfuscated.go)
			return err
		}
	}
	if !f.ForeignMagic {
		f.HeaderMagic = f.ByteOrder.Uint32(d)
	}
	if d[4] != 0 || d[5] != 0 {
		return formatErr("pclntab", 4, "pcHeader pad bytes are % x, want 00 00", d[4:6])
	}
	f.PCQuantum = int(d[6])
	if q := f.PCQuantum; q != 1 && q != 2 && q != 4 {
		return formatErr("pclntab", 6, "PC quantum %d, want 1, 2 or 4", q)
	}
	f.PtrSize = int(d[7])
	if f.PtrSize != 4 && f.PtrSize != 8 {
		return formatErr("pclntab", 7, "pointer size %d, want 4 or 8", f.PtrSize)
	}
	switch f.Magic {
	case Go12Magic:
		f.Version = "go1.2"
	case Go116Magic:
		f.Version = "go1.16"
	case Go118Magic:
		f.Version = "go1.18"
	case Go120Magic:
		f.Version = "go1.20"
	}
	return nil
}

// rd reads fixed-size fields of a byte slice with bounds checks, recording
// the first failure. It keeps parsing code linear while never panicking.
type rd struct {
	f     *File
	where string
	d     []byte
	err   error
}

func (r *rd) fail(off uint64, n int) {
	if r.err == nil {
		r.err = formatErr(r.where, int64(off), "%d-byte read runs past the end (%d bytes)", n, len(r.d))
	}
}

func (r *rd) u8(off uint64) uint8 {
	if off >= uint64(len(r.d)) {
		r.fail(off, 1)
		return 0
	}
	return r.d[off]
}

func (r *rd) u32(off uint64) uint32 {
	if off > uint64(len(r.d)) || uint64(len(r.d))-off < 4 {
		r.fail(off, 4)
		return 0
	}
	return r.f.ByteOrder.Uint32(r.d[off:])
}

func (r *rd) uptr(off uint64) uint64 {
	if r.f.PtrSize == 4 {
		return uint64(r.u32(off))
	}
	if off > uint64(len(r.d)) || uint64(len(r.d))-off < 8 {
		r.fail(off, 8)
		return 0
	}
	return r.f.ByteOrder.Uint64(r.d[off:])
}

// strtab reads the NUL-terminated strings of one table of the pclntab
// (the function names, or the file names) while the pclntab is parsed.
// The linker stores each string once, so that reading every function's
// name scans the table about once. A hostile file can point thousands of
// functions, or inline-tree entries, at one long string or into its
// middle: read one by one, each copy and each scan for its NUL then costs
// up to the table's size, and the whole file its size squared (a 512 KB
// pclntab of 64,000 functions sharing a 256 KB name allocated 8.4 GB in
// 40 s). Once the strings read have scanned more than twice the table,
// strtab copies the table into one string, lists its NULs, and returns
// every later string as a substring of that copy, its end found by binary
// search: a table costs at most about ten times its size (the copy, and
// 8 bytes per NUL), whatever points into it.
type strtab struct {
	d       []byte
	where   string
	scanned uint64 // bytes scanned by the strings read one by one
	s       string // d, once scanned exceeds 2*len(d)
	nuls    []int  // the offsets of d's NULs, likewise
}

// at returns the NUL-terminated string at off.
func (t *strtab) at(off uint64) (string, error) {
	d := t.d
	if off >= uint64(len(d)) {
		return "", formatErr(t.where, int64(off), "string offset past the end (%d bytes)", len(d))
	}
	if t.scanned/2 <= uint64(len(d)) {
		n := bytes.IndexByte(d[off:], 0)
		if n < 0 {
			t.scanned += uint64(len(d)) - off
			return "", formatErr(t.where, int64(off), "string is not NUL-terminated")
		}
		t.scanned += uint64(n) + 1
		return string(d[off : off+uint64(n)]), nil
	}
	if t.nuls == nil {
		t.s = string(d)
		t.nuls = make([]int, 0, bytes.Count(d, []byte{0}))
		for i := 0; ; {
			n := bytes.IndexByte(d[i:], 0)
			if n < 0 {
				break
			}
			t.nuls = append(t.nuls, i+n)
			i += n + 1
		}
	}
	i, _ := slices.BinarySearch(t.nuls, int(off))
	if i == len(t.nuls) {
		return "", formatErr(t.where, int64(off), "string is not NUL-terminated")
	}
	return t.s[off:t.nuls[i]], nil
}

// strtabs are the string tables of a pclntab.
type strtabs struct{ names, files strtab }

// newStrtabs returns the string tables of f, whose tables are set.
func (f *File) newStrtabs() *strtabs {
	return &strtabs{names: strtab{d: f.names, where: f.namesWhere()}, files: f.fileStrtab()}
}

// fileStrtab returns the table of f's file names.
func (f *File) fileStrtab() strtab {
	if f.Magic == Go12Magic {
		return strtab{d: f.pcln, where: "filetab"} // file names are at offsets in the pclntab
	}
	return strtab{d: f.filetab, where: "filetab"}
}

// parse parses the whole pclntab; f.pcln and f.PclntabAddr are set.
func (f *File) parse() error {
	defer func() { f.strs = nil }() // only parsing reads strings through it
	if err := f.parseHeader(); err != nil {
		return err
	}
	if err := f.parseTables(); err != nil {
		if f.ForeignMagic {
			return f.foreignErr(err)
		}
		return err
	}
	return nil
}

// parseTables parses the pclntab after its header.
func (f *File) parseTables() error {
	h := &rd{f: f, where: "pcHeader", d: f.pcln}
	ps := uint64(f.PtrSize)
	var nfunc, funcTabOff, hdrText uint64
	switch f.Magic {
	case Go12Magic:
		nfunc = h.uptr(8)
		funcTabOff = 8 + ps
		f.pctab = f.pcln
		f.names = f.pcln
		ftabEnd := funcTabOff + (2*nfunc+1)*ps
		fileOff := uint64(h.u32(ftabEnd))
		if h.err != nil {
			return h.err
		}
		if nfunc > uint64(len(f.pcln))/(2*ps) {
			return formatErr("pcHeader", 8, "%d functions cannot fit in a %d-byte pclntab", nfunc, len(f.pcln))
		}
		if nfunc == 0 {
			return formatErr("pcHeader", 8, "nfunc is 0: a Go binary's pclntab lists at least one function")
		}
		if fileOff >= uint64(len(f.pcln)) {
			return formatErr("pcHeader", int64(ftabEnd), "file table offset %#x is past the end of the pclntab", fileOff)
		}
		f.filetab = f.pcln[fileOff:]
		nfiles := uint64(h.u32(fileOff))
		if nfiles > uint64(len(f.filetab))/4 {
			return formatErr("filetab", int64(fileOff), "%d files cannot fit", nfiles)
		}
		f.Files = int(nfiles)
		f.Sizes.Header = int64(ftabEnd + 4)
		f.Sizes.FileTab = int64(4 * nfiles)
	default:
		nfunc = h.uptr(8)
		nfiles := h.uptr(8 + ps)
		w := uint64(2) // index of the next header word
		if f.Magic != Go116Magic {
			hdrText = h.uptr(8 + w*ps)
			w++
		}
		funcnameOff := h.uptr(8 + w*ps)
		cuOff := h.uptr(8 + (w+1)*ps)
		filetabOff := h.uptr(8 + (w+2)*ps)
		pctabOff := h.uptr(8 + (w+3)*ps)
		pclnOff := h.uptr(8 + (w+4)*ps)
		if h.err != nil {
			return h.err
		}
		n := uint64(len(f.pcln))
		hdrEnd := 8 + (w+5)*ps
		offs := []struct {
			name string
			v    uint64
		}{{"funcnameOffset", funcnameOff}, {"cuOffset", cuOff}, {"filetabOffset", filetabOff}, {"pctabOffset", pctabOff}, {"pclnOffset", pclnOff}}
		prev := hdrEnd
		for _, o := range offs {
			if o.v < prev || o.v > n {
				return formatErr("pcHeader", -1, "%s %#x is out of order or past the %d-byte pclntab", o.name, o.v, n)
			}
			prev = o.v
		}
		if nfunc > n/8 {
			return formatErr("pcHeader", 8, "%d functions cannot fit in a %d-byte pclntab", nfunc, n)
		}
		if nfunc == 0 {
			return formatErr("pcHeader", 8, "nfunc is 0: a Go binary's pclntab lists at least one function")
		}
		f.names = f.pcln[funcnameOff:cuOff]
		f.namesOff = funcnameOff
		f.cutab = f.pcln[cuOff:filetabOff]
		f.filetab = f.pcln[filetabOff:pctabOff]
		f.pctab = f.pcln[pctabOff:pclnOff]
		funcTabOff = pclnOff
		// Every file name takes at least its NUL in the filetab.
		if nfiles > pctabOff-filetabOff {
			return formatErr("pcHeader", int64(8+ps), "%d files cannot fit in a %d-byte file table", nfiles, pctabOff-filetabOff)
		}
		f.Files = int(nfiles)
		f.Sizes.Header = int64(hdrEnd)
		f.Sizes.FuncNameTab = int64(cuOff - funcnameOff)
		f.Sizes.CUTab = int64(filetabOff - cuOff)
		f.Sizes.FileTab = int64(pctabOff - filetabOff)
		f.Sizes.PCTab = int64(pclnOff - pctabOff)
	}
	f.ftabOff = funcTabOff
	f.strs = f.newStrtabs()
	if f.Magic == Go118Magic || f.Magic == Go120Magic {
		if err := f.textBase(hdrText); err != nil {
			return err
		}
	}
	if err := f.parseFuncs(funcTabOff, nfunc); err != nil {
		return err
	}
	if err := f.collectTables(); err != nil {
		return err
	}
	f.resolveGoFunc()
	if err := f.decodeInlTreesAnyRelease(); err != nil {
		return err
	}
	f.Sizes.Total = int64(len(f.pcln))
	f.computeSizes(funcTabOff)
	return nil
}

// parseFuncs reads the functab and every _func record.
func (f *File) parseFuncs(tabOff, nfunc uint64) error {
	ps := uint64(f.PtrSize)
	wide := f.Magic == Go12Magic || f.Magic == Go116Magic // functab fields are pointer-sized
	fieldSize := uint64(4)
	if wide {
		fieldSize = ps
	}
	r := &rd{f: f, where: "functab", d: f.pcln}
	if tabOff+(2*nfunc+1)*fieldSize > uint64(len(f.pcln)) {
		return formatErr("functab", int64(tabOff), "%d functab entries run past the %d-byte pclntab", nfunc, len(f.pcln))
	}
	// funcBase is what funcoff is relative to.
	funcBase := tabOff
	if f.Magic == Go12Magic {
		funcBase = 0
	}
	read := func(off uint64) uint64 {
		if wide {
			return r.uptr(off)
		}
		return uint64(r.u32(off))
	}
	entry := func(i uint64) uint64 {
		v := read(tabOff + 2*i*fieldSize)
		if !wide {
			v = f.textAddr(v)
		}
		return v
	}
	if !wide {
		f.EntryOffKey = f.entryOffKey(tabOff, nfunc)
		f.wasmIndexes = f.im.goarch == "wasm" && wasmIndexes(nfunc, func(i uint64) uint64 { return read(tabOff + 2*i*fieldSize) })
	}
	f.Funcs = make([]Func, nfunc)
	minorVer := goMinor(f.GoVersion)
	if minorVer < 0 && f.Magic == Go12Magic {
		if v := f.guessRecordRelease(tabOff, nfunc, fieldSize, read); v > 0 {
			f.guessedMinor, minorVer = v, v
		}
	}
	// Real _func records never overlap, so their pcdata and funcdata arrays
	// together fit in the pclntab. A hostile functab that points many entries
	// at one huge record would otherwise allocate quadratically.
	f.arrayBudget = uint64(len(f.pcln)) / 4
	var funcsEnd uint64
	for i := uint64(0); i < nfunc; i++ {
		fn := &f.Funcs[i]
		fn.Entry = entry(i)
		fn.End = entry(i + 1)
		funcOff := read(tabOff + (2*i+1)*fieldSize)
		if r.err != nil {
			return r.err
		}
		if fn.End < fn.Entry {
			return formatErr("functab", int64(tabOff+2*i*fieldSize), "function %d entry %#x is above the next entry %#x", i, fn.Entry, fn.End)
		}
		off := funcBase + funcOff
		if off > uint64(len(f.pcln)) {
			return formatErr("functab", int64(tabOff+(2*i+1)*fieldSize), "function %d record offset %#x is past the pclntab", i, funcOff)
		}
		fn.Offset = uint32(funcOff)
		end, err := f.parseFunc(fn, off, minorVer)
		if err != nil {
			return err
		}
		funcsEnd = max(funcsEnd, end)
	}
	// The functab covers at least its ftab, whatever the records hold.
	funcsEnd = max(funcsEnd, tabOff+(2*nfunc+1)*fieldSize)
	f.Sizes.FuncTab = int64(funcsEnd - tabOff)
	if f.Magic == Go12Magic {
		f.Sizes.FuncTab = max(int64(funcsEnd)-f.Sizes.Header, 0)
	}
	return nil
}

// guessRecordRelease returns the release a go1.2-layout pclntab of
// unknown version (a build stripped with -s -w before Go 1.13) has _func
// records of, from their words: 11 for Go 1.10-1.11's, 9 for Go 1.2-1.9's,
// 0 for Go 1.12-1.15's (or if it cannot tell).
//
// Before Go 1.12 a record ends in an int32 nfuncdata, where Go 1.12 has a
// funcID, two unused bytes and a uint8 nfuncdata. Read as Go 1.12's, a
// little-endian int32 count puts its low byte in funcID and 0 in
// nfuncdata, and real Go 1.12-1.15 records almost all have funcdata
// (argument and locals pointer maps): so no record has a nonzero last
// byte, and some have a nonzero first byte. (A big-endian count reads as
// Go 1.12's nfuncdata, and is left to the Go 1.12 reading.) The fourth
// word is the funcID from Go 1.10, below 256, and the frame size before
// it, often larger.
func (f *File) guessRecordRelease(tabOff, nfunc, fieldSize uint64, read func(uint64) uint64) int {
	if f.ByteOrder != binary.LittleEndian {
		return 0
	}
	ps := uint64(f.PtrSize)
	counts, frames := 0, false
	for i := uint64(0); i < nfunc; i++ {
		off := read(tabOff + (2*i+1)*fieldSize)
		if off > uint64(len(f.pcln)) || uint64(len(f.pcln))-off < ps+32 {
			return 0
		}
		rec := f.pcln[off+ps : off+ps+32] // after the entry
		if rec[31] != 0 {
			return 0
		}
		if rec[28] != 0 {
			counts++
		}
		frames = frames || binary.LittleEndian.Uint32(rec[8:]) >= 256
	}
	switch {
	case counts == 0:
		return 0
	case frames:
		return 9
	}
	return 11
}

// parseFunc reads the _func record at off and returns the offset just past it.
func (f *File) parseFunc(fn *Func, off uint64, minorVer int) (uint64, error) {
	r := &rd{f: f, where: "_func", d: f.pcln}
	ps := uint64(f.PtrSize)
	var e uint64 // size of the entry field
	switch f.Magic {
	case Go12Magic, Go116Magic:
		e = ps
		if v := r.uptr(off); r.err == nil && v != fn.Entry {
			return 0, formatErr("_func", int64(off), "entry %#x does not match the functab entry %#x", v, fn.Entry)
		}
	default:
		e = 4
		if raw, nameOff := r.u32(off), r.u32(off+4); r.err == nil {
			if v := f.textAddr(uint64(raw ^ nameOff*f.EntryOffKey)); v != fn.Entry {
				return 0, f.entryOffErr(off, raw, nameOff, fn.Entry)
			}
		}
	}
	nameOff := r.u32(off + e)
	fn.Args = int32(r.u32(off + e + 4))
	fn.Deferreturn = r.u32(off + e + 8)
	fn.PCSP = r.u32(off + e + 12)
	fn.PCFile = r.u32(off + e + 16)
	fn.PCLn = r.u32(off + e + 20)
	npcdata := uint64(r.u32(off + e + 24))
	var nfuncdata, fixed uint64
	switch f.Magic {
	case Go12Magic:
		if minorVer >= 0 && minorVer < 12 {
			// Before Go 1.12 the last word is an int32 nfuncdata, and
			// the fourth holds no deferreturn: it is unused, or from
			// Go 1.10 on the funcID (runtime2.go of those releases).
			nfuncdata = uint64(r.u32(off + e + 28))
			if minorVer >= 10 {
				fn.FuncID = uint8(fn.Deferreturn)
			}
			fn.Deferreturn = 0
		} else {
			fn.FuncID = r.u8(off + e + 28)
			nfuncdata = uint64(r.u8(off + e + 31))
		}
		fixed = e + 32
	case Go116Magic, Go118Magic:
		fn.CUOffset = r.u32(off + e + 28)
		fn.FuncID = r.u8(off + e + 32)
		fn.Flag = r.u8(off + e + 33)
		nfuncdata = uint64(r.u8(off + e + 35))
		fixed = e + 36
	default:
		fn.CUOffset = r.u32(off + e + 28)
		fn.StartLine = int32(r.u32(off + e + 32))
		fn.FuncID = r.u8(off + e + 36)
		fn.Flag = r.u8(off + e + 37)
		nfuncdata = uint64(r.u8(off + e + 39))
		fixed = e + 40 + f.linearRecordExtra() // rewrite-binary replace mode (linear.go)
	}
	if r.err != nil {
		return 0, r.err
	}
	if npcdata > uint64(len(f.pcln))/4 {
		return 0, formatErr("_func", int64(off+e+24), "npcdata %d cannot fit in the pclntab", npcdata)
	}
	p := off + fixed
	if p+4*npcdata > uint64(len(f.pcln)) {
		return 0, formatErr("_func", int64(p), "%d pcdata offsets run past the pclntab", npcdata)
	}
	if npcdata+nfuncdata > f.arrayBudget {
		return 0, formatErr("_func", int64(off), "pcdata/funcdata arrays of all records exceed the pclntab size (overlapping records?)")
	}
	f.arrayBudget -= npcdata + nfuncdata
	fn.PCData = make([]uint32, npcdata)
	for i := range fn.PCData {
		fn.PCData[i] = r.u32(p)
		p += 4
	}
	fn.FuncData = make([]uint64, nfuncdata)
	if f.Magic == Go12Magic || f.Magic == Go116Magic {
		p = (p + ps - 1) &^ (ps - 1) // relative to the ptr-aligned record start
		if off%ps != 0 {
			return 0, formatErr("_func", int64(off), "record is not %d-byte aligned", ps)
		}
		for i := range fn.FuncData {
			fn.FuncData[i] = r.uptr(p)
			p += ps
		}
	} else {
		for i := range fn.FuncData {
			fn.FuncData[i] = uint64(r.u32(p))
			p += 4
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	name, err := f.strs.names.at(uint64(nameOff))
	if err != nil {
		return 0, formatErr("_func", int64(off+e), "function at entry %#x: bad name offset %#x: %v", fn.Entry, nameOff, err)
	}
	fn.Name, fn.NameOff = name, nameOff
	return p, nil
}

// computeSizes fills in the sizes that depend on functions and funcdata.
func (f *File) computeSizes(funcTabOff uint64) {
	f.Sizes.FuncData = -1
	if len(f.Funcs) > 0 {
		// findfunctab: one 4-byte index per 4096 bytes of text plus one byte
		// per 256-byte subbucket, the last bucket truncated (cmd/link pcln.go).
		span := f.Funcs[len(f.Funcs)-1].End - f.Funcs[0].Entry
		f.Sizes.FindFuncTab = int64(4*((span+4095)/4096) + (span+255)/256)
	}
	// In the 1.26 layout the funcdata blobs sit between the end of the _func
	// records and findfunctab, inside the pclntab.
	if f.GoFuncAddr > f.PclntabAddr && f.GoFuncAddr < f.PclntabAddr+uint64(len(f.pcln)) {
		start := f.GoFuncAddr - f.PclntabAddr
		end := uint64(len(f.pcln)) - uint64(f.Sizes.FindFuncTab)
		if md := f.findModuledata(); md != nil && md.findfunctab > f.GoFuncAddr && md.findfunctab <= f.PclntabAddr+uint64(len(f.pcln)) {
			end = md.findfunctab - f.PclntabAddr
		}
		if end > start {
			f.Sizes.FuncData = int64(end - start)
		}
	}
}

// wasmIndexes reports whether a wasm functab of nfunc entries (entry
// returns the i-th offset) holds function indexes, which the runtimes of
// recent releases shift into PCs (as Go 1.26's does), rather than the
// offsets of the PCs themselves (as Go 1.21's and 1.22's do): a PC offset
// is a multiple of 1<<16, its low bits those of the function's entry.
func wasmIndexes(nfunc uint64, entry func(i uint64) uint64) bool {
	for i := range nfunc {
		if entry(i)&(1<<16-1) != 0 {
			return true
		}
	}
	return false
}
