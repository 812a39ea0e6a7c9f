package tracestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"go/version"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	xtrace "golang.org/x/exp/trace"
)

// cachedTrace returns the path of trace name in the test cache, recording
// it with record on first use.
func cachedTrace(t *testing.T, name string, record func(path string) error) string {
	t.Helper()
	cache, err := testbuild.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "traces")
	path := filepath.Join(dir, name+".trace")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	defer os.Remove(tmp)
	start := time.Now()
	if err := record(tmp); testenv.ExecRefused(err) {
		// The test itself runs under an emulator (CI's emu steps), which
		// cannot start the programs it builds for its own GOARCH.
		t.Skipf("recording %s: %v", name, err)
	} else if err != nil {
		t.Fatalf("recording %s: %v", name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s in %v", name, time.Since(start).Round(time.Millisecond))
	return path
}

func goCmd(ctx context.Context, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, testbuild.GoBinary(), args...)
	cmd.Env = append(append(os.Environ(), "GOFLAGS="), env...)
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return nil
}

func goVersion(t *testing.T) string {
	out, err := exec.Command(testbuild.GoBinary(), "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestRealTraces builds stores of real traces and checks them against a
// full read of each trace with x/exp/trace: every event, the events through
// functions found in the trace, and the lanes' aggregates against folds.
// The traces: the go command's own trace of `go list -deps -test std` and
// an HTTP server under load (testdata/server.txtar; 0.3 s with -short, 3 s,
// some 6 million events, without), and without -short the go command's
// trace of `go build std` with an empty build cache and of `go test
// -short net/http`. They are recorded once into the test cache.
func TestRealTraces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ver := goVersion(t)
	srvCfg := testbuild.Config{Archive: "server"}
	bin := testbuild.Build(t, srvCfg)
	binKey := filepath.Base(bin) // carries the build's hash
	traces := []struct {
		name   string
		long   bool
		record func(path string) error
	}{
		{"golist-" + ver, false, func(p string) error {
			return goCmd(ctx, nil, "list", "-debug-runtime-trace="+p, "-deps", "-test", "-json", "std")
		}},
		{"server-0.3s-" + binKey, false, func(p string) error {
			_, err := testbuild.Exec(ctx, srvCfg, bin, "-trace", p, "-duration", "300ms")
			return err
		}},
		{"server-3s-" + binKey, true, func(p string) error {
			_, err := testbuild.Exec(ctx, srvCfg, bin, "-trace", p, "-duration", "3s")
			return err
		}},
		{"gobuildstd-" + ver, true, func(p string) error {
			return goCmd(ctx, []string{"GOCACHE=" + t.TempDir()}, "build", "-debug-runtime-trace="+p, "std")
		}},
		{"nethttp-" + ver, true, func(p string) error {
			return goCmd(ctx, nil, "test", "-short", "-count=1", "-trace="+p, "net/http")
		}},
	}
	for _, tr := range traces {
		t.Run(strings.SplitN(tr.name, "-", 2)[0]+map[bool]string{true: "-long"}[tr.long], func(t *testing.T) {
			if tr.long {
				testenv.SkipUnlessLong(t, "records a real execution trace of "+tr.name)
			}
			path := cachedTrace(t, tr.name, tr.record)
			checkRealTrace(t, path)
		})
	}
}

// TestRealTraceKinds records traces of the kinds testdata/tracekinds.txtar
// makes, with the local toolchain and, with PCTAB_LONG=1, with each Go
// release from go1.21 (the old format, which x/exp/trace converts) on, and
// checks their stores against x/exp/trace (checkRealTrace): goroutines in
// tasks and nested regions with GOMAXPROCS changed twice, with and
// without CPU samples, a trace of nothing, a flight recorder's snapshot
// (Go 1.25 and later), cgo callbacks from Go threads and from threads C
// creates (with a C compiler), and in the long run 100,000 short-lived
// goroutines and regions nested 10,000 deep.
func TestRealTraceKinds(t *testing.T) {
	toolchains := []string{""}
	for _, v := range testbuild.ReleaseVersions {
		if version.Compare(v, "go1.21") >= 0 {
			toolchains = append(toolchains, v)
		}
	}
	cgo := testbuild.CgoAvailable()
	kinds := []struct {
		name       string
		args       []string
		cgo, long  bool
		minVersion string
	}{
		{name: "mixed", args: []string{"-mode", "mixed"}, long: true},
		{name: "mixed-cpu", args: []string{"-mode", "mixed", "-cpu"}},
		{name: "tiny", args: []string{"-mode", "tiny"}},
		{name: "flight", args: []string{"-mode", "flight"}, minVersion: "go1.25"},
		{name: "cgo", args: []string{"-mode", "cgo"}, cgo: true},
		{name: "cbthread", args: []string{"-mode", "cbthread"}, cgo: true},
		{name: "many", args: []string{"-mode", "many"}, long: true},
		{name: "deep", args: []string{"-mode", "deep"}, long: true},
	}
	for _, tc := range toolchains {
		name := tc
		if name == "" {
			name = "local"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
			defer cancel()
			cfg := testbuild.Config{Archive: "tracekinds", Toolchain: tc, CGO: cgo}
			bin := testbuild.Build(t, cfg)
			ver := tc
			if ver == "" {
				ver = goVersion(t)
			}
			for _, k := range kinds {
				t.Run(k.name, func(t *testing.T) {
					switch {
					case k.cgo && !cfg.CGO:
						t.Skip("needs a gcc that targets the GOOS and GOARCH of the test")
					case k.minVersion != "" && version.Compare(ver, k.minVersion) < 0:
						t.Skipf("needs %s", k.minVersion)
					case k.long:
						testenv.SkipUnlessLong(t, "records a long trace")
					}
					path := cachedTrace(t, "kinds-"+k.name+"-"+filepath.Base(bin), func(p string) error {
						_, err := testbuild.Exec(ctx, cfg, bin, append(k.args, "-o", p)...)
						return err
					})
					checkRealTrace(t, path)
				})
			}
		})
	}
}

// TestOldFormatTrace builds a store of a trace of Go 1.21
// (testdata/go1.21-small.trace: four goroutines in a task and regions,
// recorded with go1.21.13), whose format x/exp/trace converts. MeasureTrace
// cannot split its bytes, and says so (ErrOldFormat); it used to report
// "event type 65 where a batch starts". A cut one fails to build with an
// error that names the format: x/exp/trace reads such a trace whole.
func TestOldFormatTrace(t *testing.T) {
	path := filepath.Join("testdata", "go1.21-small.trace")
	checkRealTrace(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MeasureTrace(bytes.NewReader(data)); !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "Go 1.21") {
		t.Errorf("MeasureTrace: %v, want ErrOldFormat naming Go 1.21", err)
	}
	// A trace of Go 1.10, which x/exp/trace does not read: its header.
	_, err = Build(strings.NewReader("go 1.10 trace\x00\x00\x00"), filepath.Join(t.TempDir(), "store"), Options{})
	if err == nil || !strings.Contains(err.Error(), "unsupported trace version go 1.10") || strings.Contains(err.Error(), "read whole") {
		t.Errorf("build of a Go 1.10 trace: %v; want x/exp/trace's unsupported version", err)
	}
	for _, n := range []int{len(data) / 2, len(data) - 1} {
		_, err := Build(bytes.NewReader(data[:n]), filepath.Join(t.TempDir(), "store"), Options{})
		if err == nil || !strings.Contains(err.Error(), "Go 1.21") || strings.Contains(err.Error(), "header") {
			t.Errorf("build of the trace cut to %d bytes: %v; want an error that names the Go 1.21 format", n, err)
		}
	}
}

// TestCgoCallbackThreads checks the goroutines' states against x/exp/trace
// on a trace of cgo callbacks from threads that C creates, one after
// another (testdata/cgo-callback-threads.trace, Go 1.26.11: 20 threads of
// two callbacks each, pthread_create then pthread_join). Each thread's
// callbacks run on the goroutine of the extra M it borrows, whose ID comes
// back with the M: the trace has GoCreateSyscall and GoDestroySyscall for
// the same goroutine 20 times. The store kept only its first life, as if
// a goroutine that ended could not appear again (12 of its 240 spans).
func TestCgoCallbackThreads(t *testing.T) {
	checkRealTrace(t, filepath.Join("testdata", "cgo-callback-threads.trace"))
}

// eachTransition calls fn with every state transition of a resource of
// kind k in the trace data, as x/exp/trace reads them, with its time and
// the start of its generation (both from the first event's time), and
// returns the last event's time.
func eachTransition(t *testing.T, data []byte, k xtrace.ResourceKind, fn func(st xtrace.StateTransition, tm, genStart int64)) (last int64) {
	t.Helper()
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var base, genStart int64
	first := true
	for {
		e, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			return last
		}
		if err != nil {
			t.Fatal(err)
		}
		tm := int64(e.Time())
		if first {
			base, first = tm, false
		}
		tm -= base
		last = tm
		if e.Kind() == xtrace.EventSync {
			genStart = tm
		}
		if e.Kind() == xtrace.EventStateTransition && e.StateTransition().Resource.Kind == k {
			fn(e.StateTransition(), tm, genStart)
		}
	}
}

// laneTotals is a lane's number of spans and the time they cover.
type laneTotals struct{ spans, busy int64 }

// stateLanes returns the totals of the state lanes of track tr in s, by
// the lanes' IDs (goroutine or proc).
func stateLanes(s *Store, tr TrackKind) map[int64]laneTotals {
	got := map[int64]laneTotals{}
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		if ln.Track != tr || ln.Layer != LayerState {
			continue
		}
		g := laneTotals{spans: ln.Spans}
		for k := range ln.Spans {
			g.busy += s.Span(l, k).Dur
		}
		got[ln.ID] = g
	}
	return got
}

// compareLanes reports each lane whose totals in the store (got) differ
// from the trace's (want), at most 10, and each the trace does not have.
func compareLanes(t *testing.T, what, spans string, got, want map[int64]laneTotals) {
	t.Helper()
	bad := 0
	for id, w := range want {
		if g := got[id]; g != w {
			if bad++; bad <= 10 {
				t.Errorf("%s %d: the store has %d %s spans covering %d ns; the trace, %d covering %d ns", what, id, g.spans, spans, g.busy, w.spans, w.busy)
			}
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok && g.spans > 0 {
			t.Errorf("%s %d: the store has %d %s spans, the trace none", what, id, g.spans, spans)
		}
	}
}

// checkGoroutineStates checks every goroutine's state lane in s against
// the trace's state transitions, as x/exp/trace reads them: its spans (one
// per stretch of time in a known state: running, runnable, waiting or in
// a syscall) and the time they cover.
func checkGoroutineStates(t *testing.T, data []byte, s *Store) {
	t.Helper()
	known := func(s xtrace.GoState) bool {
		return s == xtrace.GoRunning || s == xtrace.GoRunnable || s == xtrace.GoWaiting || s == xtrace.GoSyscall
	}
	type state struct {
		since int64 // -1: no known state yet
		st    xtrace.GoState
		laneTotals
	}
	want := map[int64]*state{}
	last := eachTransition(t, data, xtrace.ResourceGoroutine, func(st xtrace.StateTransition, tm, genStart int64) {
		from, to := st.Goroutine()
		g := want[int64(st.Resource.Goroutine())]
		if g == nil {
			g = &state{since: -1}
			want[int64(st.Resource.Goroutine())] = g
		}
		if from == xtrace.GoUndetermined {
			// In state to since the generation began.
			if g.since >= 0 && known(g.st) {
				if g.st == to {
					return
				}
				g.busy += genStart - g.since
				g.spans++
			}
			g.since, g.st = genStart, to
			return
		}
		if known(from) {
			g.busy += tm - max(g.since, 0)
			g.spans++
		}
		g.since, g.st = tm, to
	})
	totals := map[int64]laneTotals{}
	for id, g := range want {
		if g.since >= 0 && known(g.st) {
			g.busy += last - g.since
			g.spans++
		}
		totals[id] = g.laneTotals
	}
	compareLanes(t, "goroutine", "state", stateLanes(s, TrackGoroutine), totals)
}

// checkProcStates checks every proc's state lane against x/exp/trace's
// reading of the trace: its running spans, their number and the time they
// cover, split where the store splits them (at a Running to Running
// transition of a later generation's start). x/exp/trace has no state of
// a proc in a system call: the trace's ProcSyscall is ProcRunning, and its
// ProcSyscallAbandoned ProcIdle, whatever the trace's version (Go 1.22 on),
// so a proc in a syscall is drawn running in every version's store.
func checkProcStates(t *testing.T, data []byte, s *Store) {
	t.Helper()
	type state struct {
		since int64 // -1: not running
		laneTotals
	}
	want := map[int64]*state{}
	last := eachTransition(t, data, xtrace.ResourceProc, func(st xtrace.StateTransition, tm, genStart int64) {
		from, to := st.Proc()
		p := want[int64(st.Resource.Proc())]
		if p == nil {
			p = &state{since: -1}
			want[int64(st.Resource.Proc())] = p
		}
		at := tm
		if from == xtrace.ProcUndetermined {
			if p.since >= 0 && to == xtrace.ProcRunning {
				return // running on from the previous generation
			}
			at = genStart
		} else if p.since < 0 && from == xtrace.ProcRunning && tm > 0 {
			p.since = 0 // running since before the trace
		}
		if p.since >= 0 {
			p.busy += at - p.since
			p.spans++
			p.since = -1
		}
		if to == xtrace.ProcRunning {
			p.since = at
		}
	})
	totals := map[int64]laneTotals{}
	for id, w := range want {
		if w.since >= 0 {
			w.busy += last - w.since
			w.spans++
		}
		totals[id] = w.laneTotals
	}
	compareLanes(t, "proc", "running", stateLanes(s, TrackProc), totals)
}

func checkRealTrace(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := MeasureTrace(bytes.NewReader(data))
	if errors.Is(err, ErrOldFormat) {
		t.Logf("MeasureTrace: %v", err)
	} else if err != nil || ms.Total != int64(len(data)) {
		t.Fatalf("MeasureTrace: %+v, %v", ms, err)
	}
	dir := filepath.Join(t.TempDir(), "store")
	start := time.Now()
	m, err := Build(bytes.NewReader(data), dir, Options{Source: filepath.Base(path)})
	if err != nil {
		t.Fatal(err)
	}
	built := time.Since(start)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var size int64
	for _, f := range m.Files {
		size += f.Bytes
	}
	t.Logf("%s: %d bytes, %d events, %d lanes, %d spans; store %d bytes (%.2fx), built in %v",
		filepath.Base(path), len(data), m.Events, m.Lanes, m.Spans, size, float64(size)/float64(len(data)), built.Round(time.Millisecond))
	checkInflation(t, s)
	checkSpanStacks(t, s)
	checkGoroutineStates(t, data, s)
	checkProcStates(t, data, s)

	// The truth: every event of the trace, and its stack's functions.
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		time  int64
		kind  xtrace.EventKind
		funcs []string
	}
	var truth []ev
	var base int64
	for {
		e, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(truth) == 0 {
			base = int64(e.Time())
		}
		st := e.Stack()
		if e.Kind() == xtrace.EventStateTransition && st == xtrace.NoStack {
			st = e.StateTransition().Stack
		}
		x := ev{time: int64(e.Time()) - base, kind: e.Kind()}
		for f := range st.Frames() {
			x.funcs = append(x.funcs, f.Func)
		}
		truth = append(truth, x)
	}
	if uint64(len(truth)) != m.Events {
		t.Fatalf("store: %d events, trace: %d", m.Events, len(truth))
	}
	i := 0
	if err := s.Events(0, m.Duration+1, func(e *Event) bool {
		if e.Time != truth[i].time || e.Kind != truth[i].kind {
			t.Fatalf("event %d: %+v, the trace has %+v", i, e, truth[i])
		}
		i++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	// Functions to query: from the first, middle and last events with a
	// stack, innermost and outermost frames.
	var fns []string
	for _, k := range []int{0, len(truth) / 2, len(truth) - 1} {
		for j := k; j < len(truth); j++ {
			if f := truth[j].funcs; len(f) > 0 {
				fns = append(fns, f[0], f[len(f)-1])
				break
			}
		}
	}
	slices.Sort(fns)
	fns = slices.Compact(fns)
	d := m.Duration
	for _, fn := range fns {
		for _, rg := range [][2]int64{{0, d + 1}, {d / 4, d / 2}} {
			want := 0
			for _, e := range truth {
				if e.time >= rg[0] && e.time < rg[1] && slices.Contains(e.funcs, fn) {
					want++
				}
			}
			got := 0
			st, err := s.EventsThrough(fn, rg[0], rg[1], func(*Event) bool { got++; return true })
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s in %v: the store finds %d events, the trace has %d", fn, rg, got, want)
			}
			if st.IndexCorrupt || st.PagesRead > m.Pages {
				t.Errorf("%s: %+v", fn, st)
			}
		}
	}
	// The busiest lanes against folds over their spans.
	lanes := make([]int, s.NumLanes())
	spans := make([]int64, len(lanes))
	for l := range lanes {
		lanes[l], spans[l] = l, s.Lane(l).Spans
	}
	sort.SliceStable(lanes, func(a, b int) bool { return spans[lanes[a]] > spans[lanes[b]] })
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, l := range lanes[:min(10, len(lanes))] {
		n := s.Lane(l).Spans
		spans := make([]Span, n)
		for k := range n {
			spans[k] = s.Span(l, k)
		}
		for range 20 {
			t0 := rnd.Int64N(d + 1)
			t1 := t0 + 1 + rnd.Int64N(d+1-t0)
			var count, busy int64
			longest := int64(-1)
			for k, sp := range spans {
				if sp.End() > t0 && sp.Start < t1 {
					count++
					busy += min(sp.End(), t1) - max(sp.Start, t0)
					if longest < 0 || sp.Dur > spans[longest].Dur {
						longest = int64(k)
					}
				}
			}
			q := s.Query(l, t0, t1)
			if q.Count != count || q.Busy != busy || q.Longest != longest {
				t.Fatalf("lane %d [%d, %d): %+v; fold: count %d busy %d longest %d", l, t0, t1, q, count, busy, longest)
			}
		}
	}
}

// checkInflation checks that no page of s inflates more than maxInflation
// times, and logs how far its pages inflate.
func checkInflation(t *testing.T, s *Store) {
	var most float64
	var raw, stored int64
	h := make([]byte, pageHeader)
	for i := range s.m.Pages {
		off, _ := s.pageBounds(i)
		if _, err := s.events.ReadAt(h, off); err != nil {
			t.Fatal(err)
		}
		r, st := binary.LittleEndian.Uint32(h[12:]), binary.LittleEndian.Uint32(h[16:])
		if !inflationOK(uint64(r), uint64(st)) {
			t.Errorf("page %d: %d record bytes stored in %d", i, r, st)
		}
		most = max(most, float64(r)/float64(st))
		raw += int64(r)
		stored += int64(st)
	}
	t.Logf("%d pages inflate %.1fx on the whole, at most %.1fx", s.m.Pages, float64(raw)/float64(stored), most)
}
