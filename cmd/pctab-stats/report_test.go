package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
	"golang.org/x/perf/benchfmt"
)

var update = flag.Bool("update", false, "rewrite the golden files of the report tests")

// smallSets keeps -bench fast in tests: the cold set is 4,096 pairs
// instead of 1,048,576.
func smallSets(cfg *reportConfig) {
	cfg.bopt.HotSize = 1 << 10
	cfg.bopt.ColdSize = 1 << 12
}

// gofmtBinary returns the local toolchain's gofmt.
func gofmtBinary(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "bin", "gofmt")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no gofmt in the local toolchain: %v", err)
	}
	return p
}

// TestReportGolden compares the text report of the features program with a
// golden file, for the stable part of the report: the spec encoding only
// (-variants=false), with the binary's path replaced. The numbers depend on
// the toolchain, so the golden file is per Go version and target; run
// go test -run TestReportGolden -update to write one for the local toolchain.
func TestReportGolden(t *testing.T) {
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", fmt.Sprintf("report-features-%s-%s-%s.golden", f.GoVersion, f.GOOS, f.GOARCH))
	f.Close()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"report", "-variants=false", bin}, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr.String())
	}
	got := strings.ReplaceAll(stdout.String(), bin, "BINARY")
	if *update {
		if err := os.MkdirAll("testdata", 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o666); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if os.IsNotExist(err) {
		t.Skipf("no golden file %s for this toolchain; run with -update to write it", golden)
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("report differs from %s (-want +got):\n%s", golden, diff)
	}
}

// stableKeys are JSON fields scripts rely on; they must never disappear.
var stableKeys = []string{
	"schema_version", "path", "file_bytes", "goos", "goarch", "go_version", "pclntab_version", "pclntab_magic",
	"pclntab_header_magic", "pclntab_magic_foreign", "entryoff_key",
	"byte_order", "ptr_size", "pc_quantum", "functions", "pclntab_bytes", "pclntab_parts",
	"tables", "kinds", "out_of_band_bytes", "file_delta_percent", "tables_file_delta_percent",
	"assumption", "shape", "variants", "hybrid", "best_variant",
}

// stableSpeedKeys are the fields of "speed" and of its groups and timings.
var stableSpeedKeys = [][]string{
	{"host", "sampling", "benchtime", "count", "return_addresses", "disassembler", "encodings", "clock", "groups"},
	{"set", "pcs", "samples", "tables", "flat_bytes", "timings", "linear_vs_varint", "linear_vs_varint_cache_hit"},
	{"encoding", "ns_per_op", "runs"},
}

// TestReportJSONRoundTrip checks that -json prints report.Report unchanged
// (so scripts reading the size report keep working), and that with -bench
// the object round-trips through the documented types without losing a
// field.
func TestReportJSONRoundTrip(t *testing.T) {
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	want, err := report.Compute(f, report.Options{Variants: true})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("size", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"report", "-json", bin}, &stdout, &stderr); code != 0 {
			t.Fatalf("report: exit %d\n%s", code, stderr.String())
		}
		var got report.Report
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, &got); diff != "" {
			t.Errorf("-json differs from report.Compute (-want +got):\n%s", diff)
		}
		checkKeys(t, stdout.Bytes(), stableKeys)
		checkJSONValue(t, "report", stdout.Bytes())
	})

	t.Run("bench", func(t *testing.T) {
		cfg, err := parseReportFlags([]string{"-format=json", "-bench", "-benchtime=50x", "-count=2", bin}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		smallSets(&cfg)
		var stdout, stderr bytes.Buffer
		if err := doReport(cfg, &stdout, &stderr); err != nil {
			t.Fatalf("doReport: %v\n%s", err, stderr.String())
		}
		line := stdout.Bytes()
		if bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("want one JSON line, got:\n%s", line)
		}
		var got struct {
			report.Report
			Speed *lookupbench.Result `json:"speed"`
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, &got.Report); diff != "" {
			t.Errorf("size part differs from report.Compute (-want +got):\n%s", diff)
		}
		if got.Speed == nil || len(got.Speed.Groups) != 12 || got.Speed.Count != 2 || got.Speed.BenchTime != "50x" {
			t.Fatalf("speed = %+v", got.Speed)
		}
		again, err := json.Marshal(jsonReport{reportSchemaVersion, &got.Report, got.Speed})
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		json.Unmarshal(line, &a)
		json.Unmarshal(again, &b)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("JSON does not round-trip (-printed +re-encoded):\n%s", diff)
		}
		checkKeys(t, line, append(stableKeys, "speed"))
		checkJSONValue(t, "report", line)
		var raw struct {
			Speed json.RawMessage `json:"speed"`
		}
		json.Unmarshal(line, &raw)
		checkKeys(t, raw.Speed, stableSpeedKeys[0])
		var sp struct {
			Groups []json.RawMessage `json:"groups"`
		}
		json.Unmarshal(raw.Speed, &sp)
		checkKeys(t, sp.Groups[0], stableSpeedKeys[1])
		var g struct {
			Timings []json.RawMessage `json:"timings"`
		}
		json.Unmarshal(sp.Groups[0], &g)
		checkKeys(t, g.Timings[0], stableSpeedKeys[2])
	})
}

// checkKeys checks that the JSON object in data has every key in keys.
func checkKeys(t *testing.T, data []byte, keys []string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON object lacks %q", k)
		}
	}
}

// TestReportEndToEndGofmt runs the command on the local toolchain's gofmt:
// the text report, then the benchmark output, which must parse as benchstat
// parses it.
func TestReportEndToEndGofmt(t *testing.T) {
	gofmt := gofmtBinary(t)
	t.Run("text", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"report", gofmt}, &stdout, &stderr); code != 0 {
			t.Fatalf("report: exit %d\n%s", code, stderr.String())
		}
		for _, want := range []string{gofmt + "\n", "table kind", "pcsp", "total", "shape", "smallest linear variant"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, stdout.String())
			}
		}
	})
	t.Run("bench", func(t *testing.T) {
		cfg, err := parseReportFlags([]string{"-format=bench", "-benchtime=100x", "-count=2", gofmt}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		smallSets(&cfg)
		var stdout, stderr bytes.Buffer
		if err := doReport(cfg, &stdout, &stderr); err != nil {
			t.Fatalf("doReport: %v\n%s", err, stderr.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("stderr not empty (no terminal): %q", stderr.String())
		}
		names := map[string]int{}
		r := benchfmt.NewReader(bytes.NewReader(stdout.Bytes()), "gofmt.bench")
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.SyntaxError:
				t.Fatalf("not benchmark format: %v", rec)
			case *benchfmt.Result:
				names[string(rec.Name.Full())]++
				if rec.Iters != 100 {
					t.Errorf("%s: %d iterations, want 100", rec.Name, rec.Iters)
				}
				if v, ok := rec.Value("sec/op"); !ok || v <= 0 {
					t.Errorf("%s: time %v", rec.Name, v)
				}
				base, _ := rec.Name.Parts()
				if string(base) != "Lookup" {
					t.Errorf("%s: base name %s", rec.Name, base)
				}
				if !strings.Contains(string(rec.Name), "/bin=gofmt/") {
					t.Errorf("%s: no bin=gofmt", rec.Name)
				}
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		encs := 0
		for name, n := range names {
			if n != 2 {
				t.Errorf("%s: %d results, want 2 (-count=2)", name, n)
			}
			if strings.Contains(name, "set=hot/pcs=random/") {
				encs++
			}
		}
		if len(names) != 12*encs || encs < 9 {
			t.Errorf("%d benchmarks, %d encodings; want 12 per encoding (3 sets, 4 PC rules) and at least 9 encodings", len(names), encs)
		}
	})
}

// TestReportSeveralBinaries checks the comparison tables of a run on two
// binaries, with a subset of the lookup benchmarks.
func TestReportSeveralBinaries(t *testing.T) {
	features := testbuild.Build(t, testbuild.Config{Archive: "features"})
	gofmt := gofmtBinary(t)
	pairs := filepath.Join(t.TempDir(), "p")
	cfg, err := parseReportFlags([]string{"-bench=set=hot/pcs=0/enc=(varint|linear|flat)$", "-benchtime=10x", "-variants=false", "-pairs=" + pairs, features, gofmt}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	smallSets(&cfg)
	var stdout, stderr bytes.Buffer
	if err := doReport(cfg, &stdout, &stderr); err != nil {
		t.Fatalf("doReport: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"varint bytes  linear bytes", // size comparison
		"  set  pcs  varint  varint-cache-7in8  linear  flat  linear/varint  linear/cache-hit", // speed comparison
		"\ngofmt ",
		"lookup speed:", "hot set, 1,024 pairs",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cold set") || strings.Contains(out, "pcs=random") {
		t.Errorf("-bench ran unselected benchmarks:\n%s", out)
	}
	// -pairs wrote the hot sets and the cold random set of both binaries
	// (lookupbench tests the format).
	for _, bin := range []string{filepath.Base(features), "gofmt"} {
		for _, set := range []string{"hot-random", "hot-0", "cold-random"} {
			name := pairs + "." + bin + "." + set + ".pairs"
			if st, err := os.Stat(name); err != nil || st.Size() < int64(len(lookupbench.PairsMagic)+8) {
				t.Errorf("-pairs: %s: %v", name, err)
			}
		}
	}
}

func TestReportFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		format    string
		bench     string // "" for no -bench, else the regexp
		count     int
		benchtime lookupbench.BenchTime
		sampling  lookupbench.Sampling
		err       string
	}{
		{args: nil, format: "text", count: 1, benchtime: lookupbench.BenchTime{D: time.Second}},
		{args: []string{"-json"}, format: "json", count: 1, benchtime: lookupbench.BenchTime{D: time.Second}},
		{args: []string{"-bench"}, format: "text", bench: "(all)", count: 1, benchtime: lookupbench.BenchTime{D: time.Second}},
		{args: []string{"-bench=true"}, format: "text", bench: "(all)", count: 1, benchtime: lookupbench.BenchTime{D: time.Second}},
		{args: []string{"-bench=false"}, format: "text", count: 1, benchtime: lookupbench.BenchTime{D: time.Second}},
		{args: []string{"-bench=hot/.*linear", "-count=5", "-benchtime=2s"}, format: "text", bench: "hot/.*linear", count: 5, benchtime: lookupbench.BenchTime{D: 2 * time.Second}},
		{args: []string{"-format=bench", "-benchtime=1000x"}, format: "bench", bench: "(all)", count: 1, benchtime: lookupbench.BenchTime{N: 1000}},
		{args: []string{"-format=json", "-bench", "-sample=tables"}, format: "json", bench: "(all)", count: 1, benchtime: lookupbench.BenchTime{D: time.Second}, sampling: lookupbench.ByTable},
		{args: []string{"-format=xml"}, err: "-format=xml"},
		{args: []string{"-json", "-format=bench"}, err: "conflict"},
		{args: []string{"-count=0"}, err: "-count=0"},
		{args: []string{"-benchtime=0x"}, err: "invalid count"},
		{args: []string{"-bench=("}, err: "missing closing"},
		{args: []string{"-sample=funcs"}, err: "unknown sampling"},
		{args: []string{"-pairs=/tmp/p"}, err: "-pairs needs -bench"},
	} {
		name := strings.Join(tc.args, " ")
		cfg, err := parseReportFlags(append(tc.args, "BIN"), &bytes.Buffer{})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", name, err)
			continue
		}
		bench := ""
		if cfg.bench != nil {
			bench = cfg.bench.String()
			if bench == "" {
				bench = "(all)"
			}
		}
		if cfg.format != tc.format || bench != tc.bench || cfg.run.Count != tc.count ||
			cfg.run.BenchTime != tc.benchtime || cfg.bopt.Sampling != tc.sampling || !slices.Equal(cfg.paths, []string{"BIN"}) {
			t.Errorf("%q: got format %s bench %q count %d benchtime %v sampling %v paths %v", name, cfg.format, bench, cfg.run.Count, cfg.run.BenchTime, cfg.bopt.Sampling, cfg.paths)
		}
		if cfg.progress {
			t.Errorf("%q: progress on, but stderr is not a terminal", name)
		}
	}
}

func TestBenchNames(t *testing.T) {
	got := benchNames([]string{"/a/go", "/b/go", "/c/gofmt", "/d/my tool", "/e/go"})
	want := []string{"go", "go_2", "gofmt", "my_tool", "go_3"}
	if !slices.Equal(got, want) {
		t.Errorf("benchNames = %q, want %q", got, want)
	}
}

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, on: true}
	p.show("step %d", 1)
	p.show("step %d", 2)
	p.clear()
	p.clear()
	if want := "\r\033[Kstep 1\r\033[Kstep 2\r\033[K"; buf.String() != want {
		t.Errorf("progress wrote %q, want %q", buf.String(), want)
	}
	buf.Reset()
	off := &progress{w: &buf}
	off.show("x")
	off.clear()
	if buf.Len() != 0 {
		t.Errorf("progress off wrote %q", buf.String())
	}
	if isTerminal(&buf) {
		t.Error("a buffer is a terminal")
	}
}
