//go:build unix && !aix

package labels_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/trampoline"
)

//go:noinline
func spin() int {
	x := 0
	for i := range 1 << 20 {
		x += i * i % 7
	}
	return x
}

// Trace labelled work with CPU samples, index the samples by label, and
// ask which functions query=q1's samples were in.
func Example() {
	// CPU samples reach an execution trace while the CPU profiler runs.
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		panic(err)
	}
	var tr bytes.Buffer
	if err := trace.Start(&tr); err != nil {
		panic(err)
	}
	l, err := trampoline.New("query", "q1")
	if err != nil {
		panic(err)
	}
	l.Do(func() {
		// 300 ms of this process's CPU time: about 30 samples at 100 Hz.
		start, _ := cputime.Process()
		for now := start; now-start < 300*time.Millisecond; now, _ = cputime.Process() {
			spin()
		}
	})
	l.Close()
	trace.Stop()
	pprof.StopCPUProfile()

	var idx bytes.Buffer
	if _, err := labels.Build(&tr, trampoline.Snapshot(), 0, &idx); err != nil {
		panic(err)
	}
	x, err := labels.Read(idx.Bytes())
	if err != nil {
		panic(err)
	}
	samples := x.Samples(labels.Label{Key: "query", Value: "q1"}, 0, math.MaxInt64)
	fmt.Println("query=q1 has samples:", len(samples) > 0)
	fmt.Println("where they ran most:", x.ByFunc(samples)[0].Func)
	// Output:
	// query=q1 has samples: true
	// where they ran most: github.com/pctab/pctab/tracestore/labels_test.spin
}
