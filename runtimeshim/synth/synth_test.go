package synth

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/objdump"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/runtimeshim"
)

// open builds the features program for goarch and returns the parsed binary
// and its call graph.
func open(t *testing.T, goarch string) (string, *objscan.File, *Graph) {
	t.Helper()
	bin := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: goarch})
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	return bin, f, g
}

// TestBuildMatchesObjdump checks the call sites against the Go
// disassembler: every direct call `go tool objdump` shows, except those the
// graph leaves out on purpose, is a site with the same return address, and
// there are no others.
func TestBuildMatchesObjdump(t *testing.T) {
	for _, goarch := range []string{"amd64", "386", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			bin, f, g := open(t, goarch)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			calls, err := objdump.Calls(ctx, testbuild.GoBinary(), bin)
			if err != nil {
				t.Fatal(err)
			}
			want := map[uint64]bool{}
			for _, c := range calls {
				target := c.Target
				if c.TargetAddr != 0 {
					pc := c.TargetAddr
					i := sort.Search(len(f.Funcs), func(i int) bool { return f.Funcs[i].Entry > pc }) - 1
					if i < 0 {
						t.Fatalf("objdump: %s: target in no function", c.Line)
					}
					target = f.Funcs[i].Name
				} else if target == "" {
					continue // indirect
				}
				if cold(target) {
					continue
				}
				want[c.Ret()] = true
			}
			got := map[uint64]bool{}
			for i := range g.sites {
				for _, s := range g.Sites(i) {
					got[s.Ret] = true
				}
			}
			if len(want) < 100 {
				t.Fatalf("objdump shows only %d direct calls", len(want))
			}
			missing, extra := 0, 0
			for ret := range want {
				if !got[ret] {
					missing++
					if missing <= 5 {
						t.Errorf("objdump call returning to %#x is not a site", ret)
					}
				}
			}
			for ret := range got {
				if !want[ret] {
					extra++
					if extra <= 5 {
						t.Errorf("site returning to %#x is not a call objdump shows", ret)
					}
				}
			}
			t.Logf("%d direct calls; %d missing, %d extra; stats %+v", len(want), missing, extra, g.Stats())
		})
	}
}

// TestStacks checks how stacks are drawn: deterministic for a seed, within
// the depth bound, each frame calling the next inner one, and symbolized by
// every encoding as debug/gosym does.
func TestStacks(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			_, f, g := open(t, goarch)
			opt := Options{Seed: 7, MinDepth: 3, MaxDepth: 30}
			a, err := g.Stacks(500, opt)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := g.Stacks(500, opt)
			c, _ := g.Stacks(500, Options{Seed: 8, MinDepth: 3, MaxDepth: 30})
			same := func(x, y []runtimeshim.Stack) bool {
				for i := range x {
					if len(x[i].PCs) != len(y[i].PCs) {
						return false
					}
					for j := range x[i].PCs {
						if x[i].PCs[j] != y[i].PCs[j] {
							return false
						}
					}
				}
				return true
			}
			if !same(a, b) {
				t.Error("the same seed drew different stacks")
			}
			if same(a, c) {
				t.Error("different seeds drew the same stacks")
			}
			funcAt := func(pc uint64) int {
				return sort.Search(len(f.Funcs), func(i int) bool { return f.Funcs[i].Entry > pc }) - 1
			}
			total := 0
			for _, st := range a {
				if len(st.PCs) == 0 || len(st.PCs) > opt.MaxDepth {
					t.Fatalf("stack of depth %d, want 1..%d", len(st.PCs), opt.MaxDepth)
				}
				total += len(st.PCs)
				// Outermost first: each frame's site calls the
				// function of the next frame.
				for i := len(st.PCs) - 1; i > 0; i-- {
					caller := funcAt(st.PCs[i] - 1)
					callee := funcAt(st.PCs[i-1] - 1)
					found := false
					for _, s := range g.Sites(caller) {
						if s.Ret == st.PCs[i] && s.Callee == callee {
							found = true
						}
					}
					if !found {
						t.Fatalf("frame %#x (%s) does not call %s", st.PCs[i], f.Funcs[caller].Name, f.Funcs[callee].Name)
					}
				}
			}
			t.Logf("mean depth %.1f", float64(total)/float64(len(a)))
			m, err := runtimeshim.NewModule(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range runtimeshim.Encodings() {
				s, err := m.NewShim(e)
				if err != nil {
					t.Fatal(err)
				}
				r, err := s.CheckGosym(a, 5)
				if err != nil {
					t.Fatal(err)
				}
				if r.Mismatched > 0 {
					t.Errorf("%s: %d of %d frames disagree with debug/gosym: %v", e.Name, r.Mismatched, r.Frames, r.Mismatches)
				}
			}
			if _, err := g.Stacks(1, Options{MinDepth: 5, MaxDepth: 4}); err == nil {
				t.Error("Stacks accepted an empty depth range")
			}
		})
	}
}

// TestBuildUnsupported checks the error for an architecture the package
// does not disassemble.
func TestBuildUnsupported(t *testing.T) {
	bin := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "riscv64"})
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Build(f); err == nil {
		t.Error("Build succeeded on linux/riscv64")
	}
}

// TestRaceRuntime checks a -race build, whose pclntab also lists the
// functions of the race detector's C runtime without any PC-value table
// (no pcsp, pcfile or pcln): no Go traceback can pass through them, so the
// graph holds no call site in or into them, and every stack it draws is
// symbolized as debug/gosym does. debug/gosym decodes a missing line
// table from the start of the pctab (reporting lines such as -29 for
// _ZN11__sanitizer3DieEv), where the runtime reports "?":
// CheckGosym must take the runtime's answer for such a frame.
func TestRaceRuntime(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("-race needs cgo, and cgo a C compiler")
	}
	testenv.SkipUnlessLong(t, "builds the race runtime of the standard library")
	bin := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Race: true})
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	var noTables []int
	for i := range f.Funcs {
		if f.Funcs[i].PCSP == 0 {
			noTables = append(noTables, i)
		}
	}
	if len(noTables) < 100 {
		t.Fatalf("only %d functions without a pcsp table: is the race runtime linked in?", len(noTables))
	}
	for i := range f.Funcs {
		for _, s := range g.Sites(i) {
			if f.Funcs[i].PCSP == 0 || f.Funcs[s.Callee].PCSP == 0 {
				t.Fatalf("site %#x: %s calls %s, one of them without a pcsp table", s.Ret, f.Funcs[i].Name, f.Funcs[s.Callee].Name)
			}
		}
	}
	stacks, err := g.Stacks(500, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A frame inside a function without tables, which CheckGosym may be
	// given by other callers.
	for _, i := range noTables[:5] {
		fn := &f.Funcs[i]
		stacks = append(stacks, runtimeshim.Stack{PCs: []uint64{fn.Entry + 1}})
	}
	m, err := runtimeshim.NewModule(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewShim(runtimeshim.Encodings()[0])
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CheckGosym(stacks, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mismatched > 0 {
		t.Errorf("%d of %d frames disagree with debug/gosym: %v", r.Mismatched, r.Frames, r.Mismatches)
	}
}
