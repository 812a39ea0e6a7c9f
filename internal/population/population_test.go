package population

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/report"
	"github.com/pctab/pctab/toolchain"
)

func TestPrograms(t *testing.T) {
	ps, err := Programs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) < 30 {
		t.Errorf("the pinned population has %d programs, want at least 30", len(ps))
	}
	for _, p := range ps {
		if strings.HasSuffix(p.Version, "latest") || !strings.HasPrefix(p.Version, "v") {
			t.Errorf("%s: version %q is not pinned", p.Name, p.Version)
		}
	}
}

func TestParsePrograms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Program
		err  bool
	}{
		{in: "# comment\n\n", want: nil},
		{in: "a example.com/a . v1.0.0\n", want: []Program{{"a", "example.com/a", ".", "v1.0.0", []string{"--version"}, ""}}},
		{in: "b example.com/b cmd/b v0.1.2 version -short # what it is \n", want: []Program{{"b", "example.com/b", "cmd/b", "v0.1.2", []string{"version", "-short"}, "what it is"}}},
		{in: "a example.com/a . \n", err: true},                                 // no version
		{in: "a example.com/a . latest\n", err: true},                           // not a version
		{in: "a/b example.com/a . v1.0.0\n", err: true},                         // name with a slash
		{in: "a example.com/a ../x v1.0.0\n", err: true},                        // outside the module
		{in: "a example.com/a . v1.0.0\na example.com/b . v1.0.0\n", err: true}, // duplicate name
		{in: "a example.com/a /abs v1.0.0\n", err: true},                        // absolute package
		{in: ".. example.com/a . v1.0.0\n", err: true},                          // dot-dot name
		{in: "x  example.com/x  .  v1.2.3\ny example.com/y ./cmd v2.0.0 -h\n", want: []Program{{"x", "example.com/x", ".", "v1.2.3", []string{"--version"}, ""}, {"y", "example.com/y", "./cmd", "v2.0.0", []string{"-h"}, ""}}},
	} {
		got, err := ParsePrograms(strings.NewReader(tc.in))
		if tc.err {
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("%q: error %v, want ErrSyntax", tc.in, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if got := (Program{Module: "m", Package: "."}).ImportPath(); got != "m" {
		t.Errorf("ImportPath of the module root = %q", got)
	}
	if got := (Program{Module: "m", Package: "cmd/x"}).ImportPath(); got != "m/cmd/x" {
		t.Errorf("ImportPath = %q", got)
	}
}

func line(name string, size int64, deltas ...float64) Line {
	l := Line{SchemaVersion: SchemaVersion, Program: name, Stock: &Stock{Bytes: size}}
	for i, d := range deltas {
		l.Formats = append(l.Formats, Result{Format: []string{"compact-fast", "small"}[i], FileDeltaPercent: d})
	}
	return l
}

func TestDistributions(t *testing.T) {
	var lines []Line
	for i := 1; i <= 10; i++ {
		lines = append(lines, line(string(rune('a'+i-1)), int64(i)*1e6, float64(i)/10, float64(i)/20))
	}
	lines = append(lines, Line{Program: "broken", Error: "build failed"})
	ds := Distributions(lines)
	if len(ds) != 2 || ds[0].Format != "compact-fast" || ds[1].Format != "small" {
		t.Fatalf("formats %+v", ds)
	}
	d := ds[0]
	if d.N != 10 || math.Abs(d.Median-0.55) > 1e-9 || d.P90 != 0.9 || d.Max != 1.0 || d.MaxProgram != "j" {
		t.Errorf("compact-fast: %+v, want n 10, median 0.55, p90 0.9, max 1.0 (j)", d)
	}
	if want := []string{"f", "g", "h", "i", "j"}; !slices.Equal(d.Over, want) {
		t.Errorf("over the goal: %v, want %v", d.Over, want)
	}
	if ds[1].Max != 0.5 || len(ds[1].Over) != 0 {
		t.Errorf("small: %+v", ds[1])
	}
	if got := nearestRank([]float64{1}, 0.9); got != 1 {
		t.Errorf("p90 of one value = %v", got)
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

func TestPlotPoints(t *testing.T) {
	lines := []Line{line("a", 3e6, 0.4, 0.3), line("b", 48e6, 0.9, 0.45), line("c", 150e6, 2.0, 0.6), {Program: "d", Error: "x"}}
	p := Plot(lines, "test")
	if len(p.Series) != 2 {
		t.Fatalf("%d series, want one per format", len(p.Series))
	}
	for _, s := range p.Series {
		if len(s.Points) != 3 {
			t.Errorf("series %s: %d points, want one per program with a result", s.Name, len(s.Points))
		}
	}
	var buf bytes.Buffer
	if err := p.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte(`class="point"`)); n != 6 {
		t.Errorf("%d points drawn, want 6", n)
	}
	for _, name := range []string{">a<", ">b<", ">c<"} {
		if !bytes.Contains(buf.Bytes(), []byte(name)) {
			t.Errorf("no label %s", name)
		}
	}
}

func TestRunBinary(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	ctx := context.Background()
	r := RunBinary(ctx, sh, "sh", []string{"-c", "echo $HOME >&2; pwd; exit 3"}, 10*time.Second)
	if r.ExitCode != 3 || r.TimedOut || r.Error != "" || r.OutputBytes == 0 {
		t.Errorf("exit 3: %+v", r)
	}
	r2 := RunBinary(ctx, sh, "sh", []string{"-c", "echo $HOME >&2; pwd; exit 3"}, 10*time.Second)
	if r2.OutputSHA256 == r.OutputSHA256 {
		t.Errorf("two runs in different temporary directories printed the same: %+v", r)
	}
	r = RunBinary(ctx, sh, "sh", []string{"-c", "exec sleep 10"}, 200*time.Millisecond)
	if !r.TimedOut || r.ExitCode != -1 {
		t.Errorf("timeout: %+v", r)
	}
	a := RunBinary(ctx, sh, "sh", []string{"-c", "echo same"}, 10*time.Second)
	b := RunBinary(ctx, sh, "sh", []string{"-c", "echo same"}, 10*time.Second)
	if !sameRun(a, b) || sameRun(a, r) {
		t.Errorf("sameRun: %+v %+v", a, b)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d", "f.json")
	if err := writeFileAtomic(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(p, []byte("yz")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "yz" {
		t.Errorf("content %q", b)
	}
	if es, _ := os.ReadDir(filepath.Dir(p)); len(es) != 1 {
		t.Errorf("temporary files left: %v", es)
	}
}

// TestSchema checks the JSON line's field list against the golden file.
func TestSchema(t *testing.T) {
	jsonschema.Golden(t, filepath.Join("testdata", "population.fields"), jsonschema.Of(reflect.TypeOf(Line{}), SchemaVersion))
}

// TestPopulationOne builds one small program of the population (the
// first) stock, patched and twin, checks it and its JSON line. CI runs it;
// the whole population is too long for CI.
func TestPopulationOne(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds the patched toolchain and a program fetched through the module proxy")
	ctx := context.Background()
	tcache, err := toolchain.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := toolchain.Build(ctx, tcache, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Programs()
	if err != nil {
		t.Fatal(err)
	}
	key, err := BuildKey(tc)
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{Toolchain: tc, CacheDir: t.TempDir(), Key: key, Formats: []toolchain.Format{toolchain.Formats()[len(toolchain.Formats())-1]}}
	var out bytes.Buffer
	lines, err := b.Run(ctx, ps[:1], false, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].Error != "" {
		t.Fatalf("lines %+v", lines)
	}
	l := lines[0]
	r := l.Formats[0]
	if !r.Check.OK || r.Check.PCs == 0 || r.Check.Error != "" {
		t.Errorf("check: %+v", r.Check)
	}
	if !r.SameRun || l.Stock.Run.ExitCode != 0 {
		t.Errorf("run: stock %+v, patched %+v", l.Stock.Run, r.Run)
	}
	if r.FileDeltaBytes <= 0 || r.Bytes != l.Stock.Bytes+r.FileDeltaBytes || r.PCTabBytes <= r.TwinPCTabBytes {
		t.Errorf("sizes: stock %d, patched %d (%+d), pctab %d, twin's %d", l.Stock.Bytes, r.Bytes, r.FileDeltaBytes, r.PCTabBytes, r.TwinPCTabBytes)
	}
	// pctab-stats estimates the tables' cost alone: the patched build
	// against its twin (the same runtime with varint tables), not against
	// stock, whose difference also holds the patched runtime's own code
	// (about 22 KB, most of a small program's change).
	if r.EstimateFileDeltaPercent == nil {
		t.Errorf("no estimate for %s", r.Format)
	} else if est := *r.EstimateFileDeltaPercent; math.Abs(est-r.TwinDeltaPercent) > 0.25 {
		t.Errorf("estimate %+.3f%%, real against the twin %+.3f%% (against stock %+.3f%%)", est, r.TwinDeltaPercent, r.FileDeltaPercent)
	} else {
		t.Logf("%s %s: estimate %+.3f%%, real against the twin %+.3f%%, against stock %+.3f%%", l.Program, r.Format, est, r.TwinDeltaPercent, r.FileDeltaPercent)
	}
	if err := jsonschema.CheckValue(bytes.TrimSpace(out.Bytes()), jsonschema.Of(reflect.TypeOf(Line{}), SchemaVersion)); err != nil {
		t.Error(err)
	}
	// A second run builds nothing and reads the cached results.
	b.BuildTimeout = time.Nanosecond // any build would now fail
	again, err := b.Run(ctx, ps[:1], false, nil)
	if err != nil || again[0].Error != "" {
		t.Fatalf("second run: %v %+v", err, again)
	}
	a, _ := json.Marshal(again[0])
	f, _ := json.Marshal(l)
	if !bytes.Equal(a, f) {
		t.Errorf("second run differs:\n%s\n%s", a, f)
	}
}

// TestBuildKey checks that the build key follows what the patched
// toolchain builds with, not the form of its series.
func TestBuildKey(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join("pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "link")
	if runtime.GOOS == "windows" {
		link += ".exe"
	}
	write := func(path, data string) {
		t.Helper()
		if err := writeFileAtomic(filepath.Join(dir, path), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join("go", "src", "runtime", "a.go"), "package runtime // patched\n")
	write(filepath.Join("go", "src", "cmd", "link", "b.go"), "package ld // patched\n")
	write(filepath.Join("go", link), "linear linker")
	write(filepath.Join("twin", link), "stock linker")
	diff := func(file string) string {
		return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -1 +1 @@\n-x\n+y\n"
	}
	tc := func(series ...toolchain.Patch) *toolchain.Toolchain {
		return &toolchain.Toolchain{Dir: dir, GOROOT: filepath.Join(dir, "go"), TwinGOROOT: filepath.Join(dir, "twin"), Version: "go1.26.8", Series: series}
	}
	key := func(tc *toolchain.Toolchain) string {
		t.Helper()
		k, err := BuildKey(tc)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	one := tc(toolchain.Patch{Name: "0001-x.patch", Data: []byte("Subject: [PATCH] one\n\n" + diff("src/runtime/a.go") + diff("src/cmd/link/b.go"))})
	k := key(one)
	if len(k) != 16 {
		t.Errorf("key %q", k)
	}
	// The same change as two patches with other messages: the same key.
	two := tc(toolchain.Patch{Name: "0001-a.patch", Data: []byte("Subject: [PATCH 1/2] a\n\n" + diff("src/runtime/a.go"))},
		toolchain.Patch{Name: "0002-b.patch", Data: []byte("Subject: [PATCH 2/2] b\n\n" + diff("src/cmd/link/b.go"))})
	if k2 := key(two); k2 != k {
		t.Errorf("the same change split in two: key %s, want %s", k2, k)
	}
	for _, change := range []struct{ path, data string }{
		{filepath.Join("go", "src", "runtime", "a.go"), "package runtime // patched again\n"},
		{filepath.Join("go", link), "another linear linker"},
		{filepath.Join("twin", link), "another stock linker"},
	} {
		write(change.path, change.data)
		if k2 := key(one); k2 == k {
			t.Errorf("%s changed, the key did not", change.path)
		} else {
			k = k2
		}
	}
	other := tc(toolchain.Patch{Name: "0001-x.patch", Data: []byte(diff("src/runtime/a.go"))})
	if key(other) == k {
		t.Error("a series that changes fewer files has the same key")
	}
	v := one
	v.Version = "go1.27.3"
	if key(v) == k {
		t.Error("another release has the same key")
	}
	if _, err := BuildKey(tc(toolchain.Patch{Name: "0001-x.patch", Data: []byte("no diff")})); err == nil {
		t.Error("a patch that changes no files: no error")
	}
}

// TestFailedBuildKept checks that a failed build is reported, kept for
// -cached, and tried again by the next run.
func TestFailedBuildKept(t *testing.T) {
	t.Setenv("GOPROXY", "off") // the download fails at once, offline
	t.Setenv("GOFLAGS", "")
	tc := &toolchain.Toolchain{StockRoot: runtime.GOROOT(), Version: "go1.0", Key: "k"}
	b := &Builder{Toolchain: tc, CacheDir: t.TempDir(), Formats: toolchain.Formats()[:1]}
	p := Program{Name: "nope", Module: "example.com/nope", Package: ".", Version: "v1.0.0", Args: []string{"--version"}}
	ctx := context.Background()
	if got, _ := b.Run(ctx, []Program{p}, true, nil); len(got) != 0 {
		t.Fatalf("-cached before any build: %+v, want nothing", got)
	}
	lines, err := b.Run(ctx, []Program{p}, false, nil)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0].Error, "example.com/nope@v1.0.0") {
		t.Fatalf("failed build: %v %+v", err, lines)
	}
	cached, err := b.Run(ctx, []Program{p}, true, nil)
	if err != nil || len(cached) != 1 || cached[0].Error != lines[0].Error {
		t.Fatalf("-cached after a failed build: %v %+v, want the failure %q", err, cached, lines[0].Error)
	}
	if _, err := os.Stat(b.buildErrorPath(p)); err != nil {
		t.Fatal(err)
	}
	// A build that succeeds forgets the failure: here, one whose files
	// are all there already.
	for _, path := range []string{b.StockPath(p), b.FormatPath(p, b.Formats[0], false), b.FormatPath(p, b.Formats[0], true)} {
		if err := writeFileAtomic(path, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Build(ctx, p); err != nil {
		t.Fatal(err)
	}
	b.Program(ctx, p, false) // measuring "x" fails; the build did not
	if _, err := os.Stat(b.buildErrorPath(p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failure is still kept after a good build: %v", err)
	}
}

// TestStockEstimatesRefreshed checks that a stock result cached before
// report sized the mix (cfps-varint-pcln) gets its estimates again from
// the cached binary, keeps its run, and that a cached format result takes
// its estimate from them.
func TestStockEstimatesRefreshed(t *testing.T) {
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	b := &Builder{Toolchain: &toolchain.Toolchain{Version: "go1.26.8"}, CacheDir: t.TempDir(), Key: "k"}
	p := Program{Name: "features", Module: "example.com/features", Package: ".", Version: "v1.0.0"}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(b.StockPath(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.StockPath(p), data, 0o755); err != nil {
		t.Fatal(err)
	}
	old := Stock{Bytes: int64(len(data)), Estimates: []Estimate{{Variant: "cf-palette-short"}}, Run: Run{ExitCode: 42}}
	if err := writeCached(b.stockResultPath(p), &old); err != nil {
		t.Fatal(err)
	}
	s, err := b.MeasureStock(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Run.ExitCode != 42 {
		t.Errorf("run %+v: the cached run was replaced", s.Run)
	}
	var names []string
	for _, e := range s.Estimates {
		names = append(names, e.Variant)
	}
	if !slices.Contains(names, "cfps-varint-pcln") || !slices.Contains(names, "cf-palette-short") || s.Functions == 0 {
		t.Fatalf("estimates %v, %d functions", names, s.Functions)
	}
	again, err := b.MeasureStock(context.Background(), p)
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Errorf("second read: %v, %+v, want %+v", err, again, s)
	}
	// Every variant estimated, but one under a description it no longer
	// has (its encoder's rules changed): estimated again.
	stale := *s
	stale.Estimates = slices.Clone(s.Estimates)
	stale.Estimates[0].Doc, stale.Estimates[0].TablesFileDeltaPercent = "an older rule", 99
	if err := writeCached(b.stockResultPath(p), &stale); err != nil {
		t.Fatal(err)
	}
	fresh, err := b.MeasureStock(context.Background(), p)
	if err != nil || !reflect.DeepEqual(fresh, s) {
		t.Errorf("after a description changed: %v, %+v, want %+v", err, fresh, s)
	}
	// A result with the mix but without a variant added later (as
	// cfps-offset was) is estimated again too.
	s.Estimates = slices.DeleteFunc(s.Estimates, func(e Estimate) bool { return e.Variant == "cfps-offset" })
	if err := writeCached(b.stockResultPath(p), s); err != nil {
		t.Fatal(err)
	}
	if s2, err := b.MeasureStock(context.Background(), p); err != nil || !hasEstimates(s2) || s2.Run.ExitCode != 42 {
		t.Fatalf("a result without cfps-offset's estimate: %v, %+v", err, s2)
	}
	// A cached result whose binary is gone stays as it was.
	gone := Program{Name: "gone", Module: "example.com/gone", Package: ".", Version: "v1.0.0"}
	if err := os.MkdirAll(filepath.Dir(b.stockResultPath(gone)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeCached(b.stockResultPath(gone), &old); err != nil {
		t.Fatal(err)
	}
	if g, err := b.MeasureStock(context.Background(), gone); err != nil || g.Run.ExitCode != 42 || hasEstimate(g, report.MixName, report.MixDoc) {
		t.Errorf("a cached result without its binary: %v, %+v", err, g)
	}
	f := toolchain.Format{Name: "cfps-varint-pcln", Tags: []string{toolchain.VarlnTag}}
	if err := os.MkdirAll(b.ProgramDir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeCached(b.resultPath(p, f), &Result{Format: f.Name}); err != nil {
		t.Fatal(err)
	}
	r, err := b.Measure(context.Background(), p, f, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.EstimateVariant != "cfps-varint-pcln" || r.EstimateFileDeltaPercent == nil {
		t.Errorf("cached result's estimate: %q %v", r.EstimateVariant, r.EstimateFileDeltaPercent)
	}
}
