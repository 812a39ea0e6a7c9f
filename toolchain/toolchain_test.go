package toolchain

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
	"golang.org/x/perf/benchfmt"
)

func TestPatchedFiles(t *testing.T) {
	series, err := Series(DefaultRelease)
	if err != nil {
		t.Fatal(err)
	}
	files, err := PatchedFiles(series)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"src/cmd/link/internal/ld/pcln.go": true, "src/cmd/link/internal/ld/pclinear.go": true,
		"src/runtime/symtab.go": true, "src/runtime/symtab_linear.go": true, "src/runtime/symtab_linear_cf.go": true,
		"src/runtime/symtab_linear_derived.go": true, "src/runtime/symtab_linear_dmcache.go": true,
		"src/runtime/runtime2.go": true, "src/debug/gosym/pclntab.go": true,
	}
	for _, f := range files {
		delete(want, f)
	}
	if len(want) > 0 {
		t.Errorf("the series does not touch %v (it touches %v)", want, files)
	}
	// Each release's series is the same change.
	for _, r := range Releases() {
		rs, err := Series(r)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := PatchedFiles(rs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rf, files) {
			t.Errorf("%s's series touches %v; %s's %v", r, rf, DefaultRelease, files)
		}
	}
}

func TestExtend(t *testing.T) {
	for _, tc := range []struct {
		in   pcvalue.Table
		n    uint32
		want []int32 // value at each PC
	}{
		{pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 2, Value: 7}}, Len: 3}, 5, []int32{5, 5, 7, -1, -1}},
		{pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 2, Value: -1}}, Len: 3}, 5, []int32{5, 5, -1, -1, -1}},
		{pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}}, Len: 3}, 3, []int32{5, 5, 5}},
	} {
		got := Extend(tc.in, tc.n)
		if got.Len != tc.n {
			t.Errorf("Extend(%v, %d).Len = %d", tc.in, tc.n, got.Len)
		}
		for pc, w := range tc.want {
			if v, _ := got.Lookup(uint32(pc)); v != w {
				t.Errorf("Extend(%v, %d) at %d = %d, want %d", tc.in, tc.n, pc, v, w)
			}
		}
	}
}

// build builds testdata/selfwalk with the patched toolchain or its twin.
func build(t *testing.T, tc *Toolchain, twin bool, tags ...string) string {
	t.Helper()
	return buildFor(t, tc, "", twin, tags...)
}

// buildFor is build for GOARCH goarch ("" for the host's).
func buildFor(t *testing.T, tc *Toolchain, goarch string, twin bool, tags ...string) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/selfwalk")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), fmt.Sprintf("selfwalk-%s-%v-%s", goarch, twin, strings.Join(tags, "-")))
	// selfwalk links to runtime internals (tables.go).
	env := []string{"GOFLAGS=-ldflags=-checklinkname=0"}
	if goarch != "" {
		env = append(env, "GOARCH="+goarch, "CGO_ENABLED=0")
	}
	if err := tc.GoBuild(context.Background(), BuildOptions{Dir: dir, Package: ".", Out: out, Twin: twin, Tags: tags, Env: env}); err != nil {
		t.Fatal(err)
	}
	return out
}

func testToolchain(t *testing.T) *Toolchain {
	testenv.SkipUnlessLong(t, "builds the patched toolchain and the standard library with it")
	cache, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := Build(context.Background(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestRuntime builds a program with the patched toolchain in every runtime
// flavour (the default, cf-palette-short tables, and the same with
// compact-fast tables; spec and compact-fast tables, lengths derived or in
// a _func field, with the stock pcvalue cache and without one;
// cf-palette-short without a pcvalue cache, and with varint pcln tables),
// checks its tables against its
// twin, and asks its runtime about every PC of every function (FuncForPC,
// FileLine, and the runtime's own funcspdelta and pcdatavalue), comparing
// with objscan and linearpc's lookups in the same binary.
func TestRuntime(t *testing.T) {
	tc := testToolchain(t)
	for _, tags := range [][]string{nil, {CompactFastTag}, {SpecTag, StockCacheTag}, {SpecTag, NoCacheTag}, {CompactFastTag, StockCacheTag}, {CompactFastTag, NoCacheTag}, {NoCacheTag}, {CompactFastTag, FuncFieldTag}, {SpecTag, FuncFieldTag}, {VarlnTag}, {OffsetTag}} {
		t.Run(fmt.Sprintf("tags=%v", tags), func(t *testing.T) {
			lin := build(t, tc, false, tags...)
			fl := checkTwin(t, lin, build(t, tc, true, tags...))
			wantVariant, wantDerived := "cf-palette-short", !slices.Contains(tags, FuncFieldTag)
			if slices.Contains(tags, SpecTag) {
				wantVariant = "spec"
			} else if slices.Contains(tags, CompactFastTag) {
				wantVariant = "compact-fast"
			} else if slices.Contains(tags, OffsetTag) {
				wantVariant = "cfps-offset"
			}
			if fl.Linear.Variant != wantVariant || fl.Linear.Derived != wantDerived || fl.Linear.PCLnVarint != slices.Contains(tags, VarlnTag) {
				t.Fatalf("the binary has variant %s, derived lengths %v, varint pcln %v; want %s, %v, %v", fl.Linear.Variant, fl.Linear.Derived, fl.Linear.PCLnVarint, wantVariant, wantDerived, slices.Contains(tags, VarlnTag))
			}
			selfWalk(t, nil, lin, fl)
		})
	}
}

// TestRuntimeRelease is TestRuntime's default flavour on the other
// release the toolchain has a patch for, Go 1.27.3, which GOTOOLCHAIN
// downloads into the module cache.
func TestRuntimeRelease(t *testing.T) {
	testenv.SkipUnlessLong(t, "downloads go1.27.3 and builds the patched toolchain")
	cache, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := BuildRelease(context.Background(), cache, "go1.27.3", nil)
	if err != nil {
		t.Fatal(err)
	}
	own, err := Series("go1.27.3")
	if err != nil {
		t.Fatal(err)
	}
	if tc.Version != "go1.27.3" || len(tc.Series) != len(own) || !bytes.Equal(tc.Series[0].Data, own[0].Data) {
		t.Fatalf("toolchain %s with a series of %d patches, want go1.27.3's own", tc.Version, len(tc.Series))
	}
	lin := build(t, tc, false)
	fl := checkTwin(t, lin, build(t, tc, true))
	if fl.Linear.Variant != "cf-palette-short" || !fl.Linear.Derived {
		t.Fatalf("the binary has variant %s, derived lengths %v; want cf-palette-short, true", fl.Linear.Variant, fl.Linear.Derived)
	}
	if v := fl.GoVersion; !strings.HasPrefix(v, "go1.27.3") {
		t.Errorf("the binary says it was built by %q", v)
	}
	selfWalk(t, nil, lin, fl)
}

// TestRuntimeEmulated is TestRuntime for linux/arm64 and big-endian
// linux/s390x under qemu-user, in the default flavour (cf-palette-short
// tables), with spec and compact-fast tables, with varint pcln tables and
// with cfps-offset tables:
// the runtime's decoders answer every PC of their own binary as linearpc
// does on the host.
func TestRuntimeEmulated(t *testing.T) {
	tc := testToolchain(t)
	for _, em := range emulators(t) {
		arch, qemu := em.arch, em.qemu
		for _, tags := range [][]string{nil, {SpecTag}, {CompactFastTag}, {VarlnTag}, {OffsetTag}} {
			t.Run(fmt.Sprintf("%s/tags=%v", arch, tags), func(t *testing.T) {
				lin := buildFor(t, tc, arch, false, tags...)
				fl := checkTwin(t, lin, buildFor(t, tc, arch, true, tags...))
				selfWalk(t, []string{qemu}, lin, fl)
			})
		}
	}
}

// checkTwin opens the patched binary lin and its twin, requires Check to
// pass, and returns lin's objscan.File (closed when the test ends).
func checkTwin(t *testing.T, lin, twin string) *objscan.File {
	t.Helper()
	fl, err := objscan.Open(lin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() })
	ft, err := objscan.Open(twin)
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	res, err := Check(fl, ft)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.PCs == 0 {
		t.Fatalf("Check: %d mismatches in %d PCs: %v", res.Mismatches, res.PCs, res.Examples)
	}
	t.Logf("Check: %d tables, %d PCs", res.Tables, res.PCs)
	return fl
}

// selfWalk runs bin (under the command runner, if any) on every PC of
// every function with line and file tables and compares its runtime's
// answers with linearpc's lookups in f.
func selfWalk(t *testing.T, runner []string, bin string, f *objscan.File) {
	var in bytes.Buffer
	var funcs []int
	l := f.Linear
	q := uint64(f.PCQuantum)
	v, err := linearpc.VariantByName(l.Variant)
	if err != nil {
		t.Fatal(err)
	}
	lookupKind := func(j int, off, n, u uint32) int32 { return tableLookup(l, v, j, off, n, u, q) }
	lookup := func(off, n, u uint32) int32 { return lookupKind(0, off, n, u) }
	for i := range f.Funcs {
		lf := &l.Funcs[i]
		if lf.Len == 0 || lf.PCLn == 0 || lf.PCFile == 0 {
			continue
		}
		funcs = append(funcs, i)
		fmt.Fprintf(&in, "%x %x %x\n", f.Funcs[i].Entry, f.Funcs[i].Entry+uint64(lf.Len)*q, q)
	}
	argv := append(slices.Clone(runner), bin)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || sc.Text() != "ok" {
		t.Fatalf("%s did not print ok first: %q", bin, sc.Text())
	}
	files, names := map[int]string{}, map[int]string{}
	next := func() []string {
		for sc.Scan() {
			s := sc.Text()
			if kind, rest, ok := strings.Cut(s, " "); ok && (kind == "f" || kind == "n") {
				id, s, _ := strings.Cut(rest, " ")
				n, _ := strconv.Atoi(id)
				if kind == "f" {
					files[n] = s
				} else {
					names[n] = s
				}
				continue
			}
			return strings.Fields(s)
		}
		t.Fatalf("%s: output ends early", bin)
		return nil
	}
	checked, bad := 0, 0
	badFuncs := map[string]int{}
	for _, i := range funcs {
		fn, lf := &f.Funcs[i], &l.Funcs[i]
		inl := lf.TableOffset(objscan.KindInlTreeIndex)
		for u := range lf.Len {
			got := next()
			line := lookupKind(2, lf.PCLn, lf.Len, u)
			fileno := lookup(lf.PCFile, lf.Len, u)
			file, err := f.FileName(fn, fileno)
			if err != nil {
				file = "?"
			}
			if line == -1 {
				// Past a varint pcln table's end (the padding after a
				// function, with pctab_varln): funcline1 says "?", 0,
				// as stock Go does there.
				line, file = 0, "?"
			}
			want := []string{strconv.Itoa(int(line)), file}
			have := []string{"-", "-"}
			// The runtime's funcspdelta and pcdatavalue 0..3.
			tabs := []string{strconv.Itoa(int(lookup(lf.PCSP, lf.Len, u)))}
			for k := range 4 {
				tabs = append(tabs, strconv.Itoa(int(lookup(lf.TableOffset(objscan.KindPCData+objscan.TableKind(k)), lf.Len, u))))
			}
			if len(got) != 9 {
				t.Fatalf("%s: line %q, want 9 fields", bin, got)
			}
			if g, w := strings.Join(got[4:], " "), strings.Join(tabs, " "); g != w {
				bad++
				badFuncs[fn.Name]++
				if bad <= 3 {
					t.Errorf("%s at %#x (+%#x): runtime's pcsp and pcdata 0-3 are %s, linearpc's %s", fn.Name, fn.Entry+uint64(u)*q, uint64(u)*q, g, w)
				}
			}
			if got[0] != "-" {
				fid, _ := strconv.Atoi(got[1])
				have = []string{got[0], files[fid]}
				if inl == 0 || lookup(inl, lf.Len, u) < 0 {
					nid, _ := strconv.Atoi(got[2])
					name := nameForPrint(fn.Name)
					if i == 0 {
						// Stock Go too: a name at funcnametab offset 0
						// reads as no name.
						name = ""
					}
					want = append(want, name, strconv.FormatUint(fn.Entry, 16))
					have = append(have, names[nid], got[3])
				}
			}
			checked++
			if strings.Join(have, " ") != strings.Join(want, " ") {
				bad++
				badFuncs[fn.Name]++
				if bad <= 3 {
					t.Errorf("%s at %#x (+%#x): runtime says %q, linearpc %q", fn.Name, fn.Entry+uint64(u)*q, uint64(u)*q, have, want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d PCs disagree, in %v", bad, checked, badFuncs)
	}
	t.Logf("%d PCs of %d functions: the runtime agrees with linearpc (line, file, name, entry, pcsp, pcdata 0-3)", checked, len(funcs))
}

// nameForPrint is runtime.funcNameForPrint: everything from the first '['
// to the last ']' prints as "[...]".
func nameForPrint(name string) string {
	i, j := strings.IndexByte(name, '['), strings.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return name
	}
	return name[:i] + "[...]" + name[j+1:]
}

// TestTools checks the toolchain's own tools on what its linker writes:
// go tool addr2line of the patched toolchain (debug/gosym reading the
// linear tables) names the same function and file:line for the entry PC of
// every function of a patched binary, and for a sample of offsets, as the
// twin's addr2line does for the twin binary, whose code sits at the same
// addresses; for every table format.
func TestTools(t *testing.T) {
	tc := testToolchain(t)
	for _, f := range Formats() {
		t.Run(f.Name, func(t *testing.T) { testTools(t, tc, f.Tags) })
	}
}

func testTools(t *testing.T, tc *Toolchain, tags []string) {
	lin, twin := build(t, tc, false, tags...), build(t, tc, true, tags...)
	f, err := objscan.Open(twin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in bytes.Buffer
	n := 0
	for i, fn := range f.Funcs {
		for _, off := range []uint64{0, 1, 7, 33, 120} {
			// PCs of the function's code: in the padding after it the
			// derived format's tables carry the last value on, where the
			// twin's varint tables have ended.
			if pc := fn.Entry + off; pc < fn.Entry+fn.Size && (off == 0 || i%3 == 0) {
				fmt.Fprintf(&in, "%#x\n", pc)
				n++
			}
		}
	}
	addr2line := func(goroot, bin string) []string {
		cmd := exec.Command(filepath.Join(goroot, "bin", "go"), "tool", "addr2line", bin)
		cmd.Env = tc.Env(goroot == tc.TwinGOROOT)
		cmd.Stdin = bytes.NewReader(in.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s tool addr2line: %v", goroot, err)
		}
		// The twin's sources are the same files under another GOROOT.
		return strings.Split(strings.TrimSpace(strings.ReplaceAll(string(out), goroot, "$GOROOT")), "\n")
	}
	got, want := addr2line(tc.GOROOT, lin), addr2line(tc.TwinGOROOT, twin)
	if len(got) != 2*n || len(want) != 2*n {
		t.Fatalf("addr2line printed %d and %d lines for %d PCs", len(got), len(want), n)
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] || strings.HasPrefix(got[i], "?") {
			if bad++; bad <= 5 {
				t.Errorf("PC %d: patched addr2line says %q, the twin's %q", i/2, got[i], want[i])
			}
		}
	}
	t.Logf("%d PCs: %d lines differ", n, bad)
	// LineToPC searches every function's tables: a sample of the PCs.
	var sample bytes.Buffer
	for i, line := range strings.Split(strings.TrimSpace(in.String()), "\n") {
		if i%31 == 0 {
			fmt.Fprintln(&sample, line)
		}
	}
	checkLineToPC(t, tc, lin, twin, sample.Bytes())
}

// checkLineToPC runs testdata/linetopc, built with the patched toolchain,
// on lin, and built with stock Go on twin, for the PCs in pcs (hexadecimal,
// one per line, inside the functions' code): debug/gosym's PCToLine and
// LineToPC must give the same answers on both.
func checkLineToPC(t *testing.T, tc *Toolchain, lin, twin string, pcs []byte) {
	dir, err := filepath.Abs("testdata/linetopc")
	if err != nil {
		t.Fatal(err)
	}
	run := func(stock bool, bin, root string) string {
		prog := filepath.Join(t.TempDir(), "linetopc")
		if err := tc.GoBuild(context.Background(), BuildOptions{Dir: dir, Package: ".", Out: prog, Stock: stock}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(prog, bin)
		cmd.Stdin = bytes.NewReader(pcs)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("linetopc %s: %v", bin, err)
		}
		return strings.ReplaceAll(string(out), root, "$GOROOT")
	}
	got, want := run(false, lin, tc.GOROOT), run(true, twin, tc.TwinGOROOT)
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(gl) != len(wl) || len(gl) < 100 {
		t.Fatalf("linetopc printed %d lines on the patched binary, %d on the twin", len(gl), len(wl))
	}
	bad := 0
	for i := range gl {
		if gl[i] != wl[i] {
			if bad++; bad <= 5 {
				t.Errorf("LineToPC: patched %q, twin %q", gl[i], wl[i])
			}
		}
	}
	t.Logf("LineToPC: %d queries, %d differ", len(gl)-1, bad)
}

// TestStackBench builds testdata/stackbench's benchmarks (panics through
// deep stacks, runtime.Stack of many goroutines, GC stack scans, the CPU
// profiler and the execution tracer on deep stacks) with the patched
// toolchain in every flavour Bench compares, and runs each once: the
// docs/pctab-toolchain.md compares their times with a stock build's.
func TestStackBench(t *testing.T) {
	tc := testToolchain(t)
	dir, err := filepath.Abs("testdata/stackbench")
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range Flavours() {
		if fl.Stock {
			continue
		}
		tags := fl.Tags
		bin := filepath.Join(t.TempDir(), "stackbench.test")
		args := []string{"test", "-c", "-o", bin}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		cmd := exec.Command(tc.GoCommand(false), append(args, ".")...)
		cmd.Dir = dir
		cmd.Env = tc.Env(false)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go test -c %v: %v\n%s", tags, err, out)
		}
		out, err := exec.Command(bin, "-test.run=NONE", "-test.bench=.", "-test.benchtime=1x").CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("BenchmarkTraced")) || !bytes.Contains(out, []byte("PASS")) {
			t.Fatalf("stackbench %v: %v\n%s", tags, err, out)
		}
	}
}

// TestBench runs Bench once on stackbench's PanicDeep and reads its output
// back with golang.org/x/perf/benchfmt: one result per flavour, each under
// its toolchain key.
func TestBench(t *testing.T) {
	tc := testToolchain(t)
	dir, err := filepath.Abs("testdata/stackbench")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := BenchOptions{Dir: dir, Package: ".", Bench: "PanicDeep", BenchTime: "1x", Count: 1, Work: t.TempDir()}
	if err := tc.Bench(context.Background(), o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(&out, "bench")
	var got []string
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		got = append(got, res.GetConfig("toolchain")+" "+string(res.Name))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	flavours := Flavours()
	if len(got) != len(flavours) {
		t.Fatalf("results %q, want one per flavour\n%s", got, out.String())
	}
	for i, g := range got {
		if !strings.HasPrefix(g, flavours[i].Name+" PanicDeep") {
			t.Errorf("result %d: %q, want %s's PanicDeep", i, g, flavours[i].Name)
		}
	}
}

// TestBenchInterleave runs Bench with Interleave on two of stackbench's
// benchmarks, stock and default, two rounds: each benchmark runs alone,
// in every flavour in turn, the flavours' order rotated each round; and
// with Layouts, each round in its own function layout.
func TestBenchInterleave(t *testing.T) {
	tc := testToolchain(t)
	dir, err := filepath.Abs("testdata/stackbench")
	if err != nil {
		t.Fatal(err)
	}
	for _, layouts := range []int{0, 2} {
		var out bytes.Buffer
		o := BenchOptions{Dir: dir, Package: ".", Bench: "^Benchmark(PanicDeep|StackAll)$", BenchTime: "1x", Count: 2, Work: t.TempDir(), Flavours: []string{"default"}, Interleave: true, Layouts: layouts}
		if err := tc.Bench(context.Background(), o, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		r := benchfmt.NewReader(&out, "bench")
		var got []string
		for r.Scan() {
			if res, ok := r.Result().(*benchfmt.Result); ok {
				got = append(got, res.GetConfig("toolchain")+res.GetConfig("layout")+" "+strings.TrimSuffix(string(res.Name), "-2"))
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"stock PanicDeep", "default PanicDeep", "stock StackAll", "default StackAll",
			"default PanicDeep", "stock PanicDeep", "default StackAll", "stock StackAll",
		}
		if layouts > 0 {
			want = []string{
				"stock1 PanicDeep", "default1 PanicDeep", "stock1 StackAll", "default1 StackAll",
				"default2 PanicDeep", "stock2 PanicDeep", "default2 StackAll", "stock2 StackAll",
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("layouts %d: results %q, want %q\n%s", layouts, got, want, out.String())
		}
	}
}

// TestDerivedCorrupt checks that objscan rejects a derived-length binary
// whose layout the runtime would misread: a wrong end offset after the last
// _func record, and a record whose arrays no longer end where the next
// record starts.
func TestDerivedCorrupt(t *testing.T) {
	tc := testToolchain(t)
	bin := build(t, tc, false)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if f.Linear == nil || !f.Linear.Derived {
		t.Fatalf("the default build is not in the derived format: %+v", f.Linear)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sec := ef.Section(".gopclntab")
	if sec == nil {
		t.Fatal("no .gopclntab")
	}
	ps := uint64(f.PtrSize)
	functab := sec.Offset + f.ByteOrder.Uint64(data[sec.Offset+8+7*ps:])
	last := &f.Funcs[len(f.Funcs)-1]
	end := uint64(last.Offset) + 44 + 4*uint64(len(last.PCData)) + 4*uint64(len(last.FuncData))
	end = (end + ps - 1) &^ (ps - 1)
	mid := &f.Funcs[len(f.Funcs)/2]
	for _, tt := range []struct {
		name string
		at   uint64
		want string
	}{
		{"end offset", functab + end, "derived-length end offset"},
		{"nfuncdata", functab + uint64(mid.Offset) + 43, "derived-length layout"},
	} {
		bad := bytes.Clone(data)
		bad[tt.at] += 0x10
		if _, err := objscan.NewFile(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s changed: objscan says %v, want an error about %q", tt.name, err, tt.want)
		}
	}
}

// tableLookup returns the value at unit u of the table of kind j (pcsp,
// pcfile, pcln, then PCDATA by id) at off in l, of a function of n units
// whose PC quantum is q, as the runtime built for l reads it: v's lookup,
// or for a varint pcln table (l.PCLnVarint) a varint walk, -1 past its
// end. A table at offset 0 reads as -1.
func tableLookup(l *objscan.Linear, v linearpc.Variant, j int, off, n, u uint32, q uint64) int32 {
	if off == 0 {
		return -1
	}
	if j == 2 && l.PCLnVarint {
		val, _, err := varintpc.Lookup(l.Data[off:], uintptr(uint64(u)*q), uint32(q), false)
		if err != nil {
			return -1
		}
		return val
	}
	return v.Lookup(l.Data[off:], n, u)
}

// An emulator is a linux target and the qemu-user command that runs its
// binaries here.
type emulator struct {
	arch string // GOARCH
	qemu string // path of qemu-user for it
}

// emulators returns the emulated targets the tests check, little-endian
// linux/arm64 and big-endian linux/s390x, for which qemu-user is
// installed, and logs those it is not.
func emulators(t *testing.T) []emulator {
	t.Helper()
	var ems []emulator
	for _, e := range []emulator{{"arm64", "qemu-aarch64"}, {"s390x", "qemu-s390x"}} {
		path, err := exec.LookPath(e.qemu)
		if err != nil {
			t.Logf("%s: no qemu-user emulator: %v", e.arch, err)
			continue
		}
		ems = append(ems, emulator{e.arch, path})
	}
	return ems
}
