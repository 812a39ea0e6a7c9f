package readers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/toolchain"
)

func TestReaders(t *testing.T) {
	rs, err := Readers()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
		if r.Module == "" || r.PatchDir == "" || r.ProbeDir == "" || r.Probe == "" {
			t.Errorf("%s: incomplete: %+v", r.Name, r)
		}
		// The patch changes the reader's decoder and nothing else.
		gosymDir := r.PatchDir + "/"
		n := 0
		for _, line := range strings.Split(string(r.Patch), "\n") {
			if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok {
				n++
				file, _, _ := strings.Cut(rest, " ")
				if r.PatchDir == "." && strings.Contains(file, "/") || r.PatchDir != "." && !strings.HasPrefix(file, gosymDir) {
					t.Errorf("%s: the patch changes %s, outside %s", r.Name, file, gosymDir)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: the patch changes no file", r.Name)
		}
	}
	if want := []string{"dlv", "govulncheck", "ebpf-profiler", "gore", "pyroscope"}; !slices.Equal(names, want) {
		t.Errorf("readers %v, want %v", names, want)
	}
}

func TestFormats(t *testing.T) {
	fs, err := Formats(CheckFormats()...)
	if err != nil {
		t.Fatal(err)
	}
	// Both derived-length variants the toolchain may make its default are
	// checked, each built with its own tag.
	want := map[string]string{"compact-fast": toolchain.CompactFastTag, "cf-palette-short": toolchain.PaletteTag, "spec-field": toolchain.SpecTag}
	for _, f := range fs {
		tag, ok := want[f.Name]
		if !ok {
			t.Errorf("format %s: not expected", f.Name)
			continue
		}
		delete(want, f.Name)
		if !slices.Contains(f.Tags, tag) {
			t.Errorf("format %s: tags %v, want %s among them", f.Name, f.Tags, tag)
		}
	}
	if len(want) > 0 {
		t.Errorf("formats %v not checked", want)
	}
	if _, err := Formats("compact-fast", "varint"); err == nil {
		t.Error(`Formats("varint"): no error`)
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

const probeTwin = "info\tmain-packages\t1\n" +
	"funcs\t2\n" +
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
		{"report", strings.Replace(probeTwin, "main-packages\t1", "main-packages\t0", 1), 1},
		{"stock reader", "info\tmain-packages\t1\nfuncs\t0\n", 4}, // the count and the 3 PCs of code
		{"no report", "funcs\t0\n", 5},
	} {
		got, err := parseProbe([]byte(tc.got))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Diff(got, want, nil)
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
	// main.c without tables: the twin's answer is another function's
	// table, read at offset 0.
	got, err := parseProbe([]byte(strings.Replace(probeTwin, "0x1010\tmain.c\tx.go\t9", "0x1010\tmain.c\t\t-1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Diff(got, want, map[uint64]bool{0x1010: true}); err != nil || c.Differ != 0 || c.NoTable != 1 {
		t.Errorf("main.c without tables: %+v, %v; want no difference and 1 PC skipped", c, err)
	}
	if _, err := Diff(want, &Probe{}, nil); err == nil {
		t.Error("Diff against an empty truth: no error")
	}
	for _, bad := range []string{"pc\t0x10\n", "info\tkey\n", "func\tf\tx\t0x10\n", "what\n", "pc\t0x10\tf\tx.go\tten\n"} {
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

func TestWriteVulnDB(t *testing.T) {
	dir := t.TempDir()
	if err := WriteVulnDB(dir, FeaturesSymbols()); err != nil {
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

// longSetup builds the patched toolchain and the features program in each
// of CheckFormats (compact-fast and cf-palette-short tables, each built
// with its variant's tag whichever is the default, and spec tables with a
// length field, the other _func layout), and the reader called name,
// released and patched.
//
// cross are the same for each of targets (see BuildProgram), for the
// probe only.
//
// A reader the module proxy may not serve (the eBPF profiler and
// Pyroscope here) is skipped when it does not and SourceEnv names no copy.
func longSetup(t *testing.T, name string, targets ...string) (bins, cross []*Binaries, stock, patched *Build) {
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
	formats, err := Formats(CheckFormats()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range formats {
		b, err := BuildProgram(ctx, tc, filepath.Join("..", "..", "testdata", "features.txtar"), t.TempDir(), f, "")
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, b)
	}
	for _, target := range targets {
		for _, f := range formats {
			b, err := BuildProgram(ctx, tc, filepath.Join("..", "..", "testdata", "features.txtar"), t.TempDir(), f, target)
			if err != nil {
				t.Fatal(err)
			}
			cross = append(cross, b)
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
	stock, err = r.Build(ctx, rcache, tc, false, nil)
	if errors.Is(err, ErrUnavailable) && (name == "ebpf-profiler" || name == "pyroscope") {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	patched, err = r.Build(ctx, rcache, tc, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bins, cross, stock, patched
}

// gosymTargets are the cross builds the gosym copies read: arm64 (a PC
// quantum of 4) and big-endian s390x (the magics read in the other byte
// order).
var gosymTargets = []string{"arm64", "s390x"}

// checkResult requires the patched reader to give the truth, and the
// released one not to (the break the patch fixes) when broken is set.
func checkResult(t *testing.T, r *Result, err error, broken bool) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s, %s: released: %s; patched: %s", r.Reader, r.Format, r.Check, r.Released, r.Patched)
	if !r.OK {
		t.Errorf("%s %s, %s: the patched reader differs from the stock truth: %s", r.Reader, r.Format, r.Check, r.Patched)
	}
	if r.Broken != broken {
		t.Errorf("%s %s, %s: the released reader on the patched binary: %s; broken %v, want %v: update docs/toolchain-readers.md", r.Reader, r.Format, r.Check, r.Released, r.Broken, broken)
	}
}

// TestGovulncheck runs govulncheck -mode=binary, released and patched, on
// the patched binaries and their twins against a synthetic database, and
// compares what its gosym copy reads.
func TestGovulncheck(t *testing.T) {
	bins, cross, stock, patched := longSetup(t, "govulncheck", gosymTargets...)
	ctx := context.Background()
	db := t.TempDir()
	if err := WriteVulnDB(db, FeaturesSymbols()); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, s := range FeaturesSymbols() {
		all = append(all, s.Package+"."+s.Symbol)
	}
	slices.Sort(all)
	for _, b := range cross {
		r, err := CheckProbe(ctx, stock, patched, b)
		checkResult(t, r, err, true)
	}
	for _, b := range bins {
		r, err := CheckProbe(ctx, stock, patched, b)
		checkResult(t, r, err, true)
		r, err = CheckGovulncheck(ctx, stock, patched, b, db)
		checkResult(t, r, err, true)
		// Without a symbol table govulncheck reports every symbol of
		// the entry, as for a stripped binary: no error, false positives.
		if r.Released != strings.Join(all, " ") {
			t.Errorf("%s: released govulncheck on the patched binary finds %s, want all of %v", b.Format, r.Released, all)
		}
		if r.Patched == r.Released {
			t.Errorf("%s: the program calls every symbol of the entry: want some", b.Format)
		}
	}
}

// TestDelve runs dlv, released and patched, on the features program: a
// breakpoint and the stacks at its first stops, on the binary with DWARF
// (Delve reads DWARF: the tables do not matter) and stripped (Delve reads
// its gosym copy), against the same run on the stock build; and compares
// what its gosym copy reads.
func TestDelve(t *testing.T) {
	bins, cross, stock, patched := longSetup(t, "dlv", gosymTargets...)
	ctx := context.Background()
	for _, b := range cross {
		r, err := CheckProbe(ctx, stock, patched, b)
		checkResult(t, r, err, true)
	}
	for _, b := range bins {
		r, err := CheckProbe(ctx, stock, patched, b)
		checkResult(t, r, err, true)
		r, err = CheckDelve(ctx, stock, patched, b, false)
		checkResult(t, r, err, false)
		r, err = CheckDelve(ctx, stock, patched, b, true)
		checkResult(t, r, err, true)
		if !strings.Contains(r.Released, `location "main.worker" not found`) {
			t.Errorf("%s: released dlv on the stripped patched binary: %s, want location \"main.worker\" not found", b.Format, r.Released)
		}
	}
}

// TestPprof runs go tool pprof, stock and patched, on a CPU profile of a
// patched program without DWARF, against the stock pprof on its twin.
func TestPprof(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds the patched toolchain and profiles a program built with it")
	ctx := context.Background()
	cache, err := toolchain.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := toolchain.Build(ctx, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := CheckPprof(ctx, tc, t.TempDir())
	checkResult(t, r, err, true)
}

// TestEBPFProfiler compares what the eBPF profiler's reader of Go binaries,
// released and patched, reads from the patched binaries and their twins:
// Symbolize's function, file and line at every third PC, and the stack
// deltas Extract derives from pcsp. The profiler reads amd64 and arm64
// binaries.
func TestEBPFProfiler(t *testing.T) {
	bins, cross, stock, patched := longSetup(t, "ebpf-profiler", gosymTargets...)
	ctx := context.Background()
	for _, b := range append(bins, cross...) {
		if b.GOARCH != "" && b.GOARCH != "arm64" {
			continue
		}
		r, err := CheckProbe(ctx, stock, patched, b)
		checkResult(t, r, err, true)
	}
}

// TestGore compares what goretk/gore, released (built with the local go)
// and patched (its search for the pclntab taught the magics, built with
// the patched toolchain, whose debug/gosym reads the linear tables),
// reports about the patched binaries and their twins: functions, file and
// line at every third PC, packages, the source lines of the main
// package's functions, the compiler version and the GOROOT. It reads the
// binaries for linux/amd64, linux/arm64 and windows/amd64, and the
// stripped windows/amd64 ones: a stripped PE file has no symbols and no
// pclntab section, and gore finds the table by its magic. (On stripped
// ELF files of Go 1.26 gore fails, stock ones too: it does not find the
// moduledata, so neither runtime.text.)
func TestGore(t *testing.T) {
	bins, cross, stock, patched := longSetup(t, "gore", "arm64", "windows/amd64")
	ctx := context.Background()
	for _, b := range append(bins, cross...) {
		check := []*Binaries{b}
		if b.GOOS == "windows" {
			check = append(check, b.Stripped())
		}
		for _, b := range check {
			r, err := CheckProbe(ctx, stock, patched, b)
			checkResult(t, r, err, true)
			if r != nil && !strings.Contains(r.Patched, "report lines") {
				t.Errorf("%s: no report line compared: %s", b.Format, r.Patched)
			}
		}
	}
}

// TestPyroscope compares what Pyroscope's eBPF symbolizer of ELF files,
// released and patched, reads from the patched binaries and their twins,
// with symbols and stripped, for amd64 and arm64: the Go table's
// functions, the table it resolves with (the Go table, or else the ELF
// symbol table) and the function it resolves every 48th byte of .text to.
func TestPyroscope(t *testing.T) {
	bins, cross, stock, patched := longSetup(t, "pyroscope", "arm64")
	ctx := context.Background()
	for _, b := range append(bins, cross...) {
		for _, b := range []*Binaries{b, b.Stripped()} {
			r, err := CheckProbe(ctx, stock, patched, b)
			checkResult(t, r, err, true)
		}
	}
}
