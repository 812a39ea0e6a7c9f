package resolve_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/trampoline"
	"github.com/pctab/pctab/trampoline/resolve"
)

//go:noinline
func spin(n int) int {
	x := 0
	for i := range n {
		x += i * i % 7
	}
	return x
}

// weights are the CPU shares of the workload's labels: each label runs
// the same number of tasks, task i of label k spinning weights[k] units.
var weights = map[string]int{"q1": 1, "q2": 2, "q3": 3, "q4": 4}

// workload runs labelled tasks on two workers for about d of CPU time,
// each task through both mechanisms at once: pprof.Do's goroutine labels
// (key "pprof_query") and a trampoline label (key "query").
func workload(t *testing.T, d time.Duration) {
	labels := map[string]*trampoline.Label{}
	for name := range weights {
		l, err := trampoline.New("query", name)
		testenv.SkipUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
		labels[name] = l
		defer l.Close()
	}
	names := []string{"q1", "q2", "q3", "q4"}
	const unit = 20000
	tasks := make(chan string, 64)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for name := range tasks {
				w := weights[name]
				pprof.Do(ctx, pprof.Labels("pprof_query", name), func(context.Context) {
					labels[name].Do(func() { spin(w * unit) })
				})
			}
		}()
	}
	// Run for d of the process's CPU time (not wall time: these machines
	// are shared), or a minute, whichever comes first.
	cpu0 := processCPU()
	for start := time.Now(); processCPU()-cpu0 < d && time.Since(start) < time.Minute; {
		for range 8 {
			for _, name := range names {
				tasks <- name
			}
		}
	}
	close(tasks)
	wg.Wait()
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	d, _ := cputime.Process()
	return d
}

// shares returns each label's share of the labelled samples under key.
func shares(p *profile.Profile, key string) (map[string]float64, int64) {
	counts := map[string]int64{}
	var n int64
	for _, s := range p.Sample {
		if v := s.Label[key]; len(v) == 1 {
			counts[v[0]] += s.Value[0]
			n += s.Value[0]
		}
	}
	out := map[string]float64{}
	for k, c := range counts {
		out[k] = float64(c) / float64(n)
	}
	return out, n
}

// checkShares compares measured shares with the workload's truth, within
// five standard errors of a share estimated from n samples (a test that
// fails here means a wrong attribution, not bad luck: at 5σ a correct one
// fails once in millions of runs).
func checkShares(t *testing.T, what string, got map[string]float64, n int64) {
	t.Helper()
	total := 0
	for _, w := range weights {
		total += w
	}
	if n < 50 {
		t.Fatalf("%s: only %d labelled samples", what, n)
	}
	for name, w := range weights {
		p := float64(w) / float64(total)
		tol := 5 * math.Sqrt(p*(1-p)/float64(n))
		if d := got[name] - p; math.Abs(d) > tol {
			t.Errorf("%s: %s has %.3f of %d samples, truth %.3f (tolerance %.3f)", what, name, got[name], n, p, tol)
		}
		t.Logf("%s: %s %.3f (truth %.3f)", what, name, got[name], p)
	}
}

// TestAttribution profiles the workload with both mechanisms at once, as a
// CPU profile and as an execution trace with CPU samples, resolves the
// trampoline labels from this test binary, and checks both mechanisms'
// shares against the truth and against each other.
func TestAttribution(t *testing.T) {
	if trace.IsEnabled() {
		t.Fatal("tracing is already enabled")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := objscan.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	tr, err := resolve.Find(bin)
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != trampoline.N {
		t.Fatalf("found %d trampolines in the binary, the package has %d", tr.N, trampoline.N)
	}
	var pbuf, tbuf bytes.Buffer
	if err := pprof.StartCPUProfile(&pbuf); err != nil {
		t.Fatal(err)
	}
	if err := trace.Start(&tbuf); err != nil {
		t.Fatal(err)
	}
	d := 3 * time.Second // about 300 samples at pprof's 100 Hz
	if !testenv.Full() {
		d = 1500 * time.Millisecond
	}
	workload(t, d)
	trace.Stop()
	pprof.StopCPUProfile()
	// PCTAB_LABELS_OUT=dir keeps the trace and profile, for measuring
	// what the trampoline frames cost tracebacks (docs/labels.md).
	if dir := os.Getenv("PCTAB_LABELS_OUT"); dir != "" {
		os.WriteFile(dir+"/labels.trace", tbuf.Bytes(), 0o644)
		os.WriteFile(dir+"/labels.pprof", pbuf.Bytes(), 0o644)
	}
	var hbuf bytes.Buffer
	if err := trampoline.WriteHistory(&hbuf); err != nil {
		t.Fatal(err)
	}
	h, err := trampoline.ReadHistory(&hbuf)
	if err != nil {
		t.Fatal(err)
	}

	p, err := profile.Parse(&pbuf)
	if err != nil {
		t.Fatal(err)
	}
	lp, st, err := resolve.Profile(p, tr, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pprof: %+v", st)
	if st.Through == 0 || st.Unattributed != 0 {
		t.Errorf("pprof: %+v: want samples through trampolines, all attributed", st)
	}
	got, n := shares(lp, "query")
	checkShares(t, "trampoline labels (pprof)", got, n)
	got, n = shares(lp, "pprof_query")
	checkShares(t, "pprof.Do labels", got, n)
	// Every sample taken inside a trampoline ran inside pprof.Do too: the
	// two mechanisms must agree sample by sample. (The converse does not
	// hold: pprof.Do's labels are on before the trampoline is entered.)
	for _, s := range lp.Sample {
		if a, b := s.Label["query"], s.Label["pprof_query"]; len(a) == 1 && (len(b) != 1 || a[0] != b[0]) {
			t.Fatalf("sample labelled %v by its trampoline, %v by pprof.Do", a, b)
		}
	}
	// Without symbols, the trampolines are found by PC in the ranges
	// objscan read from the binary: the labels must be the same.
	bare := p.Copy()
	for _, loc := range bare.Location {
		loc.Line = nil
	}
	bare.Function = nil
	bp, bst, err := resolve.Profile(bare, tr, h)
	if err != nil {
		t.Fatal(err)
	}
	if bst.ByName || bst.Labelled != st.Labelled {
		t.Errorf("by PC: %+v, by name: %+v", bst, st)
	}
	for i, s := range bp.Sample {
		if a, b := s.Label["query"], lp.Sample[i].Label["query"]; len(a) != len(b) || len(a) == 1 && a[0] != b[0] {
			t.Fatalf("sample %d: label %v by PC, %v by name", i, a, b)
		}
	}
	// Folding: no trampoline function remains, one folded function does.
	folded := 0
	for _, fn := range lp.Function {
		if resolve.Number(fn.Name) >= 0 {
			t.Fatalf("function %s not folded", fn.Name)
		}
		if fn.Name == resolve.Folded {
			folded++
		}
	}
	if folded != 1 {
		t.Errorf("%d folded trampoline functions, want 1", folded)
	}

	c, err := stackinput.ReadTrace(&tbuf)
	if err != nil {
		t.Fatal(err)
	}
	tp, tst, err := resolve.Trace(c, tr, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trace: %+v", tst)
	if runtime.GOOS == "linux" {
		// The trace's clock is the history's monotonic clock.
		if tst.Through == 0 || tst.Unattributed != 0 {
			t.Errorf("trace: %+v: want samples through trampolines, all attributed", tst)
		}
		got, n = shares(tp, "query")
		checkShares(t, "trampoline labels (trace)", got, n)
	}
}

// TestHistoryResolution checks the choice of binding with synthetic
// histories: by time for traces, and only when unique for pprof.
func TestHistoryResolution(t *testing.T) {
	h := trampoline.History{SchemaVersion: 1, Trampolines: 2, Bindings: []trampoline.Binding{
		{Trampoline: 0, Key: "q", Value: "a", StartMono: 100, EndMono: 200, StartUnix: 1000, EndUnix: 1100},
		{Trampoline: 0, Key: "q", Value: "b", StartMono: 300, StartUnix: 1200},
		{Trampoline: 1, Key: "q", Value: "c", StartMono: 50, EndMono: 60, StartUnix: 950, EndUnix: 960},
	}}
	fn := &profile.Function{ID: 1, Name: resolve.Prefix + "0000"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	for _, tc := range []struct {
		start, dur int64
		want       string
	}{
		{1000, 100, "a"}, // only a overlaps
		{1150, 500, "b"}, // only b
		{1050, 500, ""},  // a and b: ambiguous
		{2000, 100, "b"}, // b is still bound
		{900, 20, ""},    // nothing bound to trampoline 0
	} {
		p := &profile.Profile{TimeNanos: tc.start, DurationNanos: tc.dur,
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
			Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{1}}},
			Location:   []*profile.Location{loc}, Function: []*profile.Function{fn}}
		out, st, err := resolve.Profile(p, &resolve.Trampolines{}, h)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if v := out.Sample[0].Label["q"]; len(v) == 1 {
			got = v[0]
		}
		if got != tc.want || st.Through != 1 || (st.Labelled == 1) != (tc.want != "") {
			t.Errorf("profile [%d, +%d): label %q (%+v), want %q", tc.start, tc.dur, got, st, tc.want)
		}
	}
}
