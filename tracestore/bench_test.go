package tracestore

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
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
