package cputime

import (
	"runtime"
	"testing"
	"time"
)

//go:noinline
func spin(d time.Duration) int {
	x := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := range 1000 {
			x += i * i % 7
		}
	}
	return x
}

// TestThread checks what the clock measures: it advances while the thread
// computes, and stands nearly still while the thread sleeps, unlike the
// wall clock.
func TestThread(t *testing.T) {
	if !Available() {
		if runtime.GOOS == "linux" {
			t.Fatal("thread CPU time is not available on Linux")
		}
		t.Skipf("no thread CPU clock on %s", runtime.GOOS)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, _ := Thread()
	spin(100 * time.Millisecond)
	c1, _ := Thread()
	time.Sleep(200 * time.Millisecond)
	c2, _ := Thread()
	if busy := c1 - c0; busy <= 0 || busy > 5*time.Second {
		t.Errorf("100 ms of spinning took %v of thread CPU time", busy)
	}
	if idle := c2 - c1; idle >= 100*time.Millisecond {
		t.Errorf("200 ms of sleep took %v of thread CPU time", idle)
	}
}

// TestProcess checks that the process clock counts this thread's work: a
// loop run until the process has used 50 ms of CPU time used most of it
// on this thread.
func TestProcess(t *testing.T) {
	p0, ok := Process()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("process CPU time is not available on Linux")
		}
		t.Skipf("no process CPU clock on %s", runtime.GOOS)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, _ := Thread()
	x := 0
	for p := p0; p-p0 < 50*time.Millisecond; p, _ = Process() {
		for i := range 1000 {
			x += i * i % 7
		}
	}
	t1, _ := Thread()
	if d := t1 - t0; d < 25*time.Millisecond {
		t.Errorf("a loop until the process used 50 ms of CPU used %v on its own thread (x=%d)", d, x)
	}
}
