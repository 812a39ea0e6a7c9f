package objscan

import (
	"debug/gosym"

	"path/filepath"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
)

// checkGosym cross-checks f against debug/gosym, an independent parser of
// the same pclntab: the same functions with the same entries, ends and names,
// and at every PC (in PC-quantum steps) of every function the same file and
// line. stride > 1 checks every stride-th function only (for huge binaries).
func checkGosym(t *testing.T, f *File, stride int) {
	t.Helper()
	lt := gosym.NewLineTable(f.GoPclntab(), f.TextStart)
	tab, err := gosym.NewTable(nil, lt)
	if err != nil {
		t.Fatalf("gosym: %v", err)
	}
	if len(tab.Funcs) != len(f.Funcs) {
		t.Fatalf("gosym finds %d functions, objscan %d", len(tab.Funcs), len(f.Funcs))
	}
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	// On wasm, the functab of a recent release holds function indexes,
	// which the runtime shifts into PCs (textAddr) and debug/gosym does
	// not: its functions are one unit long, so only their entries and
	// names are compared. Older functabs hold the PCs themselves.
	wasmIndexes := f.wasmIndexes
	pcs := 0
	for i := range f.Funcs {
		fn, g := &f.Funcs[i], &tab.Funcs[i]
		if wasmIndexes {
			if fn.Entry != g.Entry<<16 || fn.End != g.End<<16 || fn.Name != g.Name {
				report("func %d: objscan {%#x %#x %q}, gosym {%#x %#x %q} (function indexes)", i, fn.Entry, fn.End, fn.Name, g.Entry, g.End, g.Name)
			}
			continue
		}
		if fn.Entry != g.Entry || fn.End != g.End || fn.Name != g.Name {
			report("func %d: objscan {%#x %#x %q}, gosym {%#x %#x %q}", i, fn.Entry, fn.End, fn.Name, g.Entry, g.End, g.Name)
			continue
		}
		if i%stride != 0 {
			continue
		}
		q := uint64(f.PCQuantum)
		for pc := fn.Entry; pc < fn.Entry+fn.Size; pc += q {
			unit := uint32((pc - fn.Entry) / q)
			file, line := objscanLine(t, f, fn, unit)
			gfile, gline, _ := tab.PCToLine(pc)
			pcs++
			if file != gfile || line != gline {
				report("%s+%#x: objscan %s:%d, gosym %s:%d", fn.Name, pc-fn.Entry, file, line, gfile, gline)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d mismatches in all", bad)
	}
	t.Logf("%d functions, %d PCs agree with debug/gosym", len(f.Funcs), pcs)
}

// objscanLine symbolizes one PC through objscan's pcfile and pcln tables.
func objscanLine(t testing.TB, f *File, fn *Func, unit uint32) (string, int) {
	_, fileIdx, ok1 := decodeForTest(t, f, fn.PCFile, unit)
	_, line, ok2 := decodeForTest(t, f, fn.PCLn, unit)
	if !ok2 {
		// Like debug/gosym, a PC past the end of the pcln table (which
		// another of the function's tables covers: go1.25's s390x
		// math.expAsm ends in 4 bytes its pcsp and pcfile cover, its
		// pcln not) has line -1, and the file its pcfile gives.
		line = -1
	}
	// Like debug/gosym, a PC whose file index names no file (index 0 in
	// the code the go1.2–go1.7 compilers emit for some init functions)
	// has no file but still has its line.
	if !ok1 || fileIdx < 0 {
		return "", int(line)
	}
	name, err := f.FileName(fn, fileIdx)
	if err != nil {
		return "", int(line)
	}
	return name, int(line)
}

// TestCorpus opens every binary of the shared corpus and cross-checks it
// against debug/gosym. It is skipped, saying why, where no corpus was built.
func TestCorpus(t *testing.T) {
	files := testenv.CorpusFiles(t)
	testenv.SkipUnlessLong(t, "cross-checks every binary of the corpus with debug/gosym")
	for _, path := range files {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			stride := 1
			if len(f.Funcs) > 5000 {
				stride = 7 // every 7th function of the big binaries keeps this under a minute
			}
			checkGosym(t, f, stride)
			checkInlTrees(t, f)
			checkSymbols(t, f)
		})
	}
}

// checkInlTrees checks that every inline tree entry is consistent: its parent
// PC lies inside the function, and its name is a real name.
func checkInlTrees(t *testing.T, f *File) {
	t.Helper()
	n := 0
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		for j, c := range fn.InlTree {
			n++
			if (c.ParentPC < 0 && !f.inlLayout19()) || c.ParentPC >= 0 && uint64(c.ParentPC) >= max(fn.Size, fn.End-fn.Entry) {
				t.Errorf("%s inline entry %d (%s): parentPc %#x outside the function (size %#x)", fn.Name, j, c.Name, c.ParentPC, fn.Size)
			}
			if c.Name == "" {
				t.Errorf("%s inline entry %d has no name", fn.Name, j)
			}
			// The old layout names the call site and the parent entry,
			// which must come before its child.
			if !f.newInlLayout() && (c.File == "" || c.Line <= 0 || int(c.Parent) >= j || c.Parent < -1) {
				t.Errorf("%s inline entry %d (%s): call site %s:%d, parent %d", fn.Name, j, c.Name, c.File, c.Line, c.Parent)
			}
		}
	}
	if n == 0 {
		t.Errorf("no inline tree entries in %s", f.Path)
	}
}

// checkSymbols checks the text base and go:func.* address that objscan
// derived (from moduledata, the way the runtime finds them) against the
// symbol table, where the binary has one.
func checkSymbols(t *testing.T, f *File) {
	t.Helper()
	if f.Magic != Go118Magic && f.Magic != Go120Magic {
		return
	}
	if v, ok := f.im.sym("runtime.text"); ok && v != f.TextStart {
		t.Errorf("text base %#x (from %s), runtime.text symbol %#x", f.TextStart, f.TextSource, v)
	}
	for _, name := range []string{"go:func.*", "go.func.*"} {
		if v, ok := f.im.sym(name); ok && v != f.GoFuncAddr {
			t.Errorf("go:func.* at %#x, symbol %s at %#x", f.GoFuncAddr, name, v)
		}
	}
}
