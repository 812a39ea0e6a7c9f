// Package labelstest runs a labelled workload for tests: trampoline/resolve's
// tasks under four trampoline labels (query=q1 to q4, CPU shares 1:2:3:4),
// traced with CPU samples.
package labelstest

import (
	"bytes"
	"context"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/trampoline"
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
	return WorkloadWithNoise(t, d, 0)
}

// WorkloadWithNoise is Workload with noise goroutines running beside the
// labelled ones, unlabelled, that pass tokens around a ring and sleep a
// little at each turn: they fill the trace with scheduling events and
// lanes, some hundreds of thousands of events a second, among which the
// label's goroutines are few.
func WorkloadWithNoise(t testing.TB, d time.Duration, noise int) (traceData []byte, h trampoline.History) {
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
	stop := make(chan struct{})
	var nwg sync.WaitGroup
	if noise > 0 {
		ring := make([]chan int, noise)
		for i := range ring {
			ring[i] = make(chan int, 1)
			ring[i] <- 0 // a token for each: all turn at once
		}
		for i := range noise {
			nwg.Add(1)
			go func() {
				defer nwg.Done()
				for {
					select {
					case <-stop:
						return
					case v := <-ring[i]:
						time.Sleep(10 * time.Microsecond)
						select {
						case ring[(i+1)%noise] <- v + 1:
						case <-stop:
							return
						}
					}
				}
			}()
		}
	}
	ls := map[string]*trampoline.Label{}
	for name := range weights {
		l, err := trampoline.New("query", name)
		testenv.SkipUnsupported(t, err)
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
	close(stop)
	nwg.Wait()
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
