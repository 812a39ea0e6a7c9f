package tracestore_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/trace"
	"time"

	"github.com/pctab/pctab/tracestore"
)

//go:noinline
func sleepy() { time.Sleep(time.Millisecond) }

func Example() {
	// Record a trace of this process.
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		panic(err)
	}
	for range 3 {
		sleepy()
	}
	trace.Stop()

	// Store it.
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("tracestore-example-%d", os.Getpid()))
	defer os.RemoveAll(dir)
	if _, err := tracestore.Build(&buf, dir, tracestore.Options{}); err != nil {
		panic(err)
	}
	s, err := tracestore.Open(dir)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	// Events whose stack passes through sleepy, through the function index.
	d := s.Manifest().Duration
	n := 0
	st, err := s.EventsThrough("github.com/pctab/pctab/tracestore_test.sleepy", 0, d+1, func(e *tracestore.Event) bool {
		n++
		return true
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(n >= 3, st.PagesRead <= s.Manifest().Pages)

	// The longest span of each goroutine's state lane over the whole trace.
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		if ln.Track == tracestore.TrackGoroutine && ln.Layer == tracestore.LayerState {
			if a := s.Query(l, 0, d+1); a.Longest >= 0 {
				sp := s.Span(l, a.Longest)
				_ = sp // sp.Kind, s.String(sp.Name), sp.Start, sp.Dur
			}
		}
	}
	// Output: true true
}

// Pixel boundaries of the widest range there is: its width, 2^64-1 ns,
// does not fit in an int64, and the boundaries are exact regardless.
func ExamplePixelStart() {
	t0, t1 := int64(math.MinInt64), int64(math.MaxInt64)
	for p := int64(0); p <= 4; p++ {
		fmt.Println(tracestore.PixelStart(t0, t1, 4, p))
	}
	fmt.Println(tracestore.PixelOf(t0, t1, 4, 0))
	// Output:
	// -9223372036854775808
	// -4611686018427387905
	// -1
	// 4611686018427387903
	// 9223372036854775807
	// 2
}
