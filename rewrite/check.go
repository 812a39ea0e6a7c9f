package rewrite

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"

	"github.com/pctab/pctab/internal/par"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
	"github.com/pctab/pctab/verify"
)

const maxExamples = 20

// maxVarintWalk bounds the bytes that checkVarintPCLn's lookups of one
// table walk (each walks the table from its start); a variable so that
// tests can lower it.
var maxVarintWalk uint64 = 1 << 30

// Check verifies a rewritten binary. For every distinct (linear table,
// function length) pair it compares, at every PC of the function, the
// linear lookup with the runtime-style varint lookup of the original table
// (strict where the varint table covers the PC, non-strict past its end,
// which gives -1), and checks that the checked spec lookup rejects the first
// PC past the end. It also checks that every function's other _func fields,
// its table presence and its length survived, and that the stored encodings
// are byte for byte what the encoder produces from the original tables.
//
// For an append-mode binary the original tables are in the same file and
// orig may be nil; if given, Check also requires the two pclntabs to be
// identical. A replace-mode binary needs orig, the binary it was made from;
// Check then also compares the parts of the pclntab that were copied (names,
// CU and file tables, funcdata, findfunctab), what objscan derives from
// the moduledata (text start, go:func.* address, funcdata size), and every
// inline tree. For a pclntab converted from a Go 1.2-1.17 layout, whose
// entries and funcdata became offsets from moduledata.text, it compares
// each funcdata offset with the original pointer and, for Go 1.2-1.15,
// whose name and file tables were rebuilt, every file name.
//
// Mismatches are counted in the result; an error means the check could not
// run. workers <= 0 means GOMAXPROCS.
func Check(rewritten, orig *objscan.File, workers int) (*verify.Result, error) {
	l := rewritten.Linear
	if l == nil {
		return nil, errors.New("check: not a rewritten binary (no linear tables)")
	}
	v, err := VariantByName(l.Variant)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if l.PCLnVarint && (l.Mode != "replace" || !l.Derived || v.Name != objscan.LinearVarintPCLnVariant) {
		return nil, fmt.Errorf("check: varint pcln tables in a %s-mode %s binary (derived lengths %v): rewrite-binary writes them only in replace mode with derived lengths", l.Mode, v.Name, l.Derived)
	}
	src := orig
	if l.Mode == "append" && src == nil {
		src = rewritten
	}
	if src == nil {
		return nil, errors.New("check: a replace-mode binary can only be checked against the binary it was made from")
	}
	if src.Linear != nil && src.Linear.Mode == "replace" {
		return nil, errors.New("check: the original binary is itself in the linear format")
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	res := &verify.Result{}
	fail := func(format string, args ...any) {
		res.Mismatches++
		if len(res.Examples) < maxExamples {
			res.Examples = append(res.Examples, fmt.Sprintf(format, args...))
		}
	}
	if len(rewritten.Funcs) != len(src.Funcs) || len(l.Funcs) != len(src.Funcs) {
		return nil, fmt.Errorf("check: %d functions (%d with linear tables), the original has %d", len(rewritten.Funcs), len(l.Funcs), len(src.Funcs))
	}
	if rewritten.PCQuantum != src.PCQuantum {
		return nil, fmt.Errorf("check: PC quantum %d, the original's is %d", rewritten.PCQuantum, src.PCQuantum)
	}
	// The encodings must be exactly what the encoder makes of the original.
	want, err := buildTables(src, v, l.Derived, l.PCLnVarint)
	if err != nil {
		return nil, fmt.Errorf("check: encoding the original tables: %w", err)
	}
	// Replace mode rounds the pctab up to the pointer size: the stored
	// data may end with more zero bytes than the encoder's.
	stored := l.Data[:min(len(l.Data), len(want.data))]
	sameData := bytes.Equal(want.data, stored) && len(bytes.Trim(l.Data[len(stored):], "\x00")) == 0
	if !sameData {
		fail("stored linear tables (%d bytes) differ from the encoding of the original tables (%d bytes)", len(l.Data), len(want.data))
	}
	checkFuncs(rewritten, src, want, fail)
	if orig != nil {
		checkPclntab(rewritten, orig, fail)
	}

	// The distinct (linear offset, length, varint table) triples. A
	// function whose stored length differs from the original's was reported
	// by checkFuncs; its tables are not looked up, so every loop below runs
	// over lengths derived from the original's tables, which objscan bounds
	// by each function's extent, never over a length read from the
	// rewritten file.
	type triple struct {
		lin, n, varint uint32
		fn             int
		slot           int
	}
	seen := map[[3]uint32]bool{}
	var work []triple
	for i := range src.Funcs {
		if l.Funcs[i].Len != want.funcLen[i] {
			continue
		}
		varint := funcOffsets(&src.Funcs[i])
		lin := l.Funcs[i].Offsets()
		for j := range min(len(varint), len(lin)) {
			k := [3]uint32{lin[j], l.Funcs[i].Len, varint[j]}
			if lin[j] == 0 || varint[j] == 0 || seen[k] {
				continue
			}
			seen[k] = true
			work = append(work, triple{lin[j], l.Funcs[i].Len, varint[j], i, j})
		}
	}
	res.Tables = len(work)
	q := uint32(src.PCQuantum)
	// The fast lookups trust their input: they run only on stored bytes
	// identical to the encoder's output. Other stored bytes are untrusted
	// and go through the checked spec decoder; variants without a checked
	// decoder are not looked up there (the byte difference is already a
	// mismatch). Pooled variants address tables relative to other tables of
	// their set, which linearpc exposes only through Set.Lookup: use the set
	// rebuilt above, which matched the stored bytes.
	trusted := sameData
	lookup := func(off, n, pc uint32) int32 {
		if v.Pooled() {
			return want.set.Lookup(off-1, n, pc)
		}
		return v.Lookup(l.Data[off:], n, pc)
	}
	dataEnd := uint64(0) // the encodings end where the padding starts
	if len(l.Data) >= objscan.LinearPad {
		dataEnd = uint64(len(l.Data) - objscan.LinearPad)
	}
	results := make([]verify.Result, workers)
	par.For(len(work), workers, func(w, i int) error {
		r := &results[w]
		wfail := func(format string, args ...any) {
			r.Mismatches++
			if len(r.Examples) < maxExamples {
				r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
			}
		}
		t := work[i]
		fn := &src.Funcs[t.fn]
		name := tableLabel{fn, t.slot, t.varint, t.lin, t.n}
		tab := src.Table(t.varint)
		if tab == nil {
			wfail("%s: no varint table at that offset", name)
			return nil
		}
		if uint64(t.lin) >= dataEnd {
			wfail("%s: linear offset outside the tables", name)
			return nil
		}
		if l.PCLnVarint && t.slot == 2 {
			checkVarintPCLn(r, wfail, name, l.Data[t.lin:dataEnd], tab, t.n, fn.Size, q)
			return nil
		}
		if !trusted && !v.IsSpec() {
			wfail("%s: stored bytes differ from the encoder's and variant %s has no checked decoder", name, v.Name)
			return nil
		}
		// The original's values come from its decoded runs: a varint
		// lookup at every PC walks the table from its start each time,
		// hours for a generated function of megabytes (pctab-stats
		// verify checks the varint lookups themselves).
		orig, _, err := varintpc.Decode(tab.Data)
		if err != nil {
			wfail("%s: the original varint table: %v", name, err)
			return nil
		}
		ri := 0
		for pc := uint32(0); pc < t.n; pc++ {
			r.PCs++
			// Derived lengths carry the value at the function's last
			// unit over the padding to the next entry.
			vpc := min(pc, max(uint32(fn.Size)/q, 1)-1)
			want := int32(-1) // a non-strict varint lookup's value past the table
			if vpc < orig.Len {
				for ri+1 < len(orig.Runs) && orig.Runs[ri+1].PC <= vpc {
					ri++
				}
				want = orig.Runs[ri].Value
			}
			if trusted {
				r.Lookups++
				if got := lookup(t.lin, t.n, pc); got != want {
					wfail("%s pc %#x: linear %d, varint %d", name, pc*q, got, want)
				}
			}
			if v.IsSpec() {
				got, err := linearpc.LookupChecked(l.Data[t.lin:], t.n, pc)
				r.Lookups++
				if err != nil || got != want {
					wfail("%s pc %#x: checked linear lookup %d (%v), varint %d", name, pc*q, got, err, want)
					if err != nil {
						break // the table is corrupt: one error says so
					}
				}
			}
		}
		if v.IsSpec() {
			r.Lookups++
			if _, err := linearpc.LookupChecked(l.Data[t.lin:], t.n, t.n); !errors.Is(err, linearpc.ErrRange) {
				wfail("%s: checked lookup past the end gave %v, want ErrRange", name, err)
			}
		}
		return nil
	})
	for _, r := range results {
		res.PCs += r.PCs
		res.Lookups += r.Lookups
		res.Mismatches += r.Mismatches
		res.VarintSampled += r.VarintSampled
		for _, e := range r.Examples {
			if len(res.Examples) < maxExamples {
				res.Examples = append(res.Examples, e)
			}
		}
	}
	return res, nil
}

// checkVarintPCLn checks a pcln table that a cfps-varint-pcln binary
// stores in varint at the start of stored: its bytes must be the original
// table's, and a checked varint lookup of them must give the original's
// value (from the original's decoded runs) at each of the n PC units the
// function covers (past the table, with derived lengths, the value at the
// function's last unit). A lookup walks the table from its start, so when
// a lookup at every unit would walk more than maxVarintWalk bytes, only
// the first and last unit of every k-th run are looked up, k chosen to
// keep within it, and the table counts in r.VarintSampled.
func checkVarintPCLn(r *verify.Result, fail func(string, ...any), name tableLabel, stored []byte, tab *objscan.Table, n uint32, size uint64, q uint32) {
	if len(stored) < len(tab.Data) || !bytes.Equal(stored[:len(tab.Data)], tab.Data) {
		fail("%s: the stored varint bytes differ from the original's %d bytes", name, len(tab.Data))
		return
	}
	t, _, err := varintpc.Decode(tab.Data)
	if err != nil || len(t.Runs) == 0 {
		fail("%s: the original varint table does not decode: %v", name, err)
		return
	}
	last := max(uint32(size)/q, 1) - 1 // the function's last unit
	stride := uint64(1)
	if work := uint64(n) * uint64(len(tab.Data)); work > maxVarintWalk {
		stride = (uint64(len(t.Runs))*uint64(len(tab.Data)) + maxVarintWalk - 1) / maxVarintWalk
		r.VarintSampled++
	}
	ri := 0
	for pc := uint32(0); pc < n; pc++ {
		vpc := min(pc, last)
		for ri+1 < len(t.Runs) && t.Runs[ri+1].PC <= vpc {
			ri++
		}
		r.PCs++
		if stride > 1 && !runEdge(t.Runs, ri, vpc, t.Len, stride) && pc != n-1 {
			continue
		}
		want := int32(-1)
		if vpc < t.Len {
			want = t.Runs[ri].Value
		}
		got, _, err := varintpc.Lookup(stored, uintptr(vpc*q), q, vpc < t.Len)
		r.Lookups++
		if err != nil || got != want {
			fail("%s pc %#x: stored varint %d (%v), original %d", name, pc*q, got, err, want)
			return
		}
	}
}

// runEdge reports whether unit pc, in run ri of runs (a table of tlen
// units), is the first or last unit of a run checked when every stride-th
// run is, or of the last run.
func runEdge(runs []pcvalue.Run, ri int, pc, tlen uint32, stride uint64) bool {
	if uint64(ri)%stride != 0 && ri != len(runs)-1 {
		return false
	}
	end := tlen
	if ri+1 < len(runs) {
		end = runs[ri+1].PC
	}
	return pc == runs[ri].PC || pc+1 == end || pc == tlen
}

// sameInlTree reports whether two inline trees are the same but for
// their entries' name offsets, which a converted pclntab's new
// funcnametab changes (the names themselves are compared).
func sameInlTree(a, b []objscan.InlinedCall) bool {
	return slices.EqualFunc(a, b, func(x, y objscan.InlinedCall) bool {
		x.NameOff = y.NameOff
		return x == y
	})
}

// tableLabel names a table of a function in Check's messages. It is
// formatted only when a message is kept: a hostile file's functions may
// share a long name, which formatting for every table cost its size per
// table (1,000 functions of a Go 1.15 build sharing a 100,000-byte name:
// 1.0 GB in an append-mode rewrite).
type tableLabel struct {
	fn             *objscan.Func
	slot           int
	varint, lin, n uint32
}

func (l tableLabel) String() string {
	return fmt.Sprintf("%s table %d of %s (varint %#x, linear %#x, %d units)", slotName(l.slot), l.slot, l.fn.Name, l.varint, l.lin, l.n)
}

// slotName names table slot j of a function: pcsp, pcfile, pcln, PCDATA.
func slotName(j int) string {
	if j < 3 {
		return objscan.TableKind(j).String()
	}
	return "PCDATA"
}

// checkFuncs compares the functions of the rewritten binary with the
// original's: every field but the table offsets, the presence of every
// table, and each function's length.
func checkFuncs(rw, src *objscan.File, want *linearTables, fail func(string, ...any)) {
	l := rw.Linear
	converted := l.Mode == "replace" && isConverted(src)
	trees := rw.InlineTrees()
	for i := range src.Funcs {
		a, b := &rw.Funcs[i], &src.Funcs[i]
		sameFD := reflect.DeepEqual(a.FuncData, b.FuncData)
		if converted {
			sameFD = sameConvertedFuncData(a.FuncData, b.FuncData, rw.GoFuncAddr)
		}
		if a.Name != b.Name || a.Entry != b.Entry || a.End != b.End || a.Args != b.Args || a.Deferreturn != b.Deferreturn ||
			a.FuncID != b.FuncID || a.Flag != b.Flag || a.StartLine != b.StartLine || a.CUOffset != b.CUOffset ||
			!sameFD || len(a.PCData) != len(b.PCData) {
			fail("function %d (%s): _func fields differ from the original's (%s)", i, a.Name, b.Name)
			continue
		}
		if l.Mode == "replace" && b.InlTree != nil {
			// The trees stay in the funcdata; a converted Go 1.2-1.15
			// binary's have new name offsets.
			tree, err := trees.Tree(a, len(b.InlTree))
			if err != nil || !sameInlTree(tree, b.InlTree) {
				fail("function %s: inline tree differs from the original's (%v)", a.Name, err)
			}
		}
		if a.Size != uint64(want.funcLen[i])*uint64(src.PCQuantum) || l.Funcs[i].Len != want.funcLen[i] {
			fail("function %s: length %d units (%d bytes), want %d (%d bytes)", a.Name, l.Funcs[i].Len, a.Size, want.funcLen[i], b.Size)
		}
		lin, varint := l.Funcs[i].Offsets(), funcOffsets(b)
		if len(lin) != len(varint) {
			fail("function %s: %d linear tables, the original has %d", a.Name, len(lin), len(varint))
			continue
		}
		for j := range varint {
			if lin[j] != want.offs[i][j] {
				fail("function %s: table %d at linear offset %#x, want %#x (varint %#x)", a.Name, j, lin[j], want.offs[i][j], varint[j])
			}
		}
		if rw.Linear.Mode == "append" && (!reflect.DeepEqual(a.InlTree, b.InlTree) || a.PCSP != b.PCSP || a.PCLn != b.PCLn) {
			fail("function %s: inline tree or varint tables differ from the original's", a.Name)
		}
	}
}

// checkPclntab compares what the rewrite copied or relocated with the
// original.
func checkPclntab(rw, orig *objscan.File, fail func(string, ...any)) {
	if rw.Linear.Mode == "append" {
		if !bytes.Equal(rw.Pclntab(), orig.Pclntab()) || rw.PclntabAddr != orig.PclntabAddr {
			fail("the varint pclntab differs from the original's")
		}
		return
	}
	if isConverted(orig) {
		checkConverted(rw, orig, fail)
		return
	}
	if rw.TextStart != orig.TextStart || rw.TextSource != orig.TextSource {
		fail("text start %#x (from %s), the original's is %#x (from %s): moduledata not found or not updated", rw.TextStart, rw.TextSource, orig.TextStart, orig.TextSource)
	}
	if rw.Sizes.FuncNameTab != orig.Sizes.FuncNameTab || rw.Sizes.CUTab != orig.Sizes.CUTab || rw.Sizes.FileTab != orig.Sizes.FileTab ||
		rw.Sizes.FuncData != orig.Sizes.FuncData || rw.Files != orig.Files {
		fail("pclntab part sizes differ: rewritten %+v, original %+v", rw.Sizes, orig.Sizes)
	}
	// Names, CU and file tables: copied right after the header.
	rh, oh := pclnHeaderOf(rw), pclnHeaderOf(orig)
	rp, op := rw.Pclntab()[:pclntabLen(rw)], orig.Pclntab()[:pclntabLen(orig)]
	if rh.pctabOff-rh.funcnameOff != oh.pctabOff-oh.funcnameOff || !bytes.Equal(rp[rh.funcnameOff:rh.pctabOff], op[oh.funcnameOff:oh.pctabOff]) {
		fail("function names, CU or file tables differ from the original's")
	}
	// go:func.* and findfunctab: the end of both tables, at the same
	// distance from go:func.*.
	oldTail := oh.pclnOff + uint64(orig.Sizes.FuncTab)
	n := uint64(len(op)) - oldTail
	if uint64(len(rp)) < n || !bytes.Equal(rp[uint64(len(rp))-n:], op[oldTail:]) {
		fail("funcdata and findfunctab differ from the original's")
	} else if orig.GoFuncAddr < orig.PclntabAddr || orig.GoFuncAddr >= orig.PclntabAddr+uint64(len(op)) {
		// Before Go 1.26 go:func.* lies outside the pclntab, and stays.
		if rw.GoFuncAddr != orig.GoFuncAddr {
			fail("go:func.* at %#x, the original's is at %#x outside the pclntab", rw.GoFuncAddr, orig.GoFuncAddr)
		}
	} else if rw.GoFuncAddr-(rw.PclntabAddr+uint64(len(rp))-n) != orig.GoFuncAddr-(orig.PclntabAddr+oldTail) {
		fail("go:func.* at %#x does not follow the moved funcdata (moduledata.gofunc not updated?)", rw.GoFuncAddr)
	}
}

// SameLoadedImage reports, as an error, any difference between what the
// loader maps from two ELF files: their program headers and the file bytes
// of their PT_LOAD segments. Append mode promises none.
func SameLoadedImage(a, b []byte) error {
	ea, err := parseELF(a)
	if err != nil {
		return fmt.Errorf("first file: %w", err)
	}
	eb, err := parseELF(b)
	if err != nil {
		return fmt.Errorf("second file: %w", err)
	}
	if !reflect.DeepEqual(ea.progs, eb.progs) {
		return errors.New("the program headers differ")
	}
	if !bytes.Equal(a[:24+ea.ptrSize()], b[:24+eb.ptrSize()]) {
		return errors.New("the ELF identification, type, machine or entry point differs")
	}
	for i, p := range ea.progs {
		if p.Type != uint32(elf.PT_LOAD) || p.Filesz == 0 {
			continue
		}
		if uint64(len(a)) < p.Off+p.Filesz || uint64(len(b)) < p.Off+p.Filesz {
			return fmt.Errorf("segment %d runs past the end of a file", i)
		}
		sa, sb := a[p.Off:p.Off+p.Filesz], b[p.Off:p.Off+p.Filesz]
		if !bytes.Equal(sa, sb) {
			// The section header table may sit in the first segment's
			// padding; it is not used at run time.
			if diff := firstDiff(sa, sb); !inShdrs(ea, eb, p.Off+uint64(diff)) || !equalOutside(sa, sb, p.Off, ea, eb) {
				return fmt.Errorf("segment %d (%#x bytes at %#x) differs at file offset %#x", i, p.Filesz, p.Off, p.Off+uint64(diff))
			}
		}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// inShdrs reports whether file offset off lies in either file's section
// header table, or is one of the ELF header's section table fields
// (e_shoff, e_shentsize, e_shnum, e_shstrndx), which the loader ignores.
func inShdrs(ea, eb *elfFile, off uint64) bool {
	shoffAt, shoffLen, restAt := uint64(40), uint64(8), uint64(58)
	if !ea.is64 {
		shoffAt, shoffLen, restAt = 32, 4, 46
	}
	if off >= shoffAt && off < shoffAt+shoffLen || off >= restAt && off < restAt+6 {
		return true
	}
	for _, e := range []*elfFile{ea, eb} {
		if off >= e.shoff && off < e.shoff+uint64(len(e.sects))*e.shentsize {
			return true
		}
	}
	return false
}

// equalOutside reports whether a and b (file bytes from offset base) are
// equal outside the two files' section header tables.
func equalOutside(a, b []byte, base uint64, ea, eb *elfFile) bool {
	for i := range a {
		if a[i] != b[i] && !inShdrs(ea, eb, base+uint64(i)) {
			return false
		}
	}
	return true
}

// isConverted reports whether replace mode converts f's pclntab layout
// (Go 1.2-1.17) rather than copying its records.
func isConverted(f *objscan.File) bool {
	return f.Magic == objscan.Go12Magic || f.Magic == objscan.Go116Magic
}

// sameConvertedFuncData reports whether the funcdata offsets rw, relative
// to base, are the absolute funcdata pointers orig (nil: NoFuncData).
func sameConvertedFuncData(rw, orig []uint64, base uint64) bool {
	if len(rw) != len(orig) {
		return false
	}
	for i, p := range orig {
		if p == 0 && rw[i] != objscan.NoFuncData || p != 0 && (rw[i] == objscan.NoFuncData || base+rw[i] != p) {
			return false
		}
	}
	return true
}

// checkConverted compares what a conversion from a Go 1.2-1.17 pclntab
// kept: the text start (moduledata.text, found in the updated moduledata)
// that entries and funcdata are now relative to, and the file names (the
// function names, entries and funcdata are compared per function).
func checkConverted(rw, orig *objscan.File, fail func(string, ...any)) {
	text, ok := orig.ModuleText()
	if !ok {
		fail("the original's moduledata was not found")
		return
	}
	if rw.TextStart != text || rw.TextSource != "moduledata.text" || rw.GoFuncAddr != text {
		fail("text start %#x (from %s) and funcdata base %#x, want the original's moduledata.text %#x: moduledata not found or not updated", rw.TextStart, rw.TextSource, rw.GoFuncAddr, text)
	}
	if rw.Sizes.FuncData != orig.Sizes.FuncData {
		fail("funcdata size %d, the original's is %d", rw.Sizes.FuncData, orig.Sizes.FuncData)
	}
	if orig.Magic == objscan.Go116Magic {
		// The names, CU and file tables are copied.
		if rw.Sizes.FuncNameTab != orig.Sizes.FuncNameTab || rw.Sizes.CUTab != orig.Sizes.CUTab || rw.Sizes.FileTab != orig.Sizes.FileTab || rw.Files != orig.Files {
			fail("pclntab part sizes differ: rewritten %+v, original %+v", rw.Sizes, orig.Sizes)
			return
		}
		rh := pclnHeaderOf(rw)
		ps := uint64(orig.PtrSize)
		op := orig.Pclntab()
		w := func(off uint64) uint64 {
			if ps == 4 {
				return uint64(orig.ByteOrder.Uint32(op[off:]))
			}
			return orig.ByteOrder.Uint64(op[off:])
		}
		oStart, oEnd := w(8+2*ps), w(8+5*ps) // funcnameOffset, pctabOffset
		rp := rw.Pclntab()
		if rh.pctabOff-rh.funcnameOff != oEnd-oStart || !bytes.Equal(rp[rh.funcnameOff:rh.pctabOff], op[oStart:oEnd]) {
			fail("function names, CU or file tables differ from the original's")
		}
		return
	}
	// Go 1.2-1.15: one compilation unit maps file number i to file i.
	checkConvertedFiles(rw, orig, fail)
}

// checkConvertedFiles checks that file number i of the one compilation
// unit of a pclntab converted from the Go 1.2-1.15 layout is file i of the
// original's file table, and that the pcHeader's nfiles counts the
// filetab's strings that the files name. Both tables are read through
// objscan.FileNames, and compared a string at a time: names of equal
// length that end at one NUL of the original's table, and whose offsets
// in the two tables differ by the same amount, are suffixes of one string
// in each, and only the longest is compared. Thousands of files naming
// one long string, or its suffixes, cost the size of the tables, not the
// string's size per file.
func checkConvertedFiles(rw, orig *objscan.File, fail func(string, ...any)) {
	cu := &objscan.Func{Name: "the one compilation unit"}
	ra, ob := rw.FileNames(), orig.FileNames()
	type file struct {
		a, b string
		key  [2]uint64 // the original's NUL, the rewritten offset minus the original's
		ok   bool      // read from both, of equal length
	}
	files := make([]file, max(orig.Files, 1))
	longest := map[[2]uint64]int{}
	strs := map[uint64]bool{} // the rewritten names' NULs
	for i := 1; i < orig.Files; i++ {
		a, offA, errA := ra.Name(cu, int32(i))
		b, offB, errB := ob.Name(cu, int32(i))
		if errA != nil || errB != nil || len(a) != len(b) {
			fail("file %d is %q (%v), the original's is %q (%v)", i, a, errA, b, errB)
			continue
		}
		key := [2]uint64{uint64(offB) + uint64(len(b)), uint64(offA) - uint64(offB)}
		files[i] = file{a, b, key, true}
		if j, seen := longest[key]; !seen || len(b) > len(files[j].b) {
			longest[key] = i
		}
		strs[uint64(offA)+uint64(len(a))] = true
	}
	if rw.Files != len(strs) {
		fail("%d files, but the original's %d file names are %d strings of the filetab", rw.Files, max(orig.Files-1, 0), len(strs))
	}
	for i, c := range files {
		if c.ok && longest[c.key] == i && c.a != c.b {
			fail("file %d is %q, the original's is %q", i, c.a, c.b)
		}
	}
}
