package runtimeshim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// Constants of internal/abi and cmd/link that the lookups depend on.
const (
	minFunc           = 16                         // abi.MINFUNC
	funcTabBucketSize = 256 * minFunc              // abi.FuncTabBucketSize
	nsub              = 16                         // len(findfuncbucket{}.subbuckets)
	subBucketSize     = funcTabBucketSize / nsub   // cmd/link SUBBUCKETSIZE
	noIdx             = 0x7fffffff                 // cmd/link NOIDX
	noFuncData        = uint32(objscan.NoFuncData) // funcdata offset of an absent funcdata
	noFile            = ^uint32(0)                 // cutab entry of a file the linker removed
	maxPCData         = 256                        // npcdata is a uint32, but real ones are < 8
	maxFuncData       = 255                        // nfuncdata is a uint8
	funcIDNone        = 0x100                      // a FuncID no function has
	textAddrMask      = uint64(1<<32 - 1)          // entry offsets are uint32
)

// PCDATA and FUNCDATA ids (internal/abi/symtab.go).
const (
	pcdataStackMapIndex = 1
	pcdataInlTreeIndex  = 2
	pcdataArgLiveIndex  = 3

	funcdataArgsPointerMaps   = 0
	funcdataLocalsPointerMaps = 1
	funcdataStackObjects      = 2
	funcdataInlTree           = 3
	funcdataArgInfo           = 5
	funcdataArgLiveInfo       = 6
)

// functab mirrors runtime.functab. funcoff is an index into a Shim's funcs
// rather than a byte offset into the pclntab.
type functab struct {
	entryoff uint32 // relative to text
	funcoff  uint32
}

// findfuncbucket mirrors runtime.findfuncbucket.
type findfuncbucket struct {
	idx        uint32
	subbuckets [nsub]byte
}

// inlinedCall mirrors runtime.inlinedCall.
type inlinedCall struct {
	funcID    uint8
	nameOff   int32 // into Module.funcnametab
	parentPc  int32
	startLine int32
}

// funcIDs holds the FuncID values that change what the lookups do. The
// numbering differs between releases, so they are read from the binary:
// the FuncIDs of the runtime functions of those names, and for wrappers the
// largest FuncID in use (FuncIDWrapper is the last FuncID of every release).
type funcIDs struct {
	gopanic, sigpanic, panicwrap, wrapper uint16
	asyncPreempt, debugCallV2             uint16
}

// A Module holds what the runtime's moduledata holds for one binary: the
// function table, the findfunc bucket table, the function and file name
// tables and the varint pctab. It is shared by the Shims of every encoding.
// A Module is read-only once built, except for its cache of encoded sets:
// NewShim must not be called from several goroutines at once.
type Module struct {
	goarch  string
	goos    string
	version string
	ptrSize uint64
	quantum uint32
	qshift  uint8

	text, minpc, maxpc uint64
	ftab               []functab        // nfunc+1 entries
	findfunctab        []findfuncbucket // rebuilt from ftab
	funcnametab        string           // NUL-terminated names; offset 0 reads as ""
	filetab            string           // NUL-terminated file names
	cutab              []uint32         // cuOffset+fileno -> filetab offset, or noFile
	pctab              []byte
	gofunc             uint64 // address of go:func.*; funcdata offsets are relative to it

	funcs    []_func // varint table references (pctab offsets)
	names    []string
	nameOffs map[string]int32
	ids      funcIDs

	obj     *objscan.File
	tabs    map[uint32]int     // pctab offset -> index in obj.Tabs
	decoded []pcvalue.Table    // decoded tables, in obj.Tabs order, built on first use
	sets    map[string]*setRef // linear sets by variant name
}

// ErrUnsupported is returned (wrapped) by NewModule for binaries whose
// pclntab layout the shim does not model: it mirrors the Go 1.20+ runtime.
var ErrUnsupported = errors.New("runtimeshim: unsupported binary")

// NewModule builds the module of a parsed binary. The binary must use the
// Go 1.20+ pclntab layout (magic 0xfffffff1).
func NewModule(f *objscan.File) (*Module, error) {
	if f.Linear != nil && f.Linear.Mode == "replace" {
		return nil, fmt.Errorf("%w: pclntab layout %s: its tables are linear only (rewrite-binary's replace mode, or pctab-toolchain), and the shim reads a stock binary's varint tables; replay the original or the twin", ErrUnsupported, f.Version)
	}
	if f.Magic != objscan.Go120Magic {
		return nil, fmt.Errorf("%w: pclntab layout %s; the shim models Go 1.20 and later", ErrUnsupported, f.Version)
	}
	if len(f.Funcs) == 0 {
		return nil, fmt.Errorf("%w: no functions", ErrUnsupported)
	}
	m := &Module{
		goarch:  f.GOARCH,
		goos:    f.GOOS,
		version: f.GoVersion,
		ptrSize: uint64(f.PtrSize),
		quantum: uint32(f.PCQuantum),
		text:    f.TextStart,
		pctab:   f.PCTab(),
		gofunc:  f.GoFuncAddr,
		obj:     f,
		sets:    map[string]*setRef{},
	}
	switch f.PCQuantum {
	case 1:
		m.qshift = 0
	case 2:
		m.qshift = 1
	case 4:
		m.qshift = 2
	default:
		return nil, fmt.Errorf("%w: PC quantum %d", ErrUnsupported, f.PCQuantum)
	}
	if err := m.buildFtab(f); err != nil {
		return nil, err
	}
	if err := m.buildFindfunctab(); err != nil {
		return nil, err
	}
	m.buildNames(f)
	if err := m.buildFuncs(f); err != nil {
		return nil, err
	}
	if err := m.buildFiles(f); err != nil {
		return nil, err
	}
	m.buildFuncIDs(f)
	return m, nil
}

// GOARCH returns the architecture of the binary.
func (m *Module) GOARCH() string { return m.goarch }

// GOOS returns the operating system of the binary.
func (m *Module) GOOS() string { return m.goos }

// GoVersion returns the toolchain version recorded in the binary, or "".
func (m *Module) GoVersion() string { return m.version }

// NumFuncs returns the number of functions in the function table.
func (m *Module) NumFuncs() int { return len(m.funcs) }

// PCQuantum returns the architecture's minimum instruction size.
func (m *Module) PCQuantum() int { return int(m.quantum) }

// FuncByName returns the entry and end of the first function called name.
func (m *Module) FuncByName(name string) (entry, end uint64, ok bool) {
	for i, n := range m.names {
		if n == name {
			return m.text + uint64(m.ftab[i].entryoff), m.text + uint64(m.ftab[i+1].entryoff), true
		}
	}
	return 0, 0, false
}

func (m *Module) buildFtab(f *objscan.File) error {
	n := len(f.Funcs)
	m.ftab = make([]functab, n+1)
	m.names = make([]string, n)
	prev := uint64(0)
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if fn.Entry < m.text || fn.Entry-m.text > textAddrMask || fn.Entry < prev {
			return fmt.Errorf("%w: function %d (%s) at %#x is not in order after text %#x", ErrUnsupported, i, fn.Name, fn.Entry, m.text)
		}
		prev = fn.Entry
		m.ftab[i] = functab{entryoff: uint32(fn.Entry - m.text), funcoff: uint32(i)}
		m.names[i] = fn.Name
	}
	last := &f.Funcs[n-1]
	if last.End < last.Entry || last.End-m.text > textAddrMask {
		return fmt.Errorf("%w: end of text %#x before the last function %#x", ErrUnsupported, last.End, last.Entry)
	}
	m.ftab[n] = functab{entryoff: uint32(last.End - m.text), funcoff: ^uint32(0)}
	m.minpc = f.Funcs[0].Entry
	m.maxpc = last.End
	return nil
}

// buildFindfunctab rebuilds runtime.findfunctab from the function table
// the way cmd/link's (*Link).findfunctab writes it: for every 256-byte
// subbucket of text, the lowest index of a function that overlaps it,
// stored per 4096-byte bucket as a base index and 16 byte-sized deltas.
func (m *Module) buildFindfunctab() error {
	lo, hi := m.minpc, m.maxpc
	if hi <= lo {
		return fmt.Errorf("%w: empty text [%#x, %#x)", ErrUnsupported, lo, hi)
	}
	n := int((hi - lo + subBucketSize - 1) / subBucketSize)
	nbuckets := int((hi - lo + funcTabBucketSize - 1) / funcTabBucketSize)
	indexes := make([]int32, n)
	for i := range indexes {
		indexes[i] = noIdx
	}
	nfunc := len(m.ftab) - 1
	for idx := 0; idx < nfunc; idx++ {
		p := m.text + uint64(m.ftab[idx].entryoff)
		q := m.text + uint64(m.ftab[idx+1].entryoff)
		for ; p < q; p += subBucketSize {
			i := (p - lo) / subBucketSize
			indexes[i] = min(indexes[i], int32(idx))
		}
		if q > lo {
			i := (q - 1 - lo) / subBucketSize
			indexes[i] = min(indexes[i], int32(idx))
		}
	}
	m.findfunctab = make([]findfuncbucket, nbuckets)
	for i := 0; i < nbuckets; i++ {
		base := indexes[i*nsub]
		if base == noIdx {
			return fmt.Errorf("%w: hole in findfunctab at bucket %d", ErrUnsupported, i)
		}
		m.findfunctab[i].idx = uint32(base)
		for j := 0; j < nsub && i*nsub+j < n; j++ {
			idx := indexes[i*nsub+j]
			if idx == noIdx {
				return fmt.Errorf("%w: hole in findfunctab at subbucket %d", ErrUnsupported, i*nsub+j)
			}
			if idx-base >= 256 {
				return fmt.Errorf("%w: too many functions in findfunc bucket %d", ErrUnsupported, i)
			}
			m.findfunctab[i].subbuckets[j] = uint8(idx - base)
		}
	}
	return nil
}

// buildNames builds funcnametab: the first function's name at offset 0,
// then every other distinct function and inlined-function name.
func (m *Module) buildNames(f *objscan.File) {
	var b strings.Builder
	offs := map[string]int32{}
	add := func(name string) {
		if _, ok := offs[name]; ok {
			return
		}
		offs[name] = int32(b.Len())
		b.WriteString(name)
		b.WriteByte(0)
	}
	for i := range f.Funcs {
		add(f.Funcs[i].Name)
	}
	for i := range f.Funcs {
		for _, c := range f.Funcs[i].InlTree {
			add(c.Name)
		}
	}
	m.funcnametab = b.String()
	m.nameOffs = offs
}

func (m *Module) buildFuncs(f *objscan.File) error {
	m.funcs = make([]_func, len(f.Funcs))
	npcdata, nfuncdata, ninl := 0, 0, 0
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if len(fn.PCData) > maxPCData || len(fn.FuncData) > maxFuncData {
			return fmt.Errorf("%w: %s has %d pcdata and %d funcdata entries", ErrUnsupported, fn.Name, len(fn.PCData), len(fn.FuncData))
		}
		npcdata += len(fn.PCData)
		nfuncdata += len(fn.FuncData)
		ninl += len(fn.InlTree)
	}
	pcdata := make([]tab, 0, npcdata)
	funcdata := make([]uint32, 0, nfuncdata)
	inl := make([]inlinedCall, 0, ninl)
	m.tabs = make(map[uint32]int, len(f.Tabs))
	for i := range f.Tabs {
		m.tabs[f.Tabs[i].Offset] = i
	}
	ref := func(off uint32) (tab, error) {
		if off == 0 {
			return tab{}, nil
		}
		i, ok := m.tabs[off]
		if !ok {
			return tab{}, fmt.Errorf("%w: no table at pctab offset %#x", ErrUnsupported, off)
		}
		return tab{off: off, n: f.Tabs[i].Len}, nil
	}
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		mf := &m.funcs[i]
		mf.entryOff = m.ftab[i].entryoff
		mf.nameOff = m.nameOffs[fn.Name]
		mf.args = fn.Args
		mf.deferreturn = fn.Deferreturn
		mf.cuOffset = fn.CUOffset
		mf.startLine = fn.StartLine
		mf.funcID = fn.FuncID
		mf.flag = fn.Flag
		var err error
		if mf.pcsp, err = ref(fn.PCSP); err != nil {
			return err
		}
		if mf.pcfile, err = ref(fn.PCFile); err != nil {
			return err
		}
		if mf.pcln, err = ref(fn.PCLn); err != nil {
			return err
		}
		start := len(pcdata)
		for _, off := range fn.PCData {
			r, err := ref(off)
			if err != nil {
				return err
			}
			pcdata = append(pcdata, r)
		}
		mf.pcdata = pcdata[start:len(pcdata):len(pcdata)]
		mf.npcdata = uint32(len(mf.pcdata))
		start = len(funcdata)
		for _, d := range fn.FuncData {
			if d > uint64(noFuncData) {
				return fmt.Errorf("%w: %s: funcdata reference %#x is not a go:func.* offset", ErrUnsupported, fn.Name, d)
			}
			funcdata = append(funcdata, uint32(d))
		}
		mf.funcdata = funcdata[start:len(funcdata):len(funcdata)]
		mf.nfuncdata = uint8(len(mf.funcdata))
		start = len(inl)
		for _, c := range fn.InlTree {
			inl = append(inl, inlinedCall{funcID: c.FuncID, nameOff: m.nameOffs[c.Name], parentPc: c.ParentPC, startLine: c.StartLine})
		}
		mf.inlTree = inl[start:len(inl):len(inl)]
	}
	return nil
}

// buildFiles rebuilds cutab for the file indices the pcfile tables use,
// and filetab: cutab[cuOffset+fileno] is the offset in filetab, a copy of
// the binary's table of file names, of the name objscan reads for that
// entry of the binary's cutab, or noFile when the linker removed the file
// (or the entry cannot be read).
func (m *Module) buildFiles(f *objscan.File) error {
	type key struct{ cu, file uint32 }
	want := map[key]*objscan.Func{}
	maxKey := uint64(0)
	// The binary's cutab bounds the entries that can name a file: an index
	// past it cannot be read (the runtime would print "?"), so it takes no
	// slot, and the rebuilt cutab is never larger than the binary's.
	entries := uint64(max(f.Sizes.CUTab, 0)) / 4
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if fn.PCFile == 0 || fn.CUOffset == ^uint32(0) {
			continue
		}
		t := f.Table(fn.PCFile)
		if t == nil {
			return fmt.Errorf("%w: %s: no pcfile table at %#x", ErrUnsupported, fn.Name, fn.PCFile)
		}
		dec, _, err := varintpc.Decode(t.Data)
		if err != nil {
			return fmt.Errorf("runtimeshim: pcfile table of %s: %w", fn.Name, err)
		}
		for _, r := range dec.Runs {
			if r.Value < 0 {
				continue
			}
			k := key{fn.CUOffset, uint32(r.Value)}
			if uint64(k.cu)+uint64(k.file) >= entries {
				continue
			}
			if _, ok := want[k]; ok {
				continue
			}
			want[k] = fn
			if s := uint64(fn.CUOffset) + uint64(r.Value); s+1 > maxKey {
				maxKey = s + 1
			}
		}
	}
	m.cutab = make([]uint32, maxKey)
	for i := range m.cutab {
		m.cutab[i] = noFile
	}
	// The names stay where the binary has them, in a copy of its table
	// of file names: entries that share a name, or name the end of
	// another, cost nothing more (objscan.FileNames).
	names := f.FileNames()
	for k, fn := range want {
		if _, off, err := names.Name(fn, int32(k.file)); err == nil {
			m.cutab[k.cu+k.file] = off
		} // else the runtime prints "?" for such a file
	}
	m.filetab = string(names.Table())
	return nil
}

func (m *Module) buildFuncIDs(f *objscan.File) {
	none := uint16(funcIDNone)
	m.ids = funcIDs{gopanic: none, sigpanic: none, panicwrap: none, wrapper: none, asyncPreempt: none, debugCallV2: none}
	byName := map[string]*uint16{
		"runtime.gopanic":      &m.ids.gopanic,
		"runtime.sigpanic":     &m.ids.sigpanic,
		"runtime.panicwrap":    &m.ids.panicwrap,
		"runtime.asyncPreempt": &m.ids.asyncPreempt,
		"runtime.debugCallV2":  &m.ids.debugCallV2,
	}
	maxID := uint8(0)
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		// A FuncID of 0 is FuncIDNormal: a release that did not mark the
		// function leaves it unmatched.
		if p, ok := byName[fn.Name]; ok && fn.FuncID != 0 {
			*p = uint16(fn.FuncID)
		}
		maxID = max(maxID, fn.FuncID)
		for _, c := range fn.InlTree {
			maxID = max(maxID, c.FuncID)
		}
	}
	if maxID > 0 {
		m.ids.wrapper = uint16(maxID)
	}
}

// decodedTables decodes every distinct table of the binary once.
func (m *Module) decodedTables() ([]pcvalue.Table, error) {
	if m.decoded != nil {
		return m.decoded, nil
	}
	dec := make([]pcvalue.Table, len(m.obj.Tabs))
	for i := range m.obj.Tabs {
		t := &m.obj.Tabs[i]
		d, _, err := varintpc.Decode(t.Data)
		if err != nil {
			return nil, fmt.Errorf("runtimeshim: table at pctab offset %#x: %w", t.Offset, err)
		}
		if d.Len != t.Len {
			return nil, fmt.Errorf("runtimeshim: table at pctab offset %#x: decoded length %d, objscan %d", t.Offset, d.Len, t.Len)
		}
		dec[i] = d
	}
	m.decoded = dec
	return dec, nil
}
