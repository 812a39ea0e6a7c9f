package objscan

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"io"
)

// LinearMagic is the pcHeader magic of a pclntab whose PC-value tables are in
// the linear-index format (cmd/rewrite-binary replace mode). No Go runtime
// accepts it, and read in the other byte order it is no Go magic either.
const LinearMagic uint32 = 0xffffffe1

// LinearDerivedMagic is the pcHeader magic of a pclntab whose PC-value
// tables are in the linear-index format and whose function lengths are
// derived from the functab, at no cost in bytes (written by the pctab
// toolchain's linker; see [Linear]).
const LinearDerivedMagic uint32 = 0xffffffe2

// LinearSection is the name of the ELF section that holds the linear tables
// of an append-mode binary.
const LinearSection = ".gopclntab.linear"

// The append-mode section in Mach-O and PE files, whose section names are
// shorter: LinearSectionMachO in its own segment LinearSegmentMachO, and
// LinearSectionPE (eight bytes, the PE limit).
const (
	LinearSegmentMachO = "__GOLINPC"
	LinearSectionMachO = "__golinpc"
	LinearSectionPE    = ".golinpc"
)

// LinearVarintPCLnName is the variant name after the pcHeader of a
// pclntab whose pcln tables stay varint and whose other tables are
// cf-palette-short (the pctab toolchain's build tag pctab_varln).
const LinearVarintPCLnName = "cfps-varint-pcln"

// LinearVarintPCLnVariant is the linearpc variant of the tables other
// than pcln in a [LinearVarintPCLnName] pclntab.
const LinearVarintPCLnVariant = "cf-palette-short"

// LinearSectionMagic starts a LinearSection.
const LinearSectionMagic = "GOLINPC\x00"

// Layout constants of the linear formats.
const (
	LinearVariantLen     = 16 // bytes of the NUL-padded variant name
	LinearPad            = 8  // zero bytes after the last encoding
	LinearSectionHdrSize = 72 // bytes of the append-mode section header
	LinearSectionVersion = 1
	LinearFuncLenOffset  = 44 // offset of the function length in a replace-mode _func record
)

// Linear describes the linear-format tables of a rewritten binary.
//
// Binaries rewritten by cmd/rewrite-binary (package rewrite) carry their
// PC-value tables in the linear-index format of golang/go#61984 as well as,
// or instead of, Go's varint format. objscan reads both kinds; File.Linear
// describes the linear tables. objscan does not decode linear tables (package
// linearpc does, and it depends on objscan's tests); it exposes their bytes,
// offsets and lengths.
//
// # Replace mode
//
// The pclntab itself is rewritten. Its pcHeader has magic [LinearMagic] and
// the Go 1.20 layout, followed by a 16-byte NUL-padded variant name:
//
//	magic uint32 = LinearMagic; pad1, pad2 = 0; minLC; ptrSize
//	nfunc, nfiles, 0, funcnameOffset, cuOffset, filetabOffset, pctabOffset, pclnOffset  (uintptr each)
//	variant [16]byte
//
// The pctab holds the linear encodings: byte 0 is a pad byte (so that no
// table has offset 0, which means "no table"), the encodings follow, then
// [LinearPad] zero bytes that let word-at-a-time lookups stay in bounds.
// With [LinearMagic] every _func record has the Go 1.20 layout with one
// extra uint32 after nfuncdata, at offset 44: the number of PC-quantum units
// every table of the function covers, which the linear format needs out of
// band. The pcdata offsets follow it. pcsp, pcfile, pcln and pcdata are
// offsets into the linear pctab.
//
// With [LinearDerivedMagic] the _func records keep the Go 1.20 layout, and
// a function's tables cover the units up to the next function's entry
// (Linear.Derived): the runtime reads the entryOff of the next record,
// which starts at the pointer-aligned end of this one's pcdata and funcdata
// arrays, and after the last record a uint32 holds the end of the text (as
// an offset from the text start, like entryOff). objscan checks that the
// records are laid out that way.
//
// A pclntab converted from the Go 1.2-1.17 layouts (absolute entry PCs and
// funcdata pointers) has the same layout; its pcHeader's textStart word
// holds the text start (moduledata.text), and its funcdata are uint32
// offsets from it: File.GoFuncAddr is File.TextStart. The funcdata, inline
// trees included, keep the release's format and PCDATA and FUNCDATA ids,
// which objscan takes from the release the build info names. A table
// converted from Go 1.2-1.15 has one compilation unit, at cutab offset 0,
// whose file number i is the old global file table's file i (entry 0 is
// ^uint32(0)), and its inline trees' name offsets index the new
// funcnametab. The Go 1.5-1.15 moduledata's pclntable, ftab and filetab
// slices point at the new pcHeader, functab and cutab.
//
// For a replace-mode binary File.Tabs is empty (there are no varint tables)
// and Func.InlTree is nil: an inline tree's size is the largest value of the
// function's InlTreeIndex table, which only a linear decoder can find. The
// function names, file tables and funcdata are read as usual, and Func.Size
// is the stored function length.
//
// # Append mode
//
// The varint pclntab is untouched and a non-allocated ELF section named
// [LinearSection] holds the linear tables. Its integers are in the target's
// byte order:
//
//	0   [8]byte  "GOLINPC\x00"
//	8   uint32   format version, 1
//	12  uint8    PC quantum
//	13  uint8    pointer size
//	14  uint16   0
//	16  [16]byte variant name, NUL-padded
//	32  uint32   nfunc (must equal the pclntab's)
//	36  uint32   nindex
//	40  uint32   offset of funclen: nfunc uint32s, in functab order, PC-quantum units
//	44  uint32   offset of index: nindex {varintOff, len, linearOff uint32}, sorted by (varintOff, len)
//	48  uint32   offset of data: a pad byte, the encodings, LinearPad zero bytes
//	52  uint32   size of data
//	56  uint64   address of the varint pclntab the section was built from
//	64  uint64   size of that pclntab
//
// A function's table of some kind is found by its varint pctab offset and the
// function's length in the index; linearOff is an offset into data.
type Linear struct {
	Mode string // "replace" or "append"
	// Derived reports a replace-mode pclntab with [LinearDerivedMagic]:
	// function lengths derived from the functab, not stored.
	Derived bool
	Variant string // linearpc variant name, e.g. "spec"
	// PCLnVarint reports a pclntab whose pcln tables are in Go's varint
	// format (the pcHeader's variant name [LinearVarintPCLnName];
	// Variant is then "cf-palette-short"): LinearFunc.PCLn is the offset
	// in Data of a varint table, which covers its own length.
	PCLnVarint bool
	Source     string // where the tables are: "pclntab pctab" or "section .gopclntab.linear"

	// Data holds the encodings; table offsets index into it. Data[0] is a
	// pad byte, and at least the last LinearPad bytes are zero (replace
	// mode also rounds the pctab up to the pointer size).
	Data []byte

	// Funcs parallels File.Funcs: each function's length and the offsets
	// of its tables in Data (0 = no table).
	Funcs []LinearFunc

	// SectionSize is the size of the LinearSection (append mode), 0 in
	// replace mode.
	SectionSize int64
	// IndexEntries is the number of (varint offset, length) entries of the
	// append-mode index, 0 in replace mode.
	IndexEntries int
}

// LinearFunc gives the linear tables of one function.
type LinearFunc struct {
	Len    uint32   // PC-quantum units every table of the function covers
	PCSP   uint32   // offset in Linear.Data, 0 = none
	PCFile uint32   //
	PCLn   uint32   //
	PCData []uint32 // indexed by PCDATA id
}

// TableOffset returns the offset in Linear.Data of the function's table of
// the given kind, or 0 if it has none.
func (lf *LinearFunc) TableOffset(kind TableKind) uint32 {
	switch kind {
	case KindPCSP:
		return lf.PCSP
	case KindPCFile:
		return lf.PCFile
	case KindPCLn:
		return lf.PCLn
	}
	if id := int(kind - KindPCData); kind >= KindPCData && id < len(lf.PCData) {
		return lf.PCData[id]
	}
	return 0
}

// Offsets returns the function's table offsets in Data: pcsp, pcfile, pcln, then
// the PCDATA tables by id.
func (lf *LinearFunc) Offsets() []uint32 {
	return append([]uint32{lf.PCSP, lf.PCFile, lf.PCLn}, lf.PCData...)
}

// linearMagic is the parseHeader hook: it recognizes a replace-mode pcHeader,
// which is then parsed as the Go 1.20 layout (finishLinear restores Magic).
func (f *File) linearMagic(le, be uint32) bool {
	derived := false
	switch {
	case le == LinearMagic || le == LinearDerivedMagic:
		f.ByteOrder = binary.LittleEndian
		derived = le == LinearDerivedMagic
	case be == LinearMagic || be == LinearDerivedMagic:
		f.ByteOrder = binary.BigEndian
		derived = be == LinearDerivedMagic
	default:
		return false
	}
	f.Magic = Go120Magic
	f.Linear = &Linear{Mode: "replace", Source: "pclntab pctab", Derived: derived}
	return true
}

// linearRecordExtra is the parseFunc hook: the size of the extra field a
// replace-mode _func record has before its pcdata array.
func (f *File) linearRecordExtra() uint64 {
	if f.Linear != nil && f.Linear.Mode == "replace" && !f.Linear.Derived {
		return 4
	}
	return 0
}

// collectLinear is the collectTables hook for a replace-mode pclntab: the
// table offsets index the linear pctab, so there are no varint tables to
// walk. It fills f.Linear and each function's Size.
func (f *File) collectLinear() error {
	l := f.Linear
	ps := uint64(f.PtrSize)
	hdrEnd := 8 + 8*ps
	if uint64(len(f.pcln)) < hdrEnd+LinearVariantLen {
		return formatErr("pcHeader", int64(hdrEnd), "no room for the linear variant name")
	}
	name := f.pcln[hdrEnd : hdrEnd+LinearVariantLen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if len(name) == 0 {
		return formatErr("pcHeader", int64(hdrEnd), "empty linear variant name")
	}
	l.Variant = string(name)
	if l.Variant == LinearVarintPCLnName {
		l.Variant, l.PCLnVarint = LinearVarintPCLnVariant, true
	}
	l.Data = f.pctab
	if len(l.Data) < 1+LinearPad {
		return formatErr("pctab", 0, "linear pctab of %d bytes is too short for its padding", len(l.Data))
	}
	// pclnOffset: the functab, which Func.Offset is relative to.
	r := &rd{f: f, where: "pcHeader", d: f.pcln}
	tabOff := r.uptr(8 + 7*ps)
	if r.err != nil {
		return r.err
	}
	rr := &rd{f: f, where: "_func", d: f.pcln}
	l.Funcs = make([]LinearFunc, len(f.Funcs))
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		lf := &l.Funcs[i]
		if l.Derived {
			n, err := f.derivedLen(tabOff, i)
			if err != nil {
				return err
			}
			lf.Len = n
		} else {
			lf.Len = rr.u32(tabOff + uint64(fn.Offset) + LinearFuncLenOffset)
		}
		if rr.err != nil {
			return rr.err
		}
		lf.PCSP, lf.PCFile, lf.PCLn = fn.PCSP, fn.PCFile, fn.PCLn
		lf.PCData = fn.PCData
		for j, off := range lf.Offsets() {
			if off != 0 && uint64(off) >= uint64(len(l.Data))-LinearPad {
				return formatErr("_func", int64(tabOff+uint64(fn.Offset)), "%s: table %d offset %#x is past the %d-byte linear pctab", fn.Name, j, off, len(l.Data))
			}
		}
		fn.Size = uint64(lf.Len) * uint64(f.PCQuantum)
		if err := f.checkExtent(fn, KindPCSP, lf.PCSP, fn.Size); err != nil {
			return fmt.Errorf("linear length of %s: %w", fn.Name, err)
		}
	}
	return nil
}

// derivedLen returns the length of function i of a LinearDerivedMagic
// pclntab whose functab starts at tabOff, after checking that the runtime
// finds it where it looks: the next record (or, after the last, a uint32
// holding the end of the text) at the pointer-aligned end of the record.
func (f *File) derivedLen(tabOff uint64, i int) (uint32, error) {
	fn := &f.Funcs[i]
	ps := uint64(f.PtrSize)
	rel := uint64(fn.Offset) + 40 + 4 + 4*uint64(len(fn.PCData)) + 4*uint64(len(fn.FuncData))
	rel = (rel + ps - 1) &^ (ps - 1)
	if i+1 < len(f.Funcs) {
		if next := uint64(f.Funcs[i+1].Offset); next != rel {
			return 0, formatErr("_func", int64(tabOff+uint64(fn.Offset)), "%s: derived-length layout: the next record is at functab offset %#x, want %#x (the aligned end of this one)", fn.Name, next, rel)
		}
	} else {
		rr := &rd{f: f, where: "functab", d: f.pcln}
		end := f.textAddr(uint64(rr.u32(tabOff + rel)))
		if rr.err != nil {
			return 0, fmt.Errorf("derived-length end offset after the last record: %w", rr.err)
		}
		if end != fn.End {
			return 0, formatErr("functab", int64(tabOff+rel), "derived-length end offset gives %#x, but the functab ends at %#x", end, fn.End)
		}
		f.Sizes.FuncTab = int64(rel + 4)
	}
	// Whole units, rounded down as the runtime does (a marker symbol such
	// as go:textfipsend may be one byte long).
	q := uint64(f.PCQuantum)
	if d := fn.End - fn.Entry; d/q > 1<<32-1 {
		return 0, formatErr("functab", -1, "%s: extent %#x..%#x is longer than 2^32 %d-byte units", fn.Name, fn.Entry, fn.End, q)
	}
	return uint32((fn.End - fn.Entry) / q), nil
}

// finishLinear runs after parse: it completes a replace-mode File and looks
// for the LinearSection of an append-mode binary.
func (f *File) finishLinear(r io.ReaderAt, fileSize int64) error {
	if f.Linear != nil && f.Linear.Mode == "replace" {
		f.Magic = LinearMagic
		f.Version = "go1.20-linear"
		if f.Linear.Derived {
			f.Magic = LinearDerivedMagic
			f.Version = "go1.20-linear-derived"
		}
		f.Sizes.Header += LinearVariantLen
		return nil
	}
	name, off, size, ok, err := f.linearSectionAt(r)
	if err != nil || !ok {
		return err
	}
	if size > uint64(fileSize) || off > uint64(fileSize)-size {
		return formatErr(name, -1, "section of %d bytes at file offset %#x lies outside the %d-byte file", size, off, fileSize)
	}
	data := make([]byte, size)
	if _, err := r.ReadAt(data, int64(off)); err != nil {
		return fmt.Errorf("objscan: reading section %s: %w", name, err)
	}
	l, err := f.parseLinearSection(data)
	if err != nil {
		return err
	}
	l.Source = "section " + name
	f.Linear = l
	return nil
}

// linearSectionAt finds the append-mode section of f's format: its name,
// file offset and size.
func (f *File) linearSectionAt(r io.ReaderAt) (name string, off, size uint64, ok bool, err error) {
	// The image was opened already, so these parsers accept the file.
	switch f.im.format {
	case "elf":
		ef, err := safely("ELF", func() (*elf.File, error) { return elf.NewFile(r) })
		if err != nil {
			return "", 0, 0, false, nil
		}
		if s := ef.Section(LinearSection); s != nil {
			if s.Type == elf.SHT_NOBITS {
				return "", 0, 0, false, formatErr(LinearSection, -1, "section has no file bytes (SHT_NOBITS)")
			}
			return LinearSection, s.Offset, s.Size, true, nil
		}
	case "macho":
		mf, err := safely("Mach-O", func() (*macho.File, error) { return macho.NewFile(r) })
		if err != nil {
			return "", 0, 0, false, nil
		}
		for _, s := range mf.Sections {
			if s.Name == LinearSectionMachO && s.Seg == LinearSegmentMachO {
				return LinearSegmentMachO + "," + LinearSectionMachO, uint64(s.Offset), s.Size, true, nil
			}
		}
	case "pe":
		pf, err := safely("PE", func() (*pe.File, error) { return pe.NewFile(r) })
		if err != nil {
			return "", 0, 0, false, nil
		}
		if s := pf.Section(LinearSectionPE); s != nil {
			// The raw data is padded to the file alignment; the
			// section's own size is its virtual size.
			return LinearSectionPE, uint64(s.Offset), uint64(min(s.VirtualSize, s.Size)), true, nil
		}
	}
	return "", 0, 0, false, nil
}

// parseLinearSection parses the contents of a LinearSection against the
// varint pclntab already parsed into f.
func (f *File) parseLinearSection(d []byte) (*Linear, error) {
	const where = LinearSection
	if len(d) < LinearSectionHdrSize || string(d[:8]) != LinearSectionMagic {
		return nil, formatErr(where, 0, "not a linear table section (bad magic or shorter than its %d-byte header)", LinearSectionHdrSize)
	}
	r := &rd{f: f, where: where, d: d}
	if v := r.u32(8); v != LinearSectionVersion {
		return nil, formatErr(where, 8, "format version %d, want %d", v, LinearSectionVersion)
	}
	if q := int(d[12]); q != f.PCQuantum {
		return nil, formatErr(where, 12, "PC quantum %d, but the pclntab's is %d", q, f.PCQuantum)
	}
	name := d[16 : 16+LinearVariantLen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if len(name) == 0 {
		return nil, formatErr(where, 16, "empty variant name")
	}
	nfunc := uint64(r.u32(32))
	nindex := uint64(r.u32(36))
	lenOff := uint64(r.u32(40))
	idxOff := uint64(r.u32(44))
	dataOff := uint64(r.u32(48))
	dataSize := uint64(r.u32(52))
	addr, size := f.ByteOrder.Uint64(d[56:]), f.ByteOrder.Uint64(d[64:])
	n := uint64(len(d))
	switch {
	case nfunc != uint64(len(f.Funcs)):
		return nil, formatErr(where, 32, "%d functions, but the pclntab has %d (stale section?)", nfunc, len(f.Funcs))
	case addr != f.PclntabAddr || size != uint64(len(f.pcln)):
		return nil, formatErr(where, 56, "built for a pclntab of %d bytes at %#x, but this one has %d bytes at %#x (stale section?)", size, addr, len(f.pcln), f.PclntabAddr)
	case lenOff > n || n-lenOff < 4*nfunc:
		return nil, formatErr(where, 40, "function lengths (%d) at %#x run past the %d-byte section", nfunc, lenOff, n)
	case idxOff > n || (n-idxOff)/12 < nindex:
		return nil, formatErr(where, 44, "index (%d entries) at %#x runs past the %d-byte section", nindex, idxOff, n)
	case dataOff > n || n-dataOff < dataSize || dataSize < 1+LinearPad:
		return nil, formatErr(where, 48, "data (%d bytes) at %#x does not fit the %d-byte section, or is too short for its padding", dataSize, dataOff, n)
	}
	l := &Linear{Mode: "append", Variant: string(name),
		Data: d[dataOff : dataOff+dataSize : dataOff+dataSize], SectionSize: int64(n), IndexEntries: int(nindex)}
	type key struct{ off, len uint32 }
	index := make(map[key]uint32, nindex)
	var prev key
	for i := uint64(0); i < nindex; i++ {
		p := idxOff + 12*i
		k := key{r.u32(p), r.u32(p + 4)}
		lin := r.u32(p + 8)
		if i > 0 && (k.off < prev.off || k.off == prev.off && k.len <= prev.len) {
			return nil, formatErr(where, int64(p), "index entry %d is out of order", i)
		}
		if lin == 0 || uint64(lin) >= dataSize-LinearPad {
			return nil, formatErr(where, int64(p+8), "index entry %d: linear offset %#x is outside the %d-byte data", i, lin, dataSize)
		}
		prev = k
		index[k] = lin
	}
	l.Funcs = make([]LinearFunc, len(f.Funcs))
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		lf := &l.Funcs[i]
		lf.Len = r.u32(lenOff + 4*uint64(i))
		if uint64(lf.Len)*uint64(f.PCQuantum) != fn.Size {
			return nil, formatErr(where, int64(lenOff+4*uint64(i)), "%s: length %d units, but its varint tables cover %d bytes", fn.Name, lf.Len, fn.Size)
		}
		lf.PCData = make([]uint32, len(fn.PCData))
		varint := append([]uint32{fn.PCSP, fn.PCFile, fn.PCLn}, fn.PCData...)
		lin := make([]uint32, len(varint))
		for j, off := range varint {
			if off == 0 || lf.Len == 0 {
				continue
			}
			o, ok := index[key{off, lf.Len}]
			if !ok {
				return nil, formatErr(where, -1, "%s: no index entry for its table %d (varint offset %#x, length %d)", fn.Name, j, off, lf.Len)
			}
			lin[j] = o
		}
		lf.PCSP, lf.PCFile, lf.PCLn = lin[0], lin[1], lin[2]
		copy(lf.PCData, lin[3:])
	}
	if r.err != nil {
		return nil, r.err
	}
	return l, nil
}
