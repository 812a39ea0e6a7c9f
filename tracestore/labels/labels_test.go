package labels_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
	"github.com/pctab/pctab/trampoline/resolve"
	xtrace "golang.org/x/exp/trace"
)

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
	data, h := labelstest.Workload(t, d)
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

// TestCutTraceHelper is the child's side of TestCutTrace.
func TestCutTraceHelper(t *testing.T) { labelstest.MultiGenHelper(t) }

// samplesBeforeError counts the CPU samples x/exp/trace reads of data
// before its error, which it must give.
func samplesBeforeError(t *testing.T, data []byte) int64 {
	t.Helper()
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			t.Fatalf("x/exp/trace reads the cut trace to its end")
		}
		if err != nil {
			return n
		}
		if ev.Kind() == xtrace.EventStackSample {
			n++
		}
	}
}

// TestCutTrace builds the label index of a trace cut short: Build failed,
// where tracestore.Build keeps the trace's whole generations. It indexes
// the samples x/exp/trace reads before it fails, and its Stats say what
// was dropped, as the store's manifest does.
func TestCutTrace(t *testing.T) {
	data, h := labelstest.MultiGenWorkload(t, "TestCutTraceHelper")
	for _, cut := range []int{len(data) / 2, len(data) - 1} {
		cutData := data[:cut]
		want := samplesBeforeError(t, cutData)
		m, err := tracestore.Build(bytes.NewReader(cutData), filepath.Join(t.TempDir(), "store"), tracestore.Options{})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		var ibuf bytes.Buffer
		st, err := labels.Build(bytes.NewReader(cutData), h, m.BaseTime, &ibuf)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		t.Logf("cut at %d of %d: %+v, %s", cut, len(data), st, st.Truncated)
		if st.Samples != want || want == 0 {
			t.Errorf("cut at %d: %d samples, x/exp/trace reads %d", cut, st.Samples, want)
		}
		if st.Truncated == nil || m.Truncated == nil || *st.Truncated != *m.Truncated {
			t.Errorf("cut at %d: the index says %v, the store %v", cut, st.Truncated, m.Truncated)
		}
		x, err := labels.Read(ibuf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, l := range x.Labels() {
			n += int64(len(x.Samples(l, -1<<63, 1<<63-1)))
		}
		if n != want {
			t.Errorf("cut at %d: the index holds %d samples, want %d", cut, n, want)
		}
	}
}
