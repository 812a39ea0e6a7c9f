package stackinput

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/pctab/pctab/internal/cputime"
)

// recurse blocks on a channel at depth n, so that the trace records
// stacks of several depths.
//
//go:noinline
func recurse(n int, ch chan int) int {
	if n == 0 {
		return <-ch
	}
	return recurse(n-1, ch) + 1
}

// traceWorkload runs goroutines that block at several depths.
func traceWorkload() {
	var wg sync.WaitGroup
	for g := range 8 {
		ch := make(chan int)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				recurse(g%4, ch)
			}
		}()
		for range 20 {
			ch <- g
		}
	}
	wg.Wait()
}

// inProcessTrace returns an execution trace of traceWorkload.
func inProcessTrace(t testing.TB) []byte {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	traceWorkload()
	trace.Stop()
	return buf.Bytes()
}

func TestReadTrace(t *testing.T) {
	c, err := ReadTrace(bytes.NewReader(inProcessTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) < 100 || c.NumStacks() < 5 {
		t.Fatalf("%d samples, %d stacks: too few", len(c.Samples), c.NumStacks())
	}
	// Frames are leaf first: in a stack blocked in recurse, the deepest
	// recurse frame comes before the goroutine's closure.
	found := false
	for i := range c.NumStacks() {
		var names []string
		for _, l := range c.Stack(uint32(i)) {
			loc := c.Locations[l]
			if len(loc.Lines) != 1 {
				t.Fatalf("trace location %#x has %d lines, want 1", loc.PC, len(loc.Lines))
			}
			names = append(names, loc.Lines[0].Func)
		}
		r := slices.IndexFunc(names, func(s string) bool { return strings.HasSuffix(s, ".recurse") })
		w := slices.IndexFunc(names, func(s string) bool { return strings.Contains(s, "traceWorkload.func") })
		if r >= 0 && w >= 0 {
			found = true
			if r > w {
				t.Fatalf("stack %v is not leaf first", names)
			}
		}
	}
	if !found {
		t.Fatal("no stack through recurse and the workload closure")
	}
	for _, s := range c.Samples {
		if s.Goroutine < 0 && s.Thread < 0 {
			t.Fatalf("sample %+v has neither goroutine nor thread", s)
		}
		if int(s.Stack) >= c.NumStacks() {
			t.Fatalf("sample %+v: stack out of range", s)
		}
		if s.Trap != s.CPU {
			t.Fatalf("sample %+v: only CPU samples are trapped", s)
		}
	}
}

func TestReadTraceErrors(t *testing.T) {
	data := inProcessTrace(t)
	// The trace cut one byte into its second batch, after the batch's
	// type byte: x/exp/trace's error wraps io.EOF ("error reading batch
	// gen: EOF"), which ReadTrace took for the trace's end. A batch is
	// its type byte, four uvarints (generation, thread, time, size) and
	// size bytes.
	second := 16 + 1
	var size uint64
	for range 4 {
		v, n := binary.Uvarint(data[second:])
		if n <= 0 {
			t.Fatal("bad batch header")
		}
		size, second = v, second+n
	}
	second += int(size)
	for _, in := range [][]byte{nil, []byte("go 1.22 trace\x00\x00\x00"), data[:len(data)/2], []byte("not a trace"), data[:second+1]} {
		if _, err := ReadTrace(bytes.NewReader(in)); err == nil {
			t.Errorf("ReadTrace(%d bytes %q...) succeeded", len(in), in[:min(len(in), 16)])
		}
	}
}

// cpuProfile profiles this process spinning for 300 ms, repeating (up to
// five times) until the profile holds at least 5 CPU samples: the tests
// that use it check real samples, and fail rather than skip when a machine
// gives none.
func cpuProfile(t testing.TB) []byte {
	t.Helper()
	for range 5 {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			t.Fatal("CPU profiling unavailable:", err)
		}
		// 300 ms of the process's CPU time, not of wall time: the
		// profiler samples CPU time, and a loaded machine gives less of
		// it per second.
		x := 0
		c0, _ := cputime.Process()
		for c := c0; c-c0 < 300*time.Millisecond; c, _ = cputime.Process() {
			for i := range 1000 {
				x += spin(i)
			}
		}
		pprof.StopCPUProfile()
		_ = x
		if p, err := profile.ParseData(buf.Bytes()); err == nil && len(p.Sample) >= 5 {
			return buf.Bytes()
		}
	}
	t.Fatal("five CPU profiles of 300 ms of CPU time held fewer than 5 samples each")
	return nil
}

//go:noinline
func spin(i int) int { return i * i % 7 }

func TestReadPprof(t *testing.T) {
	c, err := ReadPprof(bytes.NewReader(cpuProfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) < 5 {
		t.Fatalf("%d CPU samples, cpuProfile made sure of at least 5", len(c.Samples))
	}
	for _, s := range c.Samples {
		if s.Goroutine != -1 || s.Thread != -1 || len(c.Stack(s.Stack)) == 0 || !s.Trap {
			t.Fatalf("sample %+v", s)
		}
	}
	if _, err := ReadPprof(strings.NewReader("garbage")); err == nil {
		t.Error("ReadPprof(garbage) succeeded")
	}
}

func TestCorpus(t *testing.T) {
	c := NewCorpus("test")
	a := Location{PC: 0x10, Lines: []Line{{"f", "a.go", 1}}}
	b := Location{PC: 0x10, Lines: []Line{{"g", "a.go", 2}, {"f", "a.go", 1}}}
	c.Add(1, 2, 0, []Location{a, b})
	c.Add(3, 4, 1, []Location{a, b})
	c.Add(3, 4, 1, []Location{b})
	if len(c.Locations) != 2 || c.NumStacks() != 2 || len(c.Samples) != 3 {
		t.Fatalf("%d locations, %d stacks, %d samples; want 2, 2, 3", len(c.Locations), c.NumStacks(), len(c.Samples))
	}
	if c.Samples[0].Stack != c.Samples[1].Stack || c.Samples[2].Stack == c.Samples[0].Stack {
		t.Fatalf("samples %+v", c.Samples)
	}
	if _, err := c.AddStack([]uint32{0, 2}); err == nil {
		t.Error("AddStack with an unknown location succeeded")
	}
}

func TestTextOffsetFrames(t *testing.T) {
	m := TextOffsetFrames{Base: 0x401000}
	tests := []struct {
		pc   uint64
		want uint64
		err  bool
	}{
		{0x401000, 0, false},
		{0x4a0123, 0x9f123, false},
		{0, NoPC, false},
		{0x400fff, 0, true},
		{0x401000 + NoPC, 0, true},
	}
	for _, tt := range tests {
		got, err := m.AppendFrames(nil, Location{PC: tt.pc})
		if tt.err {
			if !errors.Is(err, ErrOutsideText) {
				t.Errorf("PC %#x: err %v, want ErrOutsideText", tt.pc, err)
			}
			continue
		}
		if err != nil || len(got) != 1 || got[0] != tt.want || m.PC(got[0]) != tt.pc {
			t.Errorf("PC %#x: %x, %v; want %#x and back", tt.pc, got, err, tt.want)
		}
	}
	if lo := LowestPC([]Location{{PC: 0}, {PC: 9}, {PC: 5}}); lo != 5 {
		t.Errorf("LowestPC = %d, want 5", lo)
	}
}

func TestLineFrames(t *testing.T) {
	m := NewLineFrames()
	inl := Location{PC: 1, Lines: []Line{{"inner", "x.go", 3}, {"outer", "x.go", 9}}}
	got, err := m.AppendFrames(nil, inl)
	if err != nil || !slices.Equal(got, []uint64{0, 1}) {
		t.Fatalf("AppendFrames = %v, %v", got, err)
	}
	// Same line at another PC: same frame.
	got, _ = m.AppendFrames(got[:0], Location{PC: 2, Lines: []Line{{"outer", "x.go", 9}}})
	if !slices.Equal(got, []uint64{1}) {
		t.Fatalf("same line, other PC: %v", got)
	}
	if l, ok := m.Line(1); !ok || l != (Line{"outer", "x.go", 9}) {
		t.Fatalf("Line(1) = %v, %v", l, ok)
	}
	if _, ok := m.Line(2); ok {
		t.Fatal("Line(2) found")
	}
	if m.Len() != 2 || m.TableBytes() != uint64(2*12+len("inner")+len("outer")+len("x.go")) {
		t.Fatalf("Len %d, TableBytes %d", m.Len(), m.TableBytes())
	}
	if _, err := m.AppendFrames(nil, Location{PC: 5}); err == nil {
		t.Fatal("location without lines accepted")
	}
}

// FuzzReadTrace reads arbitrary traces; its seed (testdata/fuzz) is a real
// execution trace of this package's test workload.
func FuzzReadTrace(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadTrace(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range c.Samples {
			if int(s.Stack) >= c.NumStacks() {
				t.Fatalf("sample %+v: stack out of range", s)
			}
		}
	})
}

// FuzzReadPprof reads arbitrary profiles; its seed (testdata/fuzz) is a
// real CPU profile of this package's test workload.
func FuzzReadPprof(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadPprof(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range c.Samples {
			if int(s.Stack) >= c.NumStacks() {
				t.Fatalf("sample %+v: stack out of range", s)
			}
		}
	})
}
