package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
	"github.com/pctab/pctab/trampoline"
	xtrace "golang.org/x/exp/trace"
)

//go:noinline
func labelsSpin(n int) int {
	x := 0
	for i := range n {
		x += i * i % 7
	}
	return x
}

// TestLabels profiles labelled work in this test process, then runs
// pctab-stats labels on the profile and this binary: every sample of the
// work must carry its label, and go tool pprof's -tagfocus must find it.
func TestLabels(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, err := trampoline.New("query", "alpha")
	testenv.SkipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	b, err := trampoline.New("query", "beta")
	testenv.SkipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	var pbuf bytes.Buffer
	if err := pprof.StartCPUProfile(&pbuf); err != nil {
		t.Fatal(err)
	}
	c0, _ := cputime.Process()
	for c := c0; c-c0 < 300*time.Millisecond; c, _ = cputime.Process() {
		a.Do(func() { labelsSpin(100000) })
		b.Do(func() { labelsSpin(300000) })
	}
	pprof.StopCPUProfile()
	a.Close()
	b.Close()
	pp, hp, out := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "history.json"), filepath.Join(dir, "labelled.pprof")
	if err := os.WriteFile(pp, pbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	hf, err := os.Create(hp)
	if err != nil {
		t.Fatal(err)
	}
	if err := trampoline.WriteHistory(hf); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"labels", "-json", "-history", hp, "-pprof", pp, "-o", out, exe}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res struct {
		SchemaVersion int   `json:"schema_version"`
		Trampolines   int   `json:"trampolines"`
		Samples       int64 `json:"samples"`
		Through       int64 `json:"through"`
		Labelled      int64 `json:"labelled"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	checkJSONValue(t, "labels", stdout.Bytes())
	if res.SchemaVersion != labelsSchemaVersion || res.Trampolines != trampoline.N || res.Through == 0 || res.Labelled != res.Through {
		t.Fatalf("result %+v", res)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, s := range p.Sample {
		for _, v := range s.Label["query"] {
			seen[v] += s.Value[0]
		}
	}
	if seen["alpha"] == 0 || seen["beta"] == 0 || seen["beta"] < seen["alpha"] {
		t.Errorf("samples per label %v: want both, beta (3x the work) above alpha", seen)
	}
	// go tool pprof -tagfocus selects the labelled samples.
	cmd := exec.Command("go", "tool", "pprof", "-top", "-tagfocus=query=beta", out)
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, o)
	}
	if !strings.Contains(string(o), "labelsSpin") {
		t.Errorf("-tagfocus=query=beta shows no labelsSpin:\n%s", o)
	}
}

// TestLabelsHostile runs pctab-stats labels on this test binary with a
// hostile history (issue 26, item 10: a 60-byte history whose trampoline
// count panicked in makeslice) and with a gzip bomb as the profile (item
// 11): each must fail with an error that says what is wrong.
func TestLabelsHostile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var pb bytes.Buffer
	fn := &profile.Function{ID: 1, Name: "github.com/pctab/pctab/trampoline.t0000"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	good := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{1}}},
		Location: []*profile.Location{loc}, Function: []*profile.Function{fn}}
	if err := good.Write(&pb); err != nil {
		t.Fatal(err)
	}
	goodProfile := write("good.pprof", pb.Bytes())
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	bombProfile := write("bomb.pprof", bomb.Bytes())
	goodHistory := write("good.json", []byte(`{"schema_version":1,"trampolines":1024,"bindings":[]}`))
	for _, tc := range []struct {
		name, history, profile, want string
	}{
		{"trampolines 9e18", write("h1.json", []byte(`{"schema_version":1,"trampolines":9000000000000000000}`)), goodProfile, "trampolines 9000000000000000000 is out of range"},
		{"trampolines 4e9", write("h2.json", []byte(`{"schema_version":1,"trampolines":4000000000}`)), goodProfile, "trampolines 4000000000 is out of range"},
		{"trampolines 3e8", write("h3.json", []byte(`{"schema_version":1,"trampolines":300000000}`)), goodProfile, "trampolines 300000000 is out of range"},
		{"gzip bomb", goodHistory, bombProfile, "decompress to more than"},
		{"good", goodHistory, goodProfile, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"labels", "-history", tc.history, "-pprof", tc.profile, "-o", filepath.Join(dir, "out.pprof"), exe}, &stdout, &stderr)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				return
			}
			if code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestLabelsCutTraceHelper is the child's side of TestLabelsCutTrace.
func TestLabelsCutTraceHelper(t *testing.T) { labelstest.MultiGenHelper(t) }

// TestLabelsCutTrace runs labels -trace on a trace cut short, of this
// test binary's labelled workload: it failed, where pctab-trace build
// keeps the trace's whole generations. It labels the samples x/exp/trace
// reads before it fails, and says where the trace was cut: in its text,
// on stderr, and in -json's truncated, as the store's manifest does; and
// so do stacks and replay, which also failed.
func TestLabelsCutTrace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, h := labelstest.MultiGenWorkload(t, "TestLabelsCutTraceHelper")
	cut := data[:len(data)/2]
	dir := t.TempDir()
	tp, hp, out := filepath.Join(dir, "cut.trace"), filepath.Join(dir, "history.json"), filepath.Join(dir, "labelled.pprof")
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tp, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, hb, 0o644); err != nil {
		t.Fatal(err)
	}
	// The truth: the CPU samples x/exp/trace reads before its error, and
	// what a store of the trace says it dropped.
	var want int64
	r, err := xtrace.NewReader(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			t.Fatal("x/exp/trace reads the cut trace to its end")
		}
		if err != nil {
			break
		}
		if ev.Kind() == xtrace.EventStackSample {
			want++
		}
	}
	m, err := tracestore.Build(bytes.NewReader(cut), filepath.Join(dir, "store"), tracestore.Options{})
	if err != nil || m.Truncated == nil {
		t.Fatalf("the store of the cut trace: %v, truncated %v", err, m.Truncated)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"labels", "-json", "-history", hp, "-trace", tp, "-o", out, exe}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checkJSONValue(t, "labels", stdout.Bytes())
	var res labelsJSON
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if res.Samples != want || want == 0 || res.Labelled == 0 {
		t.Errorf("%d samples (%d labelled), x/exp/trace reads %d", res.Samples, res.Labelled, want)
	}
	if res.Truncated == nil || *res.Truncated != *m.Truncated {
		t.Errorf("truncated %+v, the store's manifest %+v", res.Truncated, m.Truncated)
	}
	if !strings.Contains(stderr.String(), "warning: "+tp+": the trace is cut") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"labels", "-history", hp, "-trace", tp, "-o", out, exe}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if w := fmt.Sprintf("the trace is cut: the samples are those of its first %d generations", m.Truncated.Generations); !strings.Contains(stdout.String(), w) {
		t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
	}
	// stacks and replay read the same stacks of the cut trace, and say so.
	for _, args := range [][]string{
		{"stacks", "-json", "-trace", tp, exe},
		{"replay", "-json", "-count", "1", "-frames", "20000", "-enc", "varint", "-workload", "symbolize", "-trace", tp, exe},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr.String())
		}
		checkJSONValue(t, args[0], stdout.Bytes())
		var res struct {
			Truncated *tracestore.Truncation `json:"truncated"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("%s: %v: %s", args[0], err, stdout.String())
		}
		if res.Truncated == nil || *res.Truncated != *m.Truncated {
			t.Errorf("%s: truncated %+v, the store's manifest %+v", args[0], res.Truncated, m.Truncated)
		}
		if !strings.Contains(stderr.String(), "warning: "+tp+": the trace is cut") {
			t.Errorf("%s: stderr:\n%s", args[0], stderr.String())
		}
	}
}
