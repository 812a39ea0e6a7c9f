package tracestore_test

import (
	"bytes"
	"fmt"
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
	for l, ln := range s.Lanes() {
		if ln.Track == tracestore.TrackGoroutine && ln.Layer == tracestore.LayerState {
			if a := s.Query(l, 0, d+1); a.Longest >= 0 {
				sp := s.Span(l, a.Longest)
				_ = sp // sp.Kind, s.String(sp.Name), sp.Start, sp.Dur
			}
		}
	}
	// Output: true true
}
