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
