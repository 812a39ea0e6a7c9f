// Package objscan reads the pclntab of real Go binaries.
//
// It opens ELF (32- and 64-bit, either byte order), Mach-O, PE, XCOFF,
// Plan 9 a.out and WebAssembly files
// written by any Go toolchain from Go 1.2 to Go 1.27, finds the pclntab by
// section name, by the runtime.pclntab symbols, or by scanning for the
// pcHeader magic, and parses every layout:
//
//	Go 1.2–1.15   magic 0xfffffffb
//	Go 1.16–1.17  magic 0xfffffffa
//	Go 1.18–1.19  magic 0xfffffff0
//	Go 1.20+      magic 0xfffffff1
//
// It also reads the binaries garble (mvdan.cc/garble) obfuscates: a Go
// 1.18+ pcHeader with a magic of garble's own, and _func records whose
// entryOff garble encrypted (see [File.ForeignMagic], [File.EntryOffKey]).
//
// For each function it exposes the fields of the runtime's _func record, the
// raw bytes of its PC-value tables (pcsp, pcfile, pcln and every PCDATA
// table), its funcdata references and its decoded inline tree. For the whole
// binary it exposes the target, the layout parameters, the size of each part
// of the pclntab, and the set of distinct tables keyed by pctab offset, so
// that size accounting can be exact.
//
// objscan never panics on malformed input: every problem is reported as an
// error that says what is wrong and at which offset, and allocations are
// bounded by the size of the input.
package objscan

import (
	"bytes"
	"debug/buildinfo"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Magic numbers of the pclntab layouts.
const (
	Go12Magic  uint32 = 0xfffffffb // Go 1.2 – 1.15
	Go116Magic uint32 = 0xfffffffa // Go 1.16 – 1.17
	Go118Magic uint32 = 0xfffffff0 // Go 1.18 – 1.19
	Go120Magic uint32 = 0xfffffff1 // Go 1.20 and later
)

// A FormatError reports a malformed binary or pclntab. Off is the byte offset
// of the problem within the part named by Where.
type FormatError struct {
	Where string // "pclntab", "functab", "pctab", "ELF", ...
	Off   int64  // offset within Where, or -1 if not applicable
	Msg   string
}

// Error says which part of the file is malformed, where, and how.
func (e *FormatError) Error() string {
	if e.Off < 0 {
		return fmt.Sprintf("objscan: %s: %s", e.Where, e.Msg)
	}
	return fmt.Sprintf("objscan: %s at offset %#x: %s", e.Where, e.Off, e.Msg)
}

func formatErr(where string, off int64, format string, args ...any) error {
	return &FormatError{Where: where, Off: off, Msg: fmt.Sprintf(format, args...)}
}

// Sizes gives the byte size of each part of the pclntab.
type Sizes struct {
	Header      int64 `json:"header"`      // pcHeader (plus, before Go 1.16, the functab that follows it)
	FuncNameTab int64 `json:"funcnametab"` // function names
	CUTab       int64 `json:"cutab"`       // per-compilation-unit file index tables (Go 1.16+)
	FileTab     int64 `json:"filetab"`     // file names
	PCTab       int64 `json:"pctab"`       // all PC-value tables
	FuncTab     int64 `json:"functab"`     // ftab plus every _func record with its pcdata and funcdata arrays
	FuncData    int64 `json:"funcdata"`    // go:func.* funcdata blobs, when the layout delimits them; -1 if unknown
	FindFuncTab int64 `json:"findfunctab"` // the findfunc bucket table, computed from the text span as the linker sizes it
	Total       int64 `json:"total"`       // the whole pclntab as located in the file
}

// File is a Go binary's pclntab, parsed.
type File struct {
	Path      string           // file path, if opened by Open
	FileSize  int64            // size of the file in bytes, if known
	Format    string           // "elf", "macho", "pe", "xcoff", "plan9" or "wasm"
	GOOS      string           // target operating system
	GOARCH    string           // target architecture
	GoVersion string           // toolchain version from the build info, e.g. "go1.26.8", or else from the runtime.buildVersion string; "" if neither is found
	ByteOrder binary.ByteOrder // byte order of the target
	PtrSize   int              // pointer size, 4 or 8
	PCQuantum int              // minimum instruction size (1, 2 or 4)
	Magic     uint32           // pclntab magic: the Go magic of the layout read (see ForeignMagic)
	Version   string           // pclntab layout: "go1.2", "go1.16", "go1.18" or "go1.20"

	// ForeignMagic reports a pcHeader whose magic is none of Go's, as
	// garble (mvdan.cc/garble) writes a random one: every other field of
	// the header matched the layout of Magic, the layout of the release
	// the build info names (obfuscated.go). HeaderMagic holds the magic
	// the header has: Magic, unless ForeignMagic.
	ForeignMagic bool
	HeaderMagic  uint32
	// EntryOffKey is the key each _func record's entryOff is encrypted
	// with, as garble does (entryOff XOR nameOff*EntryOffKey, which its
	// runtime decrypts): one key makes every record's entryOff its
	// functab entry. 0 when the records hold plain entryOffs.
	EntryOffKey uint32

	PclntabAddr   uint64 // virtual address of the pclntab
	PclntabSource string // how the pclntab was found: "section .gopclntab", "symbols", "magic scan"
	TextStart     uint64 // text base that entry offsets are relative to (Go 1.18+); 0 before
	TextSource    string // how TextStart was derived: "runtime.text symbol", "moduledata", ...
	GoFuncAddr    uint64 // address of go:func.* (Go 1.18+), which funcdata offsets are relative to (the text start in a replace-mode pclntab converted from Go 1.2-1.17); 0 if unknown

	Sizes Sizes
	Funcs []Func  // functions in functab order (sorted by entry)
	Files int     // number of file names in the file table (header's nfiles)
	Tabs  []Table // distinct PC-value tables, sorted by offset

	Linear *Linear // linear tables of a binary rewritten by cmd/rewrite-binary (linear.go); nil otherwise

	pcln     []byte // the pclntab bytes
	pctab    []byte // the pctab: table offsets index this slice
	names    []byte // funcnametab (Go 1.16+), or the pclntab (Go 1.2)
	namesOff uint64 // offset of names in pcln
	ftabOff  uint64 // offset of the functab in pcln
	cutab    []byte
	filetab  []byte
	im       *image
	closer   io.Closer
	md       *moduledata // found by findModuledata, or nil
	// wasmIndexes is set for a wasm functab of function indexes, which
	// textAddr shifts into PCs (wasmIndexes, the function).
	wasmIndexes bool
	arrayBudget uint64 // pcdata+funcdata entries still allowed
	// guessedMinor is the release whose _func records and inline trees
	// a go1.2-layout binary of unknown version has (guessRecordRelease,
	// decodeInlTreesAnyRelease); 0 if none.
	guessedMinor int
	strs         *strtabs // reads the names while parsing; nil after
}

// Func is one function of the pclntab: the fields of the runtime's _func.
type Func struct {
	Name        string
	Entry       uint64 // entry PC
	End         uint64 // entry PC of the next function (the runtime's notion of the function's extent)
	Size        uint64 // bytes of code that the function's tables cover (the longest of its tables)
	Args        int32  // size of the arguments, or ArgsSizeUnknown
	Deferreturn uint32 // offset of the deferreturn call from entry, 0 if none
	FuncID      uint8
	Flag        uint8 // FuncFlag (Go 1.17+)
	StartLine   int32 // line of the func keyword (Go 1.20+); 0 before
	CUOffset    uint32
	Offset      uint32 // offset of the _func record within the functab part of the pclntab

	NameOff uint32 // offset of Name in the funcnametab (Go 1.16+), or in the pclntab (Go 1.2-1.15)

	PCSP   uint32   // pctab offset of the pcsp table; 0 = none
	PCFile uint32   // pctab offset of the pcfile table
	PCLn   uint32   // pctab offset of the pcln table
	PCData []uint32 // pctab offsets of the PCDATA tables, indexed by PCDATA id

	// FuncData holds the raw funcdata references, indexed by FUNCDATA id.
	// From Go 1.18 on they are offsets from go:func.* (NoFuncData = none);
	// before, absolute addresses (0 = none).
	FuncData []uint64

	// InlTree is the function's decoded inline tree (FUNCDATA_InlTree),
	// indexed by the values of its InlTreeIndex table; nil if it has none.
	// Functions that name the same tree share one slice: treat it as
	// read-only.
	InlTree []InlinedCall
}

// NoFuncData marks an absent funcdata reference in Go 1.18+ binaries.
const NoFuncData = 0xffffffff

// InlinedCall is one entry of an inline tree.
type InlinedCall struct {
	FuncID    uint8
	Name      string // name of the inlined (called) function
	ParentPC  int32  // offset from the outer function's entry of an instruction whose position is the call site; -1 before go1.12, which did not record it
	StartLine int32  // line of the inlined function's func keyword (Go 1.20+ layout)
	// Before the Go 1.20 layout, an entry records its parent entry and the
	// call site's file and line directly.
	Parent int16  // index of the parent entry, -1 if the parent is the outer function
	File   string // call site file (old layout only)
	Line   int32  // call site line (old layout only)
	// NameOff is the entry's nameOff field: the offset of Name in the
	// funcnametab (Go 1.16+), or in the pclntab (Go 1.2-1.15).
	NameOff uint32
}

// TableKind names the role of a PC-value table.
type TableKind uint8

// Table kinds. PCData kinds are KindPCData+id; the known ids have names.
const (
	KindPCSP          TableKind = 0
	KindPCFile        TableKind = 1
	KindPCLn          TableKind = 2
	KindPCData        TableKind = 3
	KindUnsafePoint             = KindPCData + 0
	KindStackMapIndex           = KindPCData + 1
	KindInlTreeIndex            = KindPCData + 2
	KindArgLiveIndex            = KindPCData + 3
	KindPanicBounds             = KindPCData + 4
	NumNamedKinds               = KindPanicBounds + 1
)

// String returns the table kind's name: pcsp, pcfile, pcln, or the
// PCDATA table's name.
func (k TableKind) String() string {
	switch k {
	case KindPCSP:
		return "pcsp"
	case KindPCFile:
		return "pcfile"
	case KindPCLn:
		return "pcln"
	case KindUnsafePoint:
		return "UnsafePoint"
	case KindStackMapIndex:
		return "StackMapIndex"
	case KindInlTreeIndex:
		return "InlTreeIndex"
	case KindArgLiveIndex:
		return "ArgLiveIndex"
	case KindPanicBounds:
		return "PanicBounds"
	}
	return fmt.Sprintf("PCData%d", k-KindPCData)
}

// KindName names a table kind as the release that built f numbers its
// PCDATA tables (runtime/funcdata.h of each release): TableKind's names are
// those of Go 1.16 and later, and older releases used the first ids for
// other tables. PCDATA ids a release did not define are "PCDataN".
//
//	go1.2–go1.8    0 StackMapIndex
//	go1.9–go1.12   0 StackMapIndex, 1 InlTreeIndex, 2 RegMapIndex
//	go1.13–go1.15  0 RegMapIndex, 1 StackMapIndex, 2 InlTreeIndex
//
// A go1.2-layout binary of unknown version is named as go1.13–go1.15. A
// replace-mode pclntab keeps the names of the release that built it.
func (f *File) KindName(k TableKind) string {
	if f.releaseMagic() != Go12Magic || k < KindPCData {
		return k.String()
	}
	var names []string
	switch v := f.layoutMinor(); {
	case v >= 0 && v <= 8:
		names = []string{"StackMapIndex"}
	case v >= 9 && v <= 12:
		names = []string{"StackMapIndex", "InlTreeIndex", "RegMapIndex"}
	default:
		names = []string{"RegMapIndex", "StackMapIndex", "InlTreeIndex"}
	}
	if id := int(k - KindPCData); id < len(names) {
		return names[id]
	}
	return fmt.Sprintf("PCData%d", k-KindPCData)
}

// Ref is one reference to a table: which function, in which role.
type Ref struct {
	Func int32 // index into File.Funcs
	Kind TableKind
}

// Table is a distinct PC-value table of the pctab.
type Table struct {
	Offset uint32 // offset in the pctab
	Data   []byte // the encoded varint table, terminator included
	Len    uint32 // PC-quantum units the table covers
	MaxVal int32  // largest value in the table (for inline trees)
	Refs   []Ref  // every function and role that references this table
}

// Open opens the named Go binary and parses its pclntab.
//
// It refuses a path that is not a regular file (see [ErrNotRegular]), and
// does so without blocking on a named pipe.
func Open(path string) (*File, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	ff, err := newFile(f, size)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ff.Path = path
	ff.closer = f
	return ff, nil
}

// NewFile parses the Go binary read from r. If r has a Size() int64 method
// (as *bytes.Reader and *io.SectionReader do), sections that claim to extend
// past that size are rejected before anything is allocated for them.
func NewFile(r io.ReaderAt) (*File, error) {
	size := int64(1<<63 - 1)
	if s, ok := r.(interface{ Size() int64 }); ok {
		size = s.Size()
	}
	return newFile(r, size)
}

// Close closes the underlying file, if Open opened it.
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

func newFile(r io.ReaderAt, size int64) (*File, error) {
	im, err := openImage(r, size)
	if err != nil {
		return nil, err
	}
	f := &File{Format: im.format, GOOS: im.goos, GOARCH: im.goarch, im: im}
	if size != 1<<63-1 {
		f.FileSize = size
	}
	goosKnown := false
	if bi, err := safely("build info", func() (*buildinfo.BuildInfo, error) { return buildinfo.Read(r) }); err == nil {
		f.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOOS":
				f.GOOS, goosKnown = s.Value, true
			case "GOARCH":
				f.GOARCH = s.Value
			}
		}
	} else if vers, mod := im.scanBuildInfo(); vers != "" {
		// Build info debug/buildinfo does not find: in a PIE without
		// section headers, or an XCOFF file without symbols.
		f.GoVersion = vers
		goos, goarch := buildSettings(mod)
		if goos != "" {
			f.GOOS, goosKnown = goos, true
		}
		if goarch != "" {
			f.GOARCH = goarch
		}
	}
	if f.GoVersion == "" {
		// No build info (before Go 1.13): the runtime's own copy of the
		// version, which the pclntab layout of old releases depends on.
		f.GoVersion = f.im.buildVersion()
	}
	if err := f.locate(size); err != nil {
		return nil, err
	}
	if err := f.parse(); err != nil {
		return nil, err
	}
	if err := f.finishLinear(r, size); err != nil { // rewritten binaries (linear.go)
		return nil, err
	}
	if !goosKnown && f.Format == "elf" && f.GOOS == "linux" {
		f.GOOS = f.elfOS()
	}
	return f, nil
}

// elfOS returns the GOOS of an ELF binary whose build info does not
// record it (Go 1.17 and earlier) and whose OSABI byte does not tell
// (Go sets it only for FreeBSD, NetBSD and OpenBSD; the System V value is
// read as linux): the OS of the runtime's entry point file, rt0_GOOS_GOARCH.s,
// or of its os_GOOS source file, in the file table (go1.13's illumos builds
// have rt0_illumos_amd64.s but only os_solaris.go); else android or solaris
// from the program interpreter of a dynamically linked binary; else linux.
func (f *File) elfOS() string { return elfGOOS(f.FileNames().Table(), f.im.interp) }

// elfGOOS is elfOS from the table of file names and the program
// interpreter.
func elfGOOS(table []byte, interp string) string {
	// illumos first: its builds have the solaris files too.
	for _, goos := range []string{"illumos", "android", "dragonfly", "solaris"} {
		if hasPathPrefix(table, "runtime/rt0_"+goos+"_") || hasPathPrefix(table, "runtime/os_"+goos+".") {
			return goos
		}
	}
	switch {
	case strings.HasPrefix(interp, "/system/bin/linker"):
		return "android"
	case strings.HasSuffix(interp, "/ld.so.1"): // /lib/amd64/ld.so.1, /usr/lib/ld.so.1
		return "solaris"
	}
	return "linux"
}

// hasPathPrefix reports whether a name in table, a list of NUL-terminated
// file names, starts with prefix, or has a path element that does.
func hasPathPrefix(table []byte, prefix string) bool {
	for off := 0; ; {
		i := bytes.Index(table[off:], []byte(prefix))
		if i < 0 {
			return false
		}
		at := off + i
		if at == 0 || table[at-1] == 0 || table[at-1] == '/' {
			return true
		}
		off = at + 1
	}
}

// layoutMinor returns the minor version of the release whose formats f
// has: GoMinor, or for a go1.2-layout binary of unknown version the release
// its inline trees were read as; -1 if neither is known.
func (f *File) layoutMinor() int {
	if v := goMinor(f.GoVersion); v >= 0 || f.guessedMinor == 0 {
		return v
	}
	return f.guessedMinor
}

// GoMinor returns the minor version of the release that built f
// (GoVersion "go1.15.15" gives 15), or -1 if GoVersion names none. Parts
// of the pclntab and funcdata formats depend on it before Go 1.16, and a
// replace-mode pclntab keeps the release's funcdata format.
func (f *File) GoMinor() int { return goMinor(f.GoVersion) }

// goMinor returns the minor version of a "go1.N..." version string, or -1.
func goMinor(v string) int {
	rest, ok := strings.CutPrefix(v, "go1.")
	if !ok {
		return -1
	}
	n := 0
	i := 0
	for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
		n = n*10 + int(rest[i]-'0')
	}
	if i == 0 {
		return -1
	}
	return n
}
