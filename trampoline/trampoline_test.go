package trampoline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
)

// TestGenerated checks that trampolines_gen.go is what the generator
// writes, so an edit to either cannot drift from the other.
func TestGenerated(t *testing.T) {
	want, err := os.ReadFile("trampolines_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/gen.go"
	cmd := exec.Command("go", "run", "./gen", "-n", "1024", "-o", out)
	// The generator runs on the host, also when this test runs under
	// emulation for another GOARCH.
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./gen: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("trampolines_gen.go is stale: run go generate")
	}
}

// TestPool checks binding, FIFO reuse, exhaustion and the history.
func TestPool(t *testing.T) {
	p := newPool()
	var ls []*Label
	for i := range N {
		l, err := p.bind("k", "v")
		if err != nil {
			t.Fatalf("bind %d: %v", i, err)
		}
		if l.Trampoline() != i {
			t.Fatalf("bind %d got trampoline %d", i, l.Trampoline())
		}
		ls = append(ls, l)
	}
	if l, err := p.bind("k", "full"); err != ErrExhausted || l != nil {
		t.Fatalf("bind past N: %v, %v", l, err)
	}
	var nl *Label
	ran := false
	nl.Do(func() { ran = true }) // a nil label still runs the work
	if !ran {
		t.Fatal("nil Label did not run f")
	}
	if err := p.release(ls[5]); err != nil {
		t.Fatal(err)
	}
	if err := p.release(ls[5]); err == nil || !strings.Contains(err.Error(), "closed twice") {
		t.Fatalf("second release: %v", err)
	}
	p.release(ls[9])
	a, _ := p.bind("k", "a")
	b, _ := p.bind("k", "b")
	if a.Trampoline() != 5 || b.Trampoline() != 9 {
		t.Fatalf("reuse order %d, %d; want the oldest free first (5, 9)", a.Trampoline(), b.Trampoline())
	}
	if n := len(p.history); n != N+2 {
		t.Fatalf("%d history entries, want %d", n, N+2)
	}
	if h := p.history[5]; h.EndMono == 0 || h.EndUnix == 0 || h.EndMono < h.StartMono {
		t.Fatalf("closed binding %+v", h)
	}
}

// TestDo checks that Do runs f through the label's trampoline: the
// trampoline's frame is on f's stack.
func TestDo(t *testing.T) {
	l, err := New("k", "v")
	testenv.SkipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stack string
	l.Do(func() {
		buf := make([]byte, 4096)
		stack = string(buf[:runtime.Stack(buf, false)])
	})
	want := fmt.Sprintf("trampoline.t%04d", l.Trampoline())
	if !strings.Contains(stack, want) {
		t.Fatalf("stack of f has no %s frame:\n%s", want, stack)
	}
}

// sink keeps the benchmarks' work from being optimized away.
var sink int

//go:noinline
func task(n int) { sink += n * n % 7 }

// BenchmarkTask measures the cost per task of each labelling mechanism,
// called directly and through a one-worker pool as in the seed's thread
// pool benchmark: a plain call, trampoline Do, pprof.Do, and
// pprof.SetGoroutineLabels around the task.
func BenchmarkTask(b *testing.B) {
	l, err := New("query", "q1")
	testenv.SkipUnsupported(b, err)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	labels := pprof.Labels("query", "q1")
	mechs := []struct {
		name string
		run  func(i int)
	}{
		{"plain", func(i int) { task(i) }},
		{"Do", func(i int) { l.Do(func() { task(i) }) }},
		{"pprof.Do", func(i int) { pprof.Do(ctx, labels, func(context.Context) { task(i) }) }},
		{"SetGoroutineLabels", func(i int) {
			pprof.SetGoroutineLabels(pprof.WithLabels(ctx, labels))
			task(i)
			pprof.SetGoroutineLabels(ctx)
		}},
	}
	for _, m := range mechs {
		b.Run("call/mech="+m.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				m.run(i)
			}
		})
	}
	for _, m := range mechs {
		b.Run("pool/mech="+m.name, func(b *testing.B) {
			b.ReportAllocs()
			tasks := make(chan int, 256)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range tasks {
					m.run(i)
				}
			}()
			for i := range b.N {
				tasks <- i
			}
			close(tasks)
			wg.Wait()
		})
	}
}

// FuzzReadHistory reads arbitrary bytes as a history: an error or a
// history whose bindings all name real trampolines.
func FuzzReadHistory(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"trampolines":2,"bindings":[{"trampoline":1,"key":"q","value":"a","start_mono_ns":5,"end_mono_ns":0,"start_unix_ns":7,"end_unix_ns":0}]}`))
	f.Add([]byte(`{"schema_version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHistory(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, b := range h.Bindings {
			if b.Trampoline < 0 || b.Trampoline >= h.Trampolines {
				t.Fatalf("binding %+v of %d trampolines accepted", b, h.Trampolines)
			}
		}
	})
}

// TestErrUnsupported checks that ErrUnsupported wraps errors.ErrUnsupported,
// so that callers (and testenv.SkipUnsupported) can tell it apart.
func TestErrUnsupported(t *testing.T) {
	if !errors.Is(ErrUnsupported, errors.ErrUnsupported) {
		t.Errorf("ErrUnsupported (%v) does not wrap errors.ErrUnsupported", ErrUnsupported)
	}
}
