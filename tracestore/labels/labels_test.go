package labels_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
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

// weights are the CPU shares of the workload's labels, as in
// trampoline/resolve's tests.
var weights = map[string]int{"q1": 1, "q2": 2, "q3": 3, "q4": 4}

// Workload runs trampoline/resolve's labelled workload for d of the
// process's CPU time (or a minute) while it records an execution trace
// with CPU samples, and returns the trace and the trampoline history.
func Workload(t testing.TB, d time.Duration) (traceData []byte, h trampoline.History) {
	if trace.IsEnabled() {
		t.Fatal("tracing is already enabled")
	}
	var pbuf, tbuf bytes.Buffer
	if err := pprof.StartCPUProfile(&pbuf); err != nil { // CPU samples in the trace
		t.Fatal(err)
	}
	if err := trace.Start(&tbuf); err != nil {
		t.Fatal(err)
	}
	ls := map[string]*trampoline.Label{}
	for name := range weights {
		l, err := trampoline.New("query", name)
		if err != nil {
			t.Fatal(err)
		}
		ls[name] = l
	}
	names := []string{"q1", "q2", "q3", "q4"}
	const unit = 20000
	tasks := make(chan string, 64)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range tasks {
				pprof.Do(context.Background(), pprof.Labels("pprof_query", name), func(context.Context) {
					ls[name].Do(func() { spin(weights[name] * unit) })
				})
			}
		}()
	}
	cpu0, _ := cputime.Process()
	for start := time.Now(); time.Since(start) < time.Minute; {
		if c, _ := cputime.Process(); c-cpu0 >= d {
			break
		}
		for range 8 {
			for _, name := range names {
				tasks <- name
			}
		}
	}
	close(tasks)
	wg.Wait()
	trace.Stop()
	pprof.StopCPUProfile()
	for _, l := range ls {
		l.Close()
	}
	var hbuf bytes.Buffer
	if err := trampoline.WriteHistory(&hbuf); err != nil {
		t.Fatal(err)
	}
	h, err := trampoline.ReadHistory(&hbuf)
	if err != nil {
		t.Fatal(err)
	}
	return tbuf.Bytes(), h
}

// TestAgreesWithResolve builds a store and its label index of the
// labelled workload, and checks the index sample by sample against
// trampoline/resolve's attribution of the same trace (what pctab-stats
// labels -trace runs): the same samples under each label, with the same
// stacks, so the same CPU shares by label and by function.
func TestAgreesWithResolve(t *testing.T) {
	d := 1500 * time.Millisecond
	if testenv.Full() {
		d = 10 * time.Second // scaled up: some 1,000 samples
	}
	data, h := Workload(t, d)
	dir := filepath.Join(t.TempDir(), "store")
	m, err := tracestore.Build(bytes.NewReader(data), dir, tracestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ibuf bytes.Buffer
	st, err := labels.Build(bytes.NewReader(data), h, m.BaseTime, &ibuf)
	if err != nil {
		t.Fatal(err)
	}
	x, err := labels.Read(ibuf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	c, err := stackinput.ReadTrace(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	p, rst, err := resolve.Trace(c, nil, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("index: %+v; resolve: %+v", st, rst)
	if st.Samples != rst.Samples || st.Through != rst.Through || st.Labelled != rst.Labelled || st.Unattributed != rst.Unattributed {
		t.Fatalf("index counts %+v, resolve %+v", st, rst)
	}
	if st.Labelled < 50 {
		t.Fatalf("only %d labelled samples", st.Labelled)
	}
	// Each label's samples as stacks of function names, innermost first.
	want := map[labels.Label][]string{}
	for _, s := range p.Sample {
		var fs []string
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				fs = append(fs, ln.Function.Name)
			}
		}
		l := labels.Label{}
		if v := s.Label["query"]; len(v) == 1 {
			l = labels.Label{Key: "query", Value: v[0]}
		}
		for range s.Value[0] {
			want[l] = append(want[l], strings.Join(fs, ";"))
		}
	}
	for _, l := range x.Labels() {
		var got []string
		for _, s := range x.Samples(l, 0, m.Duration+1) {
			got = append(got, strings.Join(x.Stack(s.Stack), ";"))
		}
		w := want[l]
		slices.Sort(got)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("label %q: %d samples, resolve %d, or different stacks", l, len(got), len(w))
		}
		delete(want, l)
		if l.Key == "" {
			continue
		}
		fc := x.ByFunc(x.Samples(l, 0, m.Duration+1))
		t.Logf("%s: %d samples (%.3f of the labelled), top %+v", l, len(got), float64(len(got))/float64(st.Labelled), fc[0])
	}
	for l, w := range want {
		t.Errorf("label %q: resolve has %d samples, the index none", l, len(w))
	}
	// A time range: the samples of q3 in the middle third, against a
	// filter of all of them.
	q3 := labels.Label{Key: "query", Value: "q3"}
	all := x.Samples(q3, 0, m.Duration+1)
	t0, t1 := m.Duration/3, 2*m.Duration/3
	n := 0
	for _, s := range all {
		if s.Time >= t0 && s.Time < t1 {
			n++
		}
	}
	if got := len(x.Samples(q3, t0, t1)); got != n || n == 0 {
		t.Errorf("q3 in [%d, %d): %d samples, want %d (of %d)", t0, t1, got, n, len(all))
	}
	if os.Getenv("LABELS_KEEP") != "" {
		os.WriteFile(os.Getenv("LABELS_KEEP")+".trace", data, 0o644)
	}
}
