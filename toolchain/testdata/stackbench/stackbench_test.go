//go:generate go run gen_wide.go

// Package stackbench holds benchmarks of the runtime work that reads
// PC-value tables on deep stacks: panics unwinding through many frames,
// runtime.Stack of many goroutines, GC stack scans, and the CPU profiler's
// and execution tracer's tracebacks. pctab builds it with a stock and a
// patched toolchain (go test -c) and compares their times with benchstat.
package stackbench

import (
	"bytes"
	"io"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"testing"
)

var sink int

//go:noinline
func deep(n int, f func()) int {
	if n == 0 {
		f()
		return 0
	}
	var pad [8]int // a frame with locals, as real code has
	pad[n%8] = n
	return deep(n-1, f) + pad[n%8]
}

// BenchmarkPanicDeep panics 100 frames below a recover.
func BenchmarkPanicDeep(b *testing.B) {
	for range b.N {
		func() {
			defer func() { recover() }()
			deep(100, func() { panic("x") })
		}()
	}
}

// parked starts n goroutines each blocked depth frames deep and returns a
// function that releases them.
func parked(n, depth int) func() {
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			deep(depth, func() { ready.Done(); <-release })
		}()
	}
	ready.Wait()
	return func() { close(release); done.Wait() }
}

// BenchmarkStackAll formats the stacks of 100 goroutines 50 frames deep
// (runtime.Stack with all=true).
func BenchmarkStackAll(b *testing.B) {
	stop := parked(100, 50)
	defer stop()
	buf := make([]byte, 4<<20)
	b.ResetTimer()
	for range b.N {
		sink += runtime.Stack(buf, true)
	}
}

// BenchmarkGCDeepStacks runs a GC with 100 goroutines 200 frames deep,
// whose stacks it scans.
func BenchmarkGCDeepStacks(b *testing.B) {
	stop := parked(100, 200)
	defer stop()
	b.ResetTimer()
	for range b.N {
		runtime.GC()
	}
}

// work is a stack-heavy workload: recursion that calls through several
// frames and allocates.
//
//go:noinline
func work(n int) int {
	s := 0
	for i := range n {
		s += deep(30, func() { sink += len(make([]byte, 64)) }) + i
	}
	return s
}

// BenchmarkCPUProfiled runs the workload under the CPU profiler, whose
// signal handler unwinds the stack 100 times a second per thread.
func BenchmarkCPUProfiled(b *testing.B) {
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		b.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	for range b.N {
		sink += work(1000)
	}
}

// BenchmarkUnprofiled is BenchmarkCPUProfiled without the profiler: the
// baseline of the profiler's overhead.
func BenchmarkUnprofiled(b *testing.B) {
	for range b.N {
		sink += work(1000)
	}
}

// blocking runs goroutines of the workload, 40 frames deep, that block on
// each other in pairs.
func blocking() {
	ch := make(chan int)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deep(40, func() {
				if i%2 == 0 {
					ch <- work(5)
				} else {
					sink += <-ch
				}
			})
		}()
	}
	wg.Wait()
}

// BenchmarkTraced runs blocking under the execution tracer, which records
// a stack per event.
func BenchmarkTraced(b *testing.B) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		b.Fatal(err)
	}
	defer trace.Stop()
	for range b.N {
		blocking()
		if buf.Len() > 64<<20 {
			buf.Reset()
		}
	}
}

// BenchmarkUntraced is BenchmarkTraced without the tracer: the baseline
// of the tracer's overhead.
func BenchmarkUntraced(b *testing.B) {
	for range b.N {
		blocking()
	}
}
