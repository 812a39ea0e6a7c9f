package toolchain

import (
	"bytes"
	"context"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestFlavourBuildFlags checks the go command flags of each kind of
// flavour and which one is the baseline.
func TestFlavourBuildFlags(t *testing.T) {
	for _, tc := range []struct {
		fl       Flavour
		want     []string
		baseline bool
	}{
		{Flavour{Name: "stock", Stock: true}, nil, true},
		{Flavour{Name: "default"}, nil, false},
		{Flavour{Name: "x", Tags: []string{"a", "b"}}, []string{"-tags", "a,b"}, false},
		{LayoutControl(), []string{"-ldflags=-funcalign=64"}, false},
		{Flavour{Name: "y", Tags: []string{"a"}, LDFlags: []string{"-s", "-w"}}, []string{"-tags", "a", "-ldflags=-s -w"}, false},
		{Flavour{Name: "stock", Stock: true, Layout: 3}, []string{"-ldflags=-randlayout=3"}, true},
		{Flavour{Name: "default", Layout: -7}, []string{"-ldflags=-randlayout=-7"}, false},
		{Flavour{Name: "z", LDFlags: []string{"-funcalign=64"}, Layout: 1}, []string{"-ldflags=-funcalign=64 -randlayout=1"}, false},
	} {
		if got := tc.fl.BuildFlags(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: BuildFlags() = %q, want %q", tc.fl.Name, got, tc.want)
		}
		if got := tc.fl.Baseline(); got != tc.baseline {
			t.Errorf("%s: Baseline() = %v, want %v", tc.fl.Name, got, tc.baseline)
		}
	}
	fls := Flavours()
	if !fls[0].Baseline() {
		t.Errorf("Flavours()[0] = %+v, want the baseline", fls[0])
	}
	names := map[string]bool{}
	for i, fl := range fls {
		if names[fl.Name] {
			t.Errorf("flavour %q twice", fl.Name)
		}
		names[fl.Name] = true
		if i > 0 && fl.Baseline() {
			t.Errorf("flavour %d (%s) is a second baseline", i, fl.Name)
		}
	}
	if !names[LayoutControl().Name] {
		t.Errorf("Flavours() lacks the layout control %s", LayoutControl().Name)
	}
}

// TestLayoutControl builds testdata/callers with the stock toolchain as
// the baseline and as the layout control: the control must place every
// function at a multiple of 64 where the baseline places some at odd
// multiples of 32, and print the same output (the program prints its own
// stacks as functions, files, lines and offsets from each function's
// entry).
func TestLayoutControl(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("checks amd64 ELF function alignment")
	}
	var outs [][]byte
	for _, fl := range []Flavour{Flavours()[0], LayoutControl()} {
		bin, out := stockCallers(t, fl)
		odd := oddFuncs(t, bin)
		switch {
		case fl.Baseline() && odd == 0:
			t.Errorf("%s: every function is 64-byte aligned; the control would change nothing", fl.Name)
		case !fl.Baseline() && odd != 0:
			t.Errorf("%s: %d functions are not 64-byte aligned", fl.Name, odd)
		}
		outs = append(outs, out)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Errorf("the layout control prints %d bytes that differ from stock's %d", len(outs[1]), len(outs[0]))
	}
}

// oddFuncs returns how many of bin's Go functions in .text start at an
// address that is not a multiple of 64.
func oddFuncs(t *testing.T, bin string) int {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text")
	n, odd := 0, 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || int(s.Section) >= len(f.Sections) || f.Sections[s.Section] != text {
			continue
		}
		n++
		if s.Value%64 != 0 {
			odd++
		}
	}
	if n < 1000 {
		t.Fatalf("%s: %d functions in .text, want more than 1000", bin, n)
	}
	return odd
}

// TestRandomLayout builds testdata/callers with the stock toolchain in the
// linker's order of functions and in two random layouts (Flavour.Layout):
// each seed must order the functions differently and every build must
// print the same output.
func TestRandomLayout(t *testing.T) {
	var orders [][]string
	var want []byte
	for _, seed := range []int64{0, 1, 2} {
		bin, out := stockCallers(t, Flavour{Name: fmt.Sprintf("stock-%d", seed), Stock: true, Layout: seed})
		orders = append(orders, funcOrder(t, bin))
		if want == nil {
			want = out
		} else if !bytes.Equal(out, want) {
			t.Errorf("seed %d prints %d bytes that differ from the linker's order's %d", seed, len(out), len(want))
		}
	}
	for i := range orders {
		for j := range i {
			if slices.Equal(orders[i], orders[j]) {
				t.Errorf("builds %d and %d order their %d functions alike", j, i, len(orders[i]))
			}
		}
	}
}

// stockCallers builds testdata/callers with the stock toolchain in flavour
// fl and returns the binary and what it prints.
func stockCallers(t *testing.T, fl Flavour) (string, []byte) {
	t.Helper()
	dir, err := filepath.Abs("testdata/callers")
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := stockRoot(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), fl.Name)
	tc := &Toolchain{StockRoot: root}
	if err := tc.GoBuild(context.Background(), BuildOptions{Dir: dir, Package: ".", Out: bin, Stock: true, Flags: fl.BuildFlags()}); err != nil {
		t.Fatalf("%s: %v", fl.Name, err)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", fl.Name, err)
	}
	return bin, out
}

// funcOrder returns the names of bin's functions (debug/gosym) in the
// order of their entries.
func funcOrder(t *testing.T, bin string) []string {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Skipf("not ELF: %v", err)
	}
	defer f.Close()
	pcln, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, f.Section(".text").Addr))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(tab.Funcs))
	for _, fn := range tab.Funcs {
		names = append(names, fn.Name)
	}
	if len(names) < 1000 {
		t.Fatalf("%s: %d functions, want more than 1000", bin, len(names))
	}
	return names
}

// TestRoundFlavours checks the flavours and layouts each round runs and
// the builds they need.
func TestRoundFlavours(t *testing.T) {
	a, b := Flavour{Name: "a", Stock: true}, Flavour{Name: "b"}
	name := func(fls []Flavour) string {
		var s []string
		for _, fl := range fls {
			s = append(s, fmt.Sprintf("%s%d", fl.Name, fl.Layout))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		layouts int
		rounds  []string // roundFlavours(0), (1), ...
		builds  string
	}{
		{0, []string{"a0 b0", "b0 a0", "a0 b0"}, "a0 b0"},
		{1, []string{"a1 b1", "b1 a1", "a1 b1"}, "a1 b1"},
		{2, []string{"a1 b1", "b2 a2", "a1 b1", "b2 a2"}, "a1 b1 b2 a2"},
		{3, []string{"a1 b1", "b2 a2", "a3 b3", "b1 a1"}, "a1 b1 b2 a2 a3 b3"},
	} {
		fls := []Flavour{a, b}
		for r, want := range tc.rounds {
			if got := name(RoundFlavours(fls, tc.layouts, r)); got != want {
				t.Errorf("layouts %d: round %d runs %q, want %q", tc.layouts, r, got, want)
			}
		}
		if got := name(LayoutBuilds(fls, tc.layouts)); got != tc.builds {
			t.Errorf("layouts %d: builds %q, want %q", tc.layouts, got, tc.builds)
		}
	}
	if fls := []Flavour{a}; RoundFlavours(fls, 2, 1)[0].Layout != 2 || fls[0].Layout != 0 {
		t.Errorf("RoundFlavours changed its argument or did not set the layout")
	}
}
