package libbench

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/benchcmp"
)

func TestVersions(t *testing.T) {
	mods, err := Versions()
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, m := range mods {
		pinned[m.Path] = true
	}
	for _, l := range Suite() {
		if l.Module != "" && !pinned[l.Module] {
			t.Errorf("library %s: module %s is not pinned in versions.txt", l.Name, l.Module)
		}
	}
	// Every module the harness imports is pinned.
	hf, err := parser.ParseFile(token.NewFileSet(), "callerbench_test.go", harnessSource, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	third := 0
	for _, imp := range hf.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if first, _, _ := strings.Cut(path, "/"); !strings.Contains(first, ".") {
			continue // the standard library
		}
		third++
		if !slices.ContainsFunc(mods, func(m Module) bool { return path == m.Path || strings.HasPrefix(path, m.Path+"/") }) {
			t.Errorf("the harness imports %s, which no pinned module provides", path)
		}
	}
	if third == 0 {
		t.Errorf("found no third-party import in the harness")
	}
	for _, bad := range []string{
		"go.uber.org/zap",
		"go.uber.org/zap v1 extra",
		"zap v1.0.0",
		"go.uber.org/zap 1.0.0",
		"go.uber.org/zap v1.0.0\ngo.uber.org/zap v1.0.1",
	} {
		if _, err := parseVersions(bad); err == nil {
			t.Errorf("parseVersions(%q) succeeded", bad)
		}
	}
	got, err := parseVersions("# comment\n\n  example.com/m v0.1.0  \n")
	if err != nil || len(got) != 1 || got[0] != (Module{"example.com/m", "v0.1.0"}) {
		t.Errorf("parseVersions: %v, %v", got, err)
	}
}

func TestSuite(t *testing.T) {
	names := map[string]bool{}
	for _, l := range Suite() {
		if names[l.Name] {
			t.Errorf("library %s twice", l.Name)
		}
		names[l.Name] = true
		if l.Hot == "" || len(l.Targets) == 0 {
			t.Errorf("library %s: no hot path or no targets", l.Name)
		}
		variants := map[string]bool{}
		for _, tg := range l.Targets {
			variants[tg.Variant] = true
		}
		for _, p := range l.Pairs {
			if !variants[p.With.Variant] || !variants[p.Without.Variant] || p.With == p.Without {
				t.Errorf("library %s: pair %q names no target's variant or compares a benchmark with itself", l.Name, p.Name)
			}
		}
	}
	if _, err := Select(Suite(), []string{"zap", "nosuch"}); err == nil {
		t.Errorf("Select of an unknown library succeeded")
	}
	sel, err := Select(Suite(), []string{"zerolog", "zap"})
	if err != nil || len(sel) != 2 || sel[0].Name != "zap" || sel[1].Name != "zerolog" {
		t.Errorf("Select: %v, %v", sel, err)
	}
}

// rawResults parses testdata/results.txt independently of benchfmt: the
// time samples per library, variant, benchmark and flavour, in order.
func rawResults(t *testing.T, path string) map[string][]float64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float64{}
	cfg := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "Benchmark") {
			cfg[k] = v
			continue
		}
		if k, ok := strings.CutSuffix(line, ":"); ok {
			cfg[k] = ""
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || f[3] != "ns/op" {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		key := cfg["library"] + "|" + cfg["variant"] + "|" + strings.TrimPrefix(f[0], "Benchmark") + "|" + cfg["toolchain"]
		out[key] = append(out[key], v*1e-9)
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestResults checks ReadResults and its statistics on a recorded run
// (pctab-toolchain libbench -count 6 -benchtime 20ms -flavours
// linear-cf,linear-cf-nocache -libs go-kit/log,logrus) against values
// computed here from the raw lines: medians, ratios, per-round paired
// ratios, geomeans and prices. With 6 samples, the 95% interval of a
// median is the whole range (the order statistics x(1), x(6) cover it with
// probability 1-2/2^6).
func TestResults(t *testing.T) {
	const path = "testdata/results.txt"
	raw := rawResults(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := ReadResults(f, "sec/op")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"logrus", "go-kit/log"}; !slices.Equal(res.Groups, want) {
		t.Fatalf("libraries %v, want %v", res.Groups, want)
	}
	if want := []string{"stock", "linear-cf", "linear-cf-nocache"}; !slices.Equal(res.Flavours, want) || res.Baseline != "stock" {
		t.Fatalf("flavours %v (baseline %q), want %v", res.Flavours, res.Baseline, want)
	}
	n := 0
	for _, lib := range res.Groups {
		gsum := map[string]float64{}
		for _, k := range res.Keys[lib] {
			base := raw[lib+"|"+k.Variant+"|"+k.Name+"|stock"]
			for _, fl := range res.Flavours {
				vals := raw[lib+"|"+k.Variant+"|"+k.Name+"|"+fl]
				if len(vals) != 6 || len(base) != 6 {
					t.Fatalf("%s %s %s: %d samples and %d of stock, want 6", lib, k, fl, len(vals), len(base))
				}
				c, ok := res.Compare(lib, k, fl)
				if !ok {
					t.Fatalf("%s %s %s: no comparison", lib, k, fl)
				}
				n++
				var ratios []float64
				for i := range vals {
					ratios = append(ratios, vals[i]/base[i])
				}
				if !near(c.Value.Center, median(vals)) || !near(c.Value.Lo, slices.Min(vals)) || !near(c.Value.Hi, slices.Max(vals)) || c.Value.N != 6 {
					t.Errorf("%s %s %s: time %+v, want median %g in [%g, %g]", lib, k, fl, c.Value, median(vals), slices.Min(vals), slices.Max(vals))
				}
				if !near(c.Ratio, median(vals)/median(base)) {
					t.Errorf("%s %s %s: ratio %g, want %g", lib, k, fl, c.Ratio, median(vals)/median(base))
				}
				if !near(c.Paired.Center, median(ratios)) || !near(c.Paired.Lo, slices.Min(ratios)) || !near(c.Paired.Hi, slices.Max(ratios)) {
					t.Errorf("%s %s %s: paired %+v, want %g in [%g, %g]", lib, k, fl, c.Paired, median(ratios), slices.Min(ratios), slices.Max(ratios))
				}
				if fl == "stock" && (c.Ratio != 1 || c.P != 1) {
					t.Errorf("%s %s: stock against itself: ratio %g, p %g", lib, k, c.Ratio, c.P)
				}
				if c.P < 0 || c.P > 1 {
					t.Errorf("%s %s %s: p %g", lib, k, fl, c.P)
				}
				gsum[fl] += math.Log(median(vals) / median(base))
			}
		}
		for fl, s := range gsum {
			g, gn := res.Geomean(lib, fl)
			if gn != len(res.Keys[lib]) || !near(g, math.Exp(s/float64(gn))) {
				t.Errorf("%s %s: geomean %g over %d, want %g over %d", lib, fl, g, gn, math.Exp(s/float64(len(res.Keys[lib]))), len(res.Keys[lib]))
			}
		}
	}
	if n != 3*(4+2) {
		t.Errorf("%d comparisons, want 18", n)
	}
	sel, _ := Select(Suite(), []string{"logrus", "go-kit/log"})
	prices := 0
	for _, l := range sel {
		for _, p := range l.Pairs {
			get := func(k benchcmp.Key, fl string) []float64 { return raw[l.Name+"|"+k.Variant+"|"+k.Name+"|"+fl] }
			stock := median(get(p.With, "stock")) - median(get(p.Without, "stock"))
			for _, fl := range res.Flavours {
				pr, ok := PriceOf(res, l.Name, p, fl)
				if !ok {
					t.Fatalf("%s: no price in %s", p.Name, fl)
				}
				prices++
				d := median(get(p.With, fl)) - median(get(p.Without, fl))
				var per []float64
				for i := range 6 {
					per = append(per, (get(p.With, fl)[i]-get(p.Without, fl)[i])/(get(p.With, "stock")[i]-get(p.Without, "stock")[i]))
				}
				if !near(pr.Diff, d) || !near(pr.Ratio, d/stock) || !near(pr.Paired.Center, median(per)) || !near(pr.Paired.Hi, slices.Max(per)) {
					t.Errorf("%s %s: price %+v, want %g (%g× stock, paired %g up to %g)", p.Name, fl, pr, d, d/stock, median(per), slices.Max(per))
				}
			}
		}
	}
	if prices != 3*3 {
		t.Errorf("%d prices, want 9", prices)
	}
}

func TestSummarize(t *testing.T) {
	f, err := os.Open("testdata/results.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := Summarize(f, &out, Suite()); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"# logrus\n", "# go-kit/log\n",
		"# geomean of ×stock over each library's benchmarks\n",
		"# the price of caller information",
		"logrus: ReportCaller on vs off, 4 wrappers", "go-kit/log: caller valuer vs constant",
		"\nlinear-cf          ", "\nlinear-cf-nocache  ",
		"                   two-sample intervals: ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	// Every benchmark has a row per flavour, the first with its name.
	rows := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "Entry_ReportCaller_") || strings.HasPrefix(line, "OneWith ") || strings.HasPrefix(line, "ValueBindingCaller ") {
			rows++
			if f := strings.Fields(line); len(f) != 5 || f[1] != "stock" || !strings.HasSuffix(f[3], "%") || f[4] != "6" {
				t.Errorf("stock row %q: want name, stock, median, ±, n", line)
			}
		}
	}
	if rows != 6 {
		t.Errorf("%d benchmark rows, want 6:\n%s", rows, s)
	}
	// Instruction counts with their part in the symbol tables: the
	// price of the caller, and the part of it in the tables.
	var in strings.Builder
	for _, fl := range []struct {
		name             string
		with, withSymtab int
	}{{"stock", 3000, 1000}, {"default", 2500, 400}} {
		fmt.Fprintf(&in, "library: logrus\ntoolchain: %s\nBenchmarkEntry_ReportCaller_WithCaller 1000 %d instructions/op %d %s\n", fl.name, fl.with, fl.withSymtab, SymtabUnit)
		fmt.Fprintf(&in, "library: logrus\ntoolchain: %s\nBenchmarkEntry_ReportCaller_NoCaller 1000 2000 instructions/op 0 %s\n", fl.name, SymtabUnit)
	}
	out.Reset()
	if err := Summarize(strings.NewReader(in.String()), &out, Suite()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## instructions per operation (cachegrind)",
		"## instructions per operation in the runtime's unwinder and symbol tables",
		"default                   500   0.500",
		"default                   400   0.400",
		"default            1 of 1 prices <= 0.6× stock's",
		// The floor: (500 - 400) / 1000.
		"## the price's floor",
		"default              0.500   0.100\n",
		"# floors <= 0.6",
		"default            1 of 1\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("instruction summary lacks %q:\n%s", want, out.String())
		}
	}
	if err := Summarize(strings.NewReader("toolchain: linear\nBenchmarkX 1 1 ns/op\n"), &out, nil); err == nil {
		t.Errorf("Summarize without stock results succeeded")
	}
}

func TestNormalize(t *testing.T) {
	roots := []string{"/usr/local/go", "/root/.cache/pctab-toolchain/k/go", "/root/.cache/pctab-toolchain/k/twin"}
	for _, tt := range []struct{ stock, patched string }{
		{"--- PASS: TestX (0.00s)", "--- PASS: TestX (1.25s)"},
		{"ok  \tgithub.com/pkg/errors\t0.014s", "ok  \tgithub.com/pkg/errors\t12s"},
		{"FAIL\tgithub.com/pkg/errors\t0.014s", "FAIL\tgithub.com/pkg/errors\t0.3s"},
		{"\t/usr/local/go/src/testing/testing.go:2036 +0x1f", "\t/root/.cache/pctab-toolchain/k/go/src/testing/testing.go:2036 +0x2b"},
		{"main.f(0xc000012345, 0x2)", "main.f(0xc000098765, 0x3)"},
		{"E1126 15:01:37.180136    1234 klog_test.go:242] test", "E1127 09:00:00.000001   54321 klog_test.go:242] test"},
		{"exception_test.go:376: got 2 exceptions in 6.752µs", "exception_test.go:376: got 2 exceptions in 17.5ms"},
		{"retry after 1m30s, 250ns, 2h0m0s", "retry after 45s, 3us, 1h5m0.5s"},
	} {
		if a, b := Normalize(tt.stock, roots), Normalize(tt.patched, roots); a != b {
			t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q", tt.stock, a, tt.patched, b)
		}
	}
	for _, tt := range []struct{ stock, patched string }{
		{"\t/usr/local/go/src/testing/testing.go:2036", "\t/usr/local/go/src/testing/testing.go:2037"},
		{"github.com/pkg/errors.TestFormatNew", "github.com/pkg/errors.TestFormatWrap"},
		{"--- PASS: TestX (0.00s)", "--- FAIL: TestX (0.00s)"},
		{"format_test.go:26", "format_test.go:27"},
		{"E1126 15:01:37.180136    1234 klog_test.go:242] test", "E1126 15:01:37.180136    1234 klog_test.go:243] test"},
		{"I1126 15:01:37.180136    1234 klog_test.go:242] test", "E1126 15:01:37.180136    1234 klog_test.go:242] test"},
		{"exception_test.go:376: got 2 exceptions in 6.752µs", "exception_test.go:377: got 2 exceptions in 6.752µs"},
		{"logger_test.go:12s", "logger_test.go:13s"},
	} {
		if a, b := Normalize(tt.stock, roots), Normalize(tt.patched, roots); a == b {
			t.Errorf("Normalize makes %q and %q equal: %q", tt.stock, tt.patched, a)
		}
	}
}

func TestFirstDiff(t *testing.T) {
	if d := FirstDiff("a\nb\n", "a\nb\n", 2); d != "" {
		t.Errorf("FirstDiff of equal texts: %q", d)
	}
	if d, want := FirstDiff("a\nb\nc\nd", "a\nb\nX\nd", 2), " a\n b\n-c\n-d\n+X\n+d\n"; d != want {
		t.Errorf("FirstDiff = %q, want %q", d, want)
	}
	if d, want := FirstDiff("a", "a\nb", 1), " a\n+b\n"; d != want {
		t.Errorf("FirstDiff = %q, want %q", d, want)
	}
}
