package tracestore

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	xtrace "golang.org/x/exp/trace"
)

// benchStore builds a store of the trace named by $TRACESTORE_BENCH_TRACE,
// or of an in-process trace.
func benchStore(b *testing.B) *Store {
	var data []byte
	if p := os.Getenv("TRACESTORE_BENCH_TRACE"); p != "" {
		var err error
		if data, err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	} else {
		data = recordTrace(b)
	}
	dir := filepath.Join(b.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkFrame computes one viewer frame: 2,000 pixels of each of the 64
// lanes with the most spans, over the whole trace and over a hundredth of
// it, one QueryRow per lane.
func BenchmarkFrame(b *testing.B) {
	s := benchStore(b)
	lanes := make([]int, len(s.Lanes()))
	for i := range lanes {
		lanes[i] = i
	}
	sort.SliceStable(lanes, func(i, j int) bool { return s.Lanes()[lanes[i]].Spans > s.Lanes()[lanes[j]].Spans })
	lanes = lanes[:min(64, len(lanes))]
	d := s.Manifest().Duration
	cells := make([]Cell, 2000)
	for _, v := range []struct {
		name   string
		t0, t1 int64
	}{{"whole", 0, d + 1}, {"hundredth", d / 2, d/2 + d/100}} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				for _, l := range lanes {
					s.QueryRow(l, v.t0, v.t1, cells)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
		})
	}
}

// BenchmarkQuery finds the events whose stack passes through a function,
// over the whole trace: through the store's function index (reading only
// the pages it names and re-checking their events), and by re-reading the
// whole trace with x/exp/trace, as a tool without the store must. The
// function is $TRACESTORE_BENCH_FUNC, or runtime.gcBgMarkWorker.
func BenchmarkQuery(b *testing.B) {
	var data []byte
	if p := os.Getenv("TRACESTORE_BENCH_TRACE"); p != "" {
		var err error
		if data, err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	} else {
		data = recordTrace(b)
	}
	fn := os.Getenv("TRACESTORE_BENCH_FUNC")
	if fn == "" {
		fn = "runtime.gcBgMarkWorker"
	}
	dir := filepath.Join(b.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := s.Manifest().Duration
	var want int
	b.Run("store", func(b *testing.B) {
		var st QueryStats
		for range b.N {
			n := 0
			st, err = s.EventsThrough(fn, 0, d+1, func(*Event) bool { n++; return true })
			if err != nil {
				b.Fatal(err)
			}
			want = n
		}
		b.ReportMetric(float64(st.PagesRead), "pages-read")
		b.ReportMetric(float64(s.Manifest().Pages), "pages")
		b.ReportMetric(float64(want), "events")
	})
	b.Run("x-exp-trace", func(b *testing.B) {
		for range b.N {
			r, err := xtrace.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				e, err := r.ReadEvent()
				if err != nil {
					break
				}
				st := e.Stack()
				if e.Kind() == xtrace.EventStateTransition && st == xtrace.NoStack {
					st = e.StateTransition().Stack
				}
				for f := range st.Frames() {
					if f.Func == fn {
						n++
						break
					}
				}
			}
			if n != want {
				b.Fatalf("x/exp/trace finds %d events, the store %d", n, want)
			}
		}
		b.ReportMetric(float64(want), "events")
	})
}
