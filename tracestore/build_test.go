package tracestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/allocs"
	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/testenv"
	xtrace "golang.org/x/exp/trace"
)

// traceOf records f's execution trace.
func traceOf(t testing.TB, f func()) []byte {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	f()
	trace.Stop()
	return buf.Bytes()
}

// TestTaskBegunBeforeTrace is issue 26's item 2: a task begun before
// trace.Start that ends after a shorter task (as /debug/pprof/trace
// captures routinely) was drawn from time 0 in the row the shorter task
// had used, and Build wrote a store no reader could open.
func TestTaskBegunBeforeTrace(t *testing.T) {
	ctx, long := trace.NewTask(context.Background(), "long")
	data := traceOf(t, func() {
		_, short := trace.NewTask(ctx, "short")
		time.Sleep(time.Millisecond)
		short.End()
		time.Sleep(time.Millisecond)
		long.End()
	})
	s, _ := build(t, data)
	var rows []Span
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		if ln.Layer != LayerTask {
			continue
		}
		for i := range ln.Spans {
			sp := s.Span(l, i)
			t.Logf("task row %d: %s [%d, %d)", ln.Depth, s.String(sp.Name), sp.Start, sp.End())
			rows = append(rows, sp)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d task spans, want 2", len(rows))
	}
	for _, sp := range rows {
		if s.String(sp.Name) == "long" && sp.Start != 0 {
			t.Errorf("the task begun before the trace starts at %d, want 0", sp.Start)
		}
	}
}

// TestRegionBegunBeforeTrace builds a flight recorder's snapshot
// (testdata/flight-region-begun-before.trace, Go 1.27.3) of a goroutine
// that spends 2.5 s in region "outer-long", running short "inner" regions
// in it: the snapshot holds the last 0.5 s, the inner regions and the
// outer one's end, not its begin. The store drew no "outer-long", though
// the goroutine is in it for the whole snapshot (go tool trace shows it
// from the trace's start); it is drawn from time 0 now, in a row of its
// own, as a task begun before the trace is.
func TestRegionBegunBeforeTrace(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "flight-region-begun-before.trace"))
	if err != nil {
		t.Fatal(err)
	}
	// The truth: the region ends without a begin.
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var base, end int64 = -1, -1
	begins := 0
	for {
		e, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if base < 0 {
			base = int64(e.Time())
		}
		if k := e.Kind(); (k == xtrace.EventRegionBegin || k == xtrace.EventRegionEnd) && e.Region().Type == "outer-long" {
			if k == xtrace.EventRegionBegin {
				begins++
			} else {
				end = int64(e.Time()) - base
			}
		}
	}
	if begins != 0 || end < 0 {
		t.Fatalf("the trace has %d begins of outer-long and its end at %d: want only an end", begins, end)
	}
	s, _ := build(t, data)
	var outer []Span
	inner := 0
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		if ln.Layer != LayerRegion {
			continue
		}
		for i := range ln.Spans {
			sp := s.Span(l, i)
			switch s.String(sp.Name) {
			case "outer-long":
				outer = append(outer, sp)
			case "inner":
				inner++
			}
		}
	}
	if len(outer) != 1 || outer[0].Start != 0 || outer[0].End() != end {
		t.Errorf("outer-long spans %+v; want one from 0 to %d", outer, end)
	}
	if inner == 0 {
		t.Errorf("no inner regions")
	}
}

// FuzzRows drives the builder's rows with spans that begin and end in any
// order, at any times, as a malformed trace can: the store must open.
func FuzzRows(f *testing.F) {
	f.Add([]byte{0, 5, 1, 0, 0x80, 0, 2, 1, 3, 0})
	f.Add([]byte{3, 1, 3, 0, 0x81, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		dir := t.TempDir()
		b, err := newBuilder(dir, MinPageSize, DefaultMemLimit)
		if err != nil {
			t.Fatal(err)
		}
		defer b.cleanup()
		var open []*openSpan
		var keys []rowKey
		now := int64(0)
		for i := 0; i+1 < len(ops) && i < 2000; i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			key := rowKey{TrackGlobal, 0, Layer(op & 3)}
			if key.layer == LayerState {
				key.track = TrackGoroutine
			}
			switch {
			case op&0x80 != 0 && len(open) > 0: // close one
				j := int(arg) % len(open)
				if err := b.close(keys[j], open[j], now); err != nil {
					t.Fatal(err)
				}
				open = append(open[:j], open[j+1:]...)
				keys = append(keys[:j], keys[j+1:]...)
			default: // open one, at now or in the past
				now += arg
				start := now
				if op&0x40 != 0 {
					start = max(0, now-arg*int64(op>>2&7))
				}
				open = append(open, b.open(key, Span{Start: start, Kind: SpanTask}, ""))
				keys = append(keys, key)
			}
		}
		for j, o := range open {
			if err := b.close(keys[j], o, now); err != nil {
				t.Fatal(err)
			}
		}
		b.last = now
		if err := b.appendEvent(&Event{Time: now}); err != nil {
			t.Fatal(err)
		}
		b.events++
		m, err := b.finish()
		if err != nil {
			t.Fatal(err)
		}
		if err := writeManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatalf("the store of %x does not open: %v", ops, err)
		}
		s.Close()
	})
}

// leakedRegions records a trace of n nested regions that never end.
func leakedRegions(t testing.TB, n int) []byte {
	return traceOf(t, func() {
		ctx := context.Background()
		for range n {
			trace.StartRegion(ctx, "leaked")
		}
	})
}

// TestLeakedRegionsLinear is issue 26's item 3: Build was quadratic in
// regions that nest or never end (each region's start scanned every busy
// row). Four times the regions must cost less than eight times the CPU
// time (a quadratic build costs sixteen).
func TestLeakedRegionsLinear(t *testing.T) {
	if !cputime.Available() {
		t.Skip("no per-thread CPU time")
	}
	if testing.Short() {
		t.Skip("a cost test: builds 300,000 regions")
	}
	const n = 20000
	small, large := leakedRegions(t, n), leakedRegions(t, 4*n)
	cost := func(data []byte) time.Duration {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		best := time.Duration(1 << 62)
		for range 3 {
			dir := filepath.Join(t.TempDir(), "store")
			c0, _ := cputime.Thread()
			m, err := Build(bytes.NewReader(data), dir, Options{})
			c1, _ := cputime.Thread()
			if err != nil {
				t.Fatal(err)
			}
			if m.Lanes < maxRows || m.Events < n {
				t.Fatalf("%d lanes and %d events for %d nested regions", m.Lanes, m.Events, n)
			}
			best = min(best, c1-c0)
		}
		return best
	}
	cs, cl := cost(small), cost(large)
	t.Logf("%d regions: %v CPU; %d: %v (%.1fx)", n, cs, 4*n, cl, float64(cl)/float64(cs))
	if cl > 8*cs {
		t.Errorf("4x the regions cost %.1fx the CPU time", float64(cl)/float64(cs))
	}
	// And memory: a small multiple of the trace's size, beyond the
	// builder's fixed buffers.
	got := allocs.Bytes(func() {
		if _, err := Build(bytes.NewReader(large), filepath.Join(t.TempDir(), "store"), Options{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d-byte trace: Build allocated %d bytes", len(large), got)
	if limit := 64*uint64(len(large)) + 16<<20; got > limit {
		t.Errorf("Build allocated %d bytes for a %d-byte trace, more than %d", got, len(large), limit)
	}
}

// readable counts the events x/exp/trace reads from data before it fails.
func readable(t testing.TB, data []byte) (n uint64, err error) {
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	for {
		_, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// TestMultiGenHelper records a trace of several generations into the file
// $TRACESTORE_MULTIGEN_OUT, when the test binary runs itself for
// multiGenTrace with a short trace advance period.
func TestMultiGenHelper(t *testing.T) {
	out := os.Getenv("TRACESTORE_MULTIGEN_OUT")
	if out == "" {
		t.Skip("a helper of multiGenTrace")
	}
	data := traceOf(t, func() {
		for range 8 {
			workload()
			time.Sleep(3 * time.Millisecond)
		}
	})
	if err := os.WriteFile(out, data, 0o666); err != nil {
		t.Fatal(err)
	}
}

var (
	multiGenOnce sync.Once
	multiGenData []byte
	multiGenErr  error
)

// multiGenTrace records a trace of several generations: the runtime
// starts a generation every 2 ms in a child process
// (GODEBUG=traceadvanceperiod).
func multiGenTrace(t testing.TB) []byte {
	t.Helper()
	multiGenOnce.Do(func() {
		dir, err := os.MkdirTemp("", "multigen")
		if err != nil {
			multiGenErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "trace")
		cmd := exec.Command(os.Args[0], "-test.run=^TestMultiGenHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TRACESTORE_MULTIGEN_OUT="+out, "GODEBUG=traceadvanceperiod=2000000")
		if b, err := cmd.CombinedOutput(); err != nil {
			multiGenErr = fmt.Errorf("%w\n%s", err, b)
			return
		}
		multiGenData, multiGenErr = os.ReadFile(out)
	})
	if testenv.ExecRefused(multiGenErr) {
		// A test binary for another architecture, run under an emulator
		// (go test -exec) that the kernel does not know of.
		t.Skipf("cannot run the test binary itself: %v", multiGenErr)
	}
	if multiGenErr != nil {
		t.Fatal(multiGenErr)
	}
	return multiGenData
}

// TestTruncatedTrace is issue 26's item 4: a trace missing its last bytes
// kept nothing. Build keeps every event the reader produced (every whole
// generation) and says what it dropped.
func TestTruncatedTrace(t *testing.T) {
	data := multiGenTrace(t)
	g := scanGenerations(bytes.NewReader(data))
	if len(g.starts) < 3 {
		t.Fatalf("the trace has %d generations, want several", len(g.starts))
	}
	t.Logf("%d bytes, %d generations", len(data), len(g.starts))
	// A third cut ends inside the generation that holds byte 2/3 of the
	// trace, halfway between its start and the next one's: a cut at a
	// generation's boundary leaves a whole, readable trace.
	k := 1
	for k+1 < len(g.starts) && g.starts[k+1] <= int64(2*len(data)/3) {
		k++
	}
	next := g.framed
	if k+1 < len(g.starts) {
		next = g.starts[k+1]
	}
	mid := int(g.starts[k] + (next-g.starts[k])/2)
	for _, cut := range []int{50, 1, len(data) - mid} {
		cutData := data[:len(data)-cut]
		want, rerr := readable(t, cutData)
		if rerr == nil {
			t.Fatalf("cut %d: the reader reads all %d events", cut, want)
		}
		dir := filepath.Join(t.TempDir(), "store")
		m, err := Build(bytes.NewReader(cutData), dir, Options{PageSize: MinPageSize})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		tr := m.Truncated
		if rerr != nil && tr == nil {
			t.Fatalf("cut %d: the reader fails (%v), the manifest says nothing", cut, rerr)
		}
		if m.Events != want {
			t.Errorf("cut %d: %d events, the reader reads %d", cut, m.Events, want)
		}
		if tr != nil {
			t.Logf("cut %d: %s", cut, tr)
			if tr.EventsKept != m.Events || tr.BytesKept+tr.BytesDropped != int64(len(cutData)) || tr.BytesDropped <= 0 || tr.Generations < 1 {
				t.Errorf("cut %d: %+v for %d bytes", cut, tr, len(cutData))
			}
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if err := s.Events(0, m.Duration+1, func(*Event) bool { return true }); err != nil {
			t.Error(err)
		}
		s.Close()
	}
}

// TestFailedBuildLeavesNoStore checks store atomicity: a build that fails
// leaves no STORE and no temporary directory, and says why; one that
// succeeds replaces an empty directory.
func TestFailedBuildLeavesNoStore(t *testing.T) {
	data := smallTrace(t)
	for _, c := range []struct {
		name  string
		input []byte
		opts  Options
		want  string
	}{
		{"page size -5", data, Options{PageSize: -5}, "page size -5"},
		{"not a trace", []byte("hello, world, this is not a trace"), Options{}, "trace"},
		{"empty", nil, Options{}, "trace header"},
		{"header only", data[:16], Options{}, "no events"},
		{"first generation cut", data[:len(data)-50], Options{}, "first generation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "store")
			_, err := Build(bytes.NewReader(c.input), dir, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one that says %q", err, c.want)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Errorf("a failed build left %v", ents)
			}
		})
	}
	// A non-empty directory is left alone.
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	os.Mkdir(dir, 0o777)
	os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o666)
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("build into a non-empty directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the non-empty directory now holds %v", ents)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("the parent holds %v", ents)
	}
	// Missing parents are made.
	deep := filepath.Join(parent, "a", "b", "store")
	if _, err := Build(bytes.NewReader(data), deep, Options{}); err != nil {
		t.Fatal(err)
	}
	// An empty one is replaced.
	os.RemoveAll(dir)
	os.Mkdir(dir, 0o777)
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
