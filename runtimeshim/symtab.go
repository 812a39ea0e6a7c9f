package runtimeshim

import (
	"strings"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/varintpc"
)

// tab is a reference to one PC-value table in a Shim's encoding: for the
// varint encodings the table's pctab offset (0 = none, as in _func), for
// the linear ones its offset in the set. n is the number of PC-quantum
// units the table covers; a linear lookup needs it, and it is 0 when the
// function has no such table.
type tab struct {
	off uint32
	n   uint32
}

// _func mirrors runtime._func. Its table fields hold references in the
// encoding of the Shim that owns it; pcdata and funcdata are the arrays that
// follow the record in the binary.
type _func struct {
	entryOff    uint32
	nameOff     int32
	args        int32
	deferreturn uint32
	pcsp        tab
	pcfile      tab
	pcln        tab
	npcdata     uint32
	cuOffset    uint32
	startLine   int32
	funcID      uint8
	flag        uint8
	nfuncdata   uint8
	pcdata      []tab
	funcdata    []uint32 // offsets from go:func.*, noFuncData for none
	inlTree     []inlinedCall
}

// funcInfo mirrors runtime.funcInfo.
type funcInfo struct {
	*_func
	datap *Module
}

func (f funcInfo) valid() bool { return f._func != nil }

// entry returns the entry PC of f (moduledata.textAddr with one text
// section).
func (f funcInfo) entry() uint64 { return f.datap.text + uint64(f.entryOff) }

// A Shim runs the runtime's lookups over one encoding of a Module's tables.
// It counts the table lookups it makes and, for the varint+cache encoding,
// keeps one pcvalue cache per simulated M. A Shim must not be used by
// several goroutines at once.
type Shim struct {
	md      *Module
	enc     Encoding
	kind    encKind
	funcs   []_func
	pctab   []byte
	set     *linearpc.Set
	quantum uint32
	qshift  uint8

	caches []*varintpc.Cache
	cache  *varintpc.Cache // the current M's

	pcbuf []uint64 // the PCs the Callers workload writes, as runtime.Callers does

	lookups uint64 // pcvalue calls that reached a table
	errors  uint64 // strict lookups the table did not cover (the runtime throws)
	sink    uint64 // results folded in, so that the work cannot be optimized away
}

// findfunc mirrors runtime.findfunc: the module's pc range, the bucket and
// subbucket of findfunctab, then a linear scan of ftab.
func (s *Shim) findfunc(pc uint64) funcInfo {
	datap := s.md
	if pc < datap.minpc || pc >= datap.maxpc {
		return funcInfo{}
	}
	pcOff := uint32(pc - datap.text) // textOff with one text section
	x := uint64(pcOff) + datap.text - datap.minpc
	b := x / funcTabBucketSize
	i := x % funcTabBucketSize / (funcTabBucketSize / nsub)
	ffb := &datap.findfunctab[b]
	idx := ffb.idx + uint32(ffb.subbuckets[i])
	for datap.ftab[idx+1].entryoff <= pcOff {
		idx++
	}
	return funcInfo{&s.funcs[datap.ftab[idx].funcoff], datap}
}

// findfuncIndex is findfunc returning the ftab index.
func (m *Module) findfuncIndex(pc uint64) (int, bool) {
	if pc < m.minpc || pc >= m.maxpc {
		return 0, false
	}
	pcOff := uint32(pc - m.text)
	x := uint64(pcOff) + m.text - m.minpc
	ffb := &m.findfunctab[x/funcTabBucketSize]
	idx := ffb.idx + uint32(ffb.subbuckets[x%funcTabBucketSize/(funcTabBucketSize/nsub)])
	for m.ftab[idx+1].entryoff <= pcOff {
		idx++
	}
	return int(idx), true
}

// pcvalue mirrors runtime.pcvalue: the value at targetpc of the table t of
// function f, or -1 when f has no such table or (non-strict) the table does
// not cover targetpc. Where the runtime would throw, it returns -1 and
// counts an error.
func (s *Shim) pcvalue(f funcInfo, t tab, targetpc uint64, strict bool) int32 {
	switch s.kind {
	case encLinear:
		if t.n == 0 {
			return -1
		}
		s.lookups++
		pc := (targetpc - f.entry()) >> s.qshift
		if pc >= uint64(t.n) {
			if strict {
				s.errors++
			}
			return -1
		}
		// The leaf lookup, and Set.Lookup for what it leaves (linearpc's
		// try.go): the shape a runtime would use.
		if v, ok := s.set.TryLookup(t.off, t.n, uint32(pc)); ok {
			return v
		}
		return s.set.Lookup(t.off, t.n, uint32(pc))
	case encVarint, encVarintCache:
		if t.off == 0 {
			return -1
		}
		s.lookups++
		// Every table the module references decoded within pctab
		// (NewModule), so the trusting runtime-shaped walk is safe.
		var v int32
		var ok bool
		if s.kind == encVarint {
			v, _, ok = varintpc.PCValue(s.pctab, t.off, uintptr(f.entry()), uintptr(targetpc), s.quantum)
		} else {
			v, _, ok = s.cache.PCValue(s.pctab, t.off, uintptr(f.entry()), uintptr(targetpc), s.quantum)
		}
		if !ok && strict {
			s.errors++
		}
		return v
	case encVarintWalkCache:
		if t.off == 0 {
			return -1
		}
		s.lookups++
		v, _, err := s.cache.Lookup(t.off, s.pctab[t.off:], uintptr(f.entry()), uintptr(targetpc), s.quantum, strict)
		if err != nil {
			s.errors++
			return -1
		}
		return v
	default:
		if t.off == 0 {
			return -1
		}
		s.lookups++
		v, _, err := varintpc.Lookup(s.pctab[t.off:], uintptr(targetpc-f.entry()), s.quantum, strict)
		if err != nil {
			s.errors++
			return -1
		}
		return v
	}
}

// funcname mirrors runtime.funcname.
func (s *Shim) funcname(f funcInfo) string {
	if !f.valid() {
		return ""
	}
	return f.datap.funcName(f.nameOff)
}

// funcName mirrors moduledata.funcName: the NUL-terminated name at nameOff
// of funcnametab, or "" for offset 0.
func (m *Module) funcName(nameOff int32) string {
	if nameOff == 0 {
		return ""
	}
	return gostringnocopy(m.funcnametab, int(nameOff))
}

// gostringnocopy returns the NUL-terminated string at tab[off:] without
// copying it, scanning for the terminator as the runtime's findnull does.
func gostringnocopy(tab string, off int) string {
	if off < 0 || off >= len(tab) {
		return ""
	}
	s := tab[off:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// funcfile mirrors runtime.funcfile.
func (s *Shim) funcfile(f funcInfo, fileno int32) string {
	datap := f.datap
	if !f.valid() {
		return "?"
	}
	if i := uint64(f.cuOffset) + uint64(uint32(fileno)); i < uint64(len(datap.cutab)) {
		if fileoff := datap.cutab[i]; fileoff != noFile {
			return gostringnocopy(datap.filetab, int(fileoff))
		}
	}
	return "?"
}

// funcline1 mirrors runtime.funcline1: two table walks, pcfile and pcln,
// then the file name through cutab and filetab.
func (s *Shim) funcline1(f funcInfo, targetpc uint64, strict bool) (file string, line int32) {
	datap := f.datap
	if !f.valid() {
		return "?", 0
	}
	fileno := s.pcvalue(f, f.pcfile, targetpc, strict)
	line = s.pcvalue(f, f.pcln, targetpc, strict)
	if fileno == -1 || line == -1 || int(fileno) >= len(datap.filetab) {
		return "?", 0
	}
	file = s.funcfile(f, fileno)
	return file, line
}

// funcspdelta mirrors runtime.funcspdelta.
func (s *Shim) funcspdelta(f funcInfo, targetpc uint64) int32 {
	return s.pcvalue(f, f.pcsp, targetpc, true)
}

// pcdatavalue mirrors runtime.pcdatavalue.
func (s *Shim) pcdatavalue(f funcInfo, table uint32, targetpc uint64) int32 {
	if table >= f.npcdata {
		return -1
	}
	return s.pcvalue(f, f.pcdata[table], targetpc, true)
}

// pcdatavalue1 mirrors runtime.pcdatavalue1.
func (s *Shim) pcdatavalue1(f funcInfo, table uint32, targetpc uint64, strict bool) int32 {
	if table >= f.npcdata {
		return -1
	}
	return s.pcvalue(f, f.pcdata[table], targetpc, strict)
}

// funcdata mirrors runtime.funcdata: the address of the ith funcdata of f
// (go:func.* plus its offset), or 0 if f has none.
func funcdata(f funcInfo, i uint8) uint64 {
	if i >= f.nfuncdata {
		return 0
	}
	off := f.funcdata[i]
	if off == noFuncData {
		return 0
	}
	return f.datap.gofunc + uint64(off)
}

// srcFunc mirrors runtime.srcFunc: a logical function, real or inlined.
type srcFunc struct {
	datap     *Module
	nameOff   int32
	startLine int32
	funcID    uint8
}

func (f funcInfo) srcFunc() srcFunc {
	if !f.valid() {
		return srcFunc{}
	}
	return srcFunc{f.datap, f.nameOff, f.startLine, f.funcID}
}

func (sf srcFunc) name() string {
	if sf.datap == nil {
		return ""
	}
	return sf.datap.funcName(sf.nameOff)
}

// elideWrapperCalling mirrors runtime.elideWrapperCalling: a wrapper frame
// is hidden unless it called a panic function.
func (m *Module) elideWrapperCalling(id uint8) bool {
	i := uint16(id)
	return !(i == m.ids.gopanic || i == m.ids.sigpanic || i == m.ids.panicwrap)
}

// isInjected mirrors runtime.isInjectedCall: the callee was a call the
// signal handler injected, so the caller's PC is where it stopped rather
// than a return address.
func (m *Module) isInjected(id uint8) bool {
	i := uint16(id)
	return i == m.ids.sigpanic || i == m.ids.asyncPreempt || i == m.ids.debugCallV2
}

// isWrapper reports whether id is FuncIDWrapper.
func (m *Module) isWrapper(id uint8) bool { return uint16(id) == m.ids.wrapper }

// FuncNameForPrint mirrors runtime.funcNameForPrint: the shape arguments
// of a generic function's name, the text between the first '[' and the
// last ']', print as "...".
func FuncNameForPrint(name string) string {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return name
	}
	j := strings.LastIndexByte(name, ']')
	if j <= i {
		return name
	}
	return name[:i] + "[...]" + name[j+1:]
}
