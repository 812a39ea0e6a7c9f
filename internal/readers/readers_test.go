package readers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/toolchain"
	"golang.org/x/tools/txtar"
)

func TestReaders(t *testing.T) {
	rs, err := Readers()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
		if r.Module == "" || r.Command == "" || r.Gosym == "" || r.ProbeDir == "" {
			t.Errorf("%s: incomplete: %+v", r.Name, r)
		}
		// The patch changes the reader's gosym copy and nothing else.
		gosymDir := strings.TrimPrefix(r.Gosym, r.Module+"/") + "/"
		n := 0
		for _, line := range strings.Split(string(r.Patch), "\n") {
			if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok {
				n++
				if !strings.HasPrefix(rest, gosymDir) {
					t.Errorf("%s: the patch changes %s, outside %s", r.Name, rest, gosymDir)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: the patch changes no file", r.Name)
		}
	}
	if want := []string{"dlv", "govulncheck"}; !slices.Equal(names, want) {
		t.Errorf("readers %v, want %v", names, want)
	}
}

func TestParseVersions(t *testing.T) {
	for _, tc := range []struct{ text, err string }{
		{"dlv github.com/go-delve/delve v1.27.2\n", ""},
		{"# comment\n\n", ""},
		{"dlv github.com/go-delve/delve\n", "want NAME MODULE VERSION"},
		{"gdb example.com/gdb v1.0.0\n", `unknown reader "gdb"`},
		{"dlv github.com/go-delve/delve latest\n", "not a module version"},
	} {
		_, err := parseVersions(tc.text)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseVersions(%q) = %v, want error %q", tc.text, err, tc.err)
		}
	}
}

const probeTwin = "funcs\t2\n" +
	"func\tmain.a\t0x1000\t0x1010\tmain.b@4\n" +
	"pc\t0x1000\tmain.a\tx.go\t3\n" +
	"pc\t0x1008\tmain.a\tx.go\t4\n" +
	"pc\t0x100c\t?\t\t-1\n" +
	"func\tmain.c\t0x1010\t0x1020\n" +
	"pc\t0x1010\tmain.c\tx.go\t9\n"

func TestDiff(t *testing.T) {
	want, err := parseProbe([]byte(probeTwin))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, got string
		differ    int
	}{
		{"same", probeTwin, 0},
		// The padding after main.a's code carries its last line in the
		// derived format: not compared.
		{"padding", strings.Replace(probeTwin, "0x100c\t?\t\t-1", "0x100c\tmain.a\tx.go\t4", 1), 0},
		{"line", strings.Replace(probeTwin, "x.go\t9", "x.go\t8", 1), 1},
		{"inlined", strings.Replace(probeTwin, "\tmain.b@4", "", 1), 1},
		{"stock reader", "funcs\t0\n", 4}, // the count and the 3 PCs of code
	} {
		got, err := parseProbe([]byte(tc.got))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Diff(got, want)
		if err != nil {
			t.Fatal(err)
		}
		if c.Differ != tc.differ {
			t.Errorf("%s: %d differences %q, want %d", tc.name, c.Differ, c.Diffs, tc.differ)
		}
		if c.Padding != 1 {
			t.Errorf("%s: %d padding PCs, want 1", tc.name, c.Padding)
		}
	}
	if _, err := Diff(want, &Probe{}); err == nil {
		t.Error("Diff against an empty truth: no error")
	}
	for _, bad := range []string{"pc\t0x10\n", "func\tf\tx\t0x10\n", "what\n", "pc\t0x10\tf\tx.go\tten\n"} {
		if _, err := parseProbe([]byte(bad)); err == nil {
			t.Errorf("parseProbe(%q): no error", bad)
		}
	}
}

func TestParseDelve(t *testing.T) {
	const out = "Type 'help' for list of commands.\n" +
		"Breakpoint 1 set at 0x4a600e for main.worker() ./main.go:232\n" +
		"> [Breakpoint 1] main.worker() ./main.go:232 (hits goroutine(9):1 total:1) (PC: 0x4a600e)\n" +
		"=> 232:\tfunc worker() {\n" +
		"0  0x00000000004a600e in main.worker\n" +
		"   at ./main.go:232\n" +
		"1  0x00000000004803c1 in runtime.goexit\n" +
		"   at :0\n" +
		"   error: input/output error\n" +
		"(truncated)\n" +
		" 0  0x000000000047a3a4 in runtime.throw\n" +
		"    at /go/src/runtime/panic.go:1220\n"
	s := parseDelve(out)
	if want := []Frame{{"main.worker", "./main.go", 232}}; !slices.Equal(s.Breakpoints, want) {
		t.Errorf("breakpoints %v, want %v", s.Breakpoints, want)
	}
	want := [][]Frame{
		{{"main.worker", "./main.go", 232}, {"runtime.goexit", "", 0}},
		{{"runtime.throw", "/go/src/runtime/panic.go", 1220}},
	}
	if len(s.Stacks) != len(want) {
		t.Fatalf("stacks %v, want %v", s.Stacks, want)
	}
	for i := range want {
		if !slices.Equal(s.Stacks[i], want[i]) {
			t.Errorf("stack %d: %v, want %v", i, s.Stacks[i], want[i])
		}
	}
}

// vulnSyms are the symbols of the synthetic vulnerability entry: three
// that the features program calls and three that it does not.
var vulnSyms = []VulnSymbol{
	{"fmt", "Sprintf"}, {"fmt", "Sprint"}, {"strings", "ToUpper"},
	{"strings", "Repeat"}, {"sort", "Ints"}, {"sort", "Strings"},
}

func TestWriteVulnDB(t *testing.T) {
	dir := t.TempDir()
	if err := WriteVulnDB(dir, vulnSyms); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index/db.json", "index/modules.json", "index/vulns.json", "ID/" + VulnID + ".json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "ID", VulnID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"path":"sort","symbols":["Ints","Strings"]}`) {
		t.Errorf("entry %s lacks the sort symbols", b)
	}
}

// binaries are the features program built by the patched toolchain in
// one format, by its twin, and by the stock toolchain, with and without
// symbols and DWARF.
type binaries struct {
	patched, twin, stock                         string
	patchedStripped, twinStripped, stockStripped string
}

func buildFeatures(t *testing.T, tc *toolchain.Toolchain, f toolchain.Format) binaries {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("..", "..", "testdata", "features.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, file := range ar.Files {
		if err := os.WriteFile(filepath.Join(dir, file.Name), file.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b binaries
	for _, c := range []struct {
		out         *string
		name        string
		twin, stock bool
		ldflags     string
	}{
		{&b.patched, "patched", false, false, ""},
		{&b.twin, "twin", true, false, ""},
		{&b.stock, "stock", false, true, ""},
		{&b.patchedStripped, "patched.stripped", false, false, "-s -w"},
		{&b.twinStripped, "twin.stripped", true, false, "-s -w"},
		{&b.stockStripped, "stock.stripped", false, true, "-s -w"},
	} {
		*c.out = filepath.Join(dir, "features."+c.name)
		// -trimpath: the same file names from every GOROOT.
		o := toolchain.BuildOptions{Dir: dir, Package: ".", Out: *c.out, Twin: c.twin, Stock: c.stock, Tags: f.Tags, Flags: []string{"-trimpath", "-ldflags=" + c.ldflags}}
		if c.stock {
			o.Tags = nil
		}
		if err := tc.GoBuild(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// longSetup builds the patched toolchain and the features program in the
// default format and in spec tables with a length field (the other _func
// layout), and the readers, stock and patched.
func longSetup(t *testing.T, name string) (map[string]binaries, *Build, *Build) {
	testenv.SkipUnlessLong(t, "builds the patched toolchain, and "+name+" from the module proxy")
	ctx := context.Background()
	cache, err := toolchain.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := toolchain.Build(ctx, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]binaries{}
	for _, f := range toolchain.Formats() {
		if f.Name == "compact-fast" || f.Name == "spec-field" {
			bins[f.Name] = buildFeatures(t, tc, f)
		}
	}
	r, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	rcache, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	stock, err := r.Build(ctx, rcache, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := r.Build(ctx, rcache, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bins, stock, patched
}

// probeStep samples every probeStep-th PC.
const probeStep = 3

// checkProbes compares what the reader's gosym copy reads from the patched
// binaries with what it reads from their twins: the patched copy must
// agree, and the released one must not (the break the patch fixes).
func checkProbes(t *testing.T, bins map[string]binaries, stock, patched *Build) {
	ctx := context.Background()
	for format, b := range bins {
		want, err := ReadProbe(ctx, patched, b.twin, probeStep)
		if err != nil {
			t.Fatal(err)
		}
		stockWant, err := ReadProbe(ctx, stock, b.twin, probeStep)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := Diff(stockWant, want); err != nil || c.Differ != 0 {
			t.Fatalf("%s: the patch changes what the reader reads from a stock binary: %v %+v", format, err, c)
		}
		got, err := ReadProbe(ctx, patched, b.patched, probeStep)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Diff(got, want)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: patched %s on the patched binary: %d functions, %d inlined calls, %d PCs compared, %d padding PCs skipped, %d differences",
			format, patched.Reader.Name, c.Funcs, c.Inlined, c.PCs, c.Padding, c.Differ)
		if c.Differ != 0 || c.Funcs == 0 || c.PCs == 0 || c.Inlined == 0 {
			t.Errorf("%s: patched %s on the patched binary differs from the twin (%d differences):\n%s", format, patched.Reader.Name, c.Differ, strings.Join(c.Diffs, "\n"))
		}
		bad, err := ReadProbe(ctx, stock, b.patched, probeStep)
		if err != nil {
			t.Fatal(err)
		}
		c, err = Diff(bad, want)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: released %s on the patched binary: %d functions (want %d), %d differences", format, stock.Reader.Name, len(bad.Funcs), len(want.Funcs), c.Differ)
		if c.Differ == 0 {
			t.Errorf("%s: released %s reads the patched binary like its twin: update docs/toolchain-readers.md", format, stock.Reader.Name)
		}
	}
}

// TestGovulncheck runs govulncheck -mode=binary, released and patched, on
// the patched binaries and their twins against a synthetic database.
func TestGovulncheck(t *testing.T) {
	bins, stock, patched := longSetup(t, "govulncheck")
	checkProbes(t, bins, stock, patched)
	ctx := context.Background()
	db := t.TempDir()
	if err := WriteVulnDB(db, vulnSyms); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, s := range vulnSyms {
		all = append(all, s.Package+"."+s.Symbol)
	}
	slices.Sort(all)
	for format, b := range bins {
		want, err := Govulncheck(ctx, stock.Bin, db, b.stock)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || len(want) == len(all) {
			t.Fatalf("released govulncheck on the stock build finds %v: want some of %v", want, all)
		}
		for _, c := range []struct {
			bin, binary, what string
			want              []string
		}{
			{stock.Bin, b.twin, "released govulncheck on the twin", want},
			{patched.Bin, b.twin, "patched govulncheck on the twin", want},
			{patched.Bin, b.patched, "patched govulncheck on the patched binary", want},
			// Without a symbol table it reports every symbol of the entry,
			// as for a stripped binary: no error, false positives.
			{stock.Bin, b.patched, "released govulncheck on the patched binary", all},
			{stock.Bin, b.stockStripped, "released govulncheck on the stripped stock build", all},
		} {
			got, err := Govulncheck(ctx, c.bin, db, c.binary)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: %s finds %v, want %v", format, c.what, got, c.want)
			}
		}
	}
}

// TestDelve runs dlv, released and patched, on the features program: a
// breakpoint and the stacks at its first stops, on the binary with DWARF
// (Delve reads DWARF, the tables do not matter) and stripped (Delve reads
// its gosym copy), against the same run on the stock build.
func TestDelve(t *testing.T) {
	bins, stock, patched := longSetup(t, "dlv")
	checkProbes(t, bins, stock, patched)
	ctx := context.Background()
	funcs := []string{"main.worker", "main.bigFunc"}
	const stops = 2
	for format, b := range bins {
		for _, c := range []struct {
			what, stockBinary, binary, dlv string
		}{
			{"released dlv, with DWARF", b.stock, b.patched, stock.Bin},
			{"patched dlv, with DWARF", b.stock, b.patched, patched.Bin},
			{"patched dlv, stripped", b.stockStripped, b.patchedStripped, patched.Bin},
		} {
			want, err := Delve(ctx, stock.Bin, c.stockBinary, funcs, stops)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Breakpoints) != len(funcs) || len(want.Stacks) != stops {
				t.Fatalf("%s: released dlv on the stock build: breakpoints %v, %d stacks, want %d and %d:\n%s", format, want.Breakpoints, len(want.Stacks), len(funcs), stops, want.Output)
			}
			got, err := Delve(ctx, c.dlv, c.binary, funcs, stops)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Breakpoints, want.Breakpoints) || !slices.EqualFunc(got.Stacks, want.Stacks, slices.Equal) {
				t.Errorf("%s: %s: breakpoints %v stacks %v, want %v %v:\n%s", format, c.what, got.Breakpoints, got.Stacks, want.Breakpoints, want.Stacks, got.Output)
			}
		}
		// The break: the released dlv finds no function in a stripped
		// patched binary.
		got, err := Delve(ctx, stock.Bin, b.patchedStripped, funcs, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Breakpoints) != 0 || !strings.Contains(got.Output, `location "main.worker" not found`) {
			t.Errorf("%s: released dlv on the stripped patched binary: breakpoints %v: update docs/toolchain-readers.md:\n%s", format, got.Breakpoints, got.Output)
		}
	}
}
