package tracestore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	xtrace "golang.org/x/exp/trace"
)

// TraceFilesVar names globs of execution traces, separated as in PATH,
// that TestTraceFiles checks; unset, the test is skipped.
const TraceFilesVar = "PCTAB_TRACE_FILES"

// TestTraceFiles builds a store of every trace that $PCTAB_TRACE_FILES
// names and checks it against x/exp/trace's reading of the
// trace, as TestRealTraces does, and event by event: time, kind,
// goroutine, proc, thread, every frame of the stack (function, file,
// line), and the strings and IDs of state transitions, ranges, regions,
// tasks, logs, labels and metrics. It is for traces recorded by hand:
// programs of odd shapes, other releases' tracers.
func TestTraceFiles(t *testing.T) {
	globs := os.Getenv(TraceFilesVar)
	if globs == "" {
		t.Skipf("set %s to globs of trace files", TraceFilesVar)
	}
	var files []string
	for _, g := range filepath.SplitList(globs) {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("%s=%s names no file", TraceFilesVar, globs)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkRealTrace(t, path)
			checkEventDetails(t, path)
		})
	}
}

// checkEventDetails builds a store of the trace at path and compares
// every event of it with x/exp/trace's.
func checkEventDetails(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Build(bytes.NewReader(data), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	if err := s.Events(0, m.Duration+1, func(e *Event) bool { evs = append(evs, *e); return true }); err != nil {
		t.Fatal(err)
	}
	var base int64
	frames, maxDepth := 0, 0
	for i := 0; ; i++ {
		x, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			if i != len(evs) {
				t.Fatalf("the trace has %d events, the store %d", i, len(evs))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			base = int64(x.Time())
		}
		if i >= len(evs) {
			t.Fatalf("the trace has more than the store's %d events", len(evs))
		}
		e := &evs[i]
		if e.Time != int64(x.Time())-base || e.Kind != x.Kind() || e.G != int64(x.Goroutine()) || e.P != int64(x.Proc()) || e.M != int64(x.Thread()) {
			t.Fatalf("event %d: %+v; the trace's: %v", i, e, x)
		}
		st := x.Stack()
		if x.Kind() == xtrace.EventStateTransition && st == xtrace.NoStack {
			st = x.StateTransition().Stack
		}
		var want []Frame
		for f := range st.Frames() {
			want = append(want, Frame{f.Func, f.File, uint32(f.Line)})
		}
		got, err := s.Stack(e.Stack)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("event %d: stack %d has frames\n%v\nthe trace's:\n%v", i, e.Stack, got, want)
		}
		frames += len(want)
		maxDepth = max(maxDepth, len(want))
		str := func(k int) string { return s.String(uint32(e.Args[k])) }
		var ok bool
		switch x.Kind() {
		case xtrace.EventStateTransition:
			tr := x.StateTransition()
			ok = str(2) == tr.Reason && e.Args[0]&0xff == uint64(tr.Resource.Kind)
		case xtrace.EventRangeBegin, xtrace.EventRangeActive, xtrace.EventRangeEnd:
			ok = str(0) == x.Range().Name && e.Args[1] == uint64(x.Range().Scope.Kind)
		case xtrace.EventRegionBegin, xtrace.EventRegionEnd:
			ok = str(0) == x.Region().Type && e.Args[1] == uint64(x.Region().Task)
		case xtrace.EventTaskBegin, xtrace.EventTaskEnd:
			tk := x.Task()
			ok = str(0) == tk.Type && e.Args[1] == uint64(tk.ID) && e.Args[2] == uint64(tk.Parent)
		case xtrace.EventLog:
			l := x.Log()
			ok = str(0) == l.Category && str(1) == l.Message && e.Args[2] == uint64(l.Task)
		case xtrace.EventLabel:
			ok = str(0) == x.Label().Label
		case xtrace.EventMetric:
			mt := x.Metric()
			ok = str(0) == mt.Name && (mt.Value.Kind() != xtrace.ValueUint64 || e.Args[1] == mt.Value.Uint64())
		default:
			ok = true
		}
		if !ok {
			t.Fatalf("event %d: %+v; the trace's: %v", i, e, x)
		}
	}
	t.Logf("%d events, %d frames in their stacks, the deepest %d", len(evs), frames, maxDepth)
}
