package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/pctab/pctab/internal/cputime"

	"golang.org/x/perf/benchfmt"
)

//go:noinline
func replayRecurse(n int, ch chan int) int {
	if n == 0 {
		return <-ch
	}
	return replayRecurse(n-1, ch) + 1
}

//go:noinline
func replaySpin(d time.Duration) int {
	x := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := range 10000 {
			x += i * i % 7
		}
	}
	return x
}

// replaySelf writes an execution trace and a CPU profile of this test
// process to a temporary directory, and returns them with the process's
// binary, which wrote them.
func replaySelf(t *testing.T) (exe, tracePath, pprofPath string) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no disassembler for %s", runtime.GOARCH)
	}
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	tracePath, pprofPath = filepath.Join(dir, "self.trace"), filepath.Join(dir, "self.pprof")
	tf, err := os.Create(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	pf, err := os.Create(pprofPath)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if err := trace.Start(tf); err != nil {
		t.Skipf("cannot trace this process: %v", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		trace.Stop()
		t.Skipf("cannot profile this process: %v", err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch := make(chan int, 1)
			for i := range 50 {
				ch <- i
				replayRecurse(g+i%13, ch)
			}
			replaySpin(20 * time.Millisecond)
		}()
	}
	wg.Wait()
	// Spin on until the profile holds CPU samples: the tests check real
	// samples, and fail rather than skip when a machine gives none.
	// 300 ms of the process's CPU time, not of wall time, so that a
	// loaded machine gives the profiler as many samples.
	c0, _ := cputime.Process()
	for c := c0; c-c0 < 300*time.Millisecond; c, _ = cputime.Process() {
		replaySpin(10 * time.Millisecond)
	}
	pprof.StopCPUProfile()
	trace.Stop()
	pf.Close()
	data, err := os.ReadFile(pprofPath)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := profile.ParseData(data); err != nil || len(p.Sample) == 0 {
		t.Fatalf("the CPU profile of this process holds no samples (%v)", err)
	}
	return exe, tracePath, pprofPath
}

// fastArgs keeps the replays of the tests short.
var fastArgs = []string{"-count", "2", "-frames", "20000", "-enc", "varint,varint+cache,linear"}

// runReplayArgs runs pctab-stats replay with fastArgs and args; the error
// is the exit status, if not 0.
func runReplayArgs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	var err error
	if code := run(append(append([]string{"replay"}, fastArgs...), args...), &out, &errOut); code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	return out.String(), errOut.String(), err
}

// TestReplayTrace replays an execution trace of this process against its
// own binary: the check must pass on every frame and the output must be
// benchmark lines that benchfmt reads, with the configuration first.
func TestReplayTrace(t *testing.T) {
	exe, tr, _ := replaySelf(t)
	out, errOut, err := runReplayArgs(t, "-name", "self", "-trace", tr, exe)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut)
	}
	r := benchfmt.NewReader(strings.NewReader(out), "replay")
	results := 0
	units := map[string]int{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		case *benchfmt.Result:
			results++
			if got := rec.GetConfig("mismatches"); got != "0" {
				t.Errorf("mismatches: %q", got)
			}
			if n, _ := strconv.Atoi(rec.GetConfig("frames-checked")); n == 0 {
				t.Errorf("frames-checked: %q", rec.GetConfig("frames-checked"))
			}
			if rec.GetConfig("checked-against") != "execution trace frames" {
				t.Errorf("checked-against: %q", rec.GetConfig("checked-against"))
			}
			name := string(rec.Name)
			if trimmed := strings.TrimRight(name, "0123456789"); trimmed != name && strings.HasSuffix(trimmed, "-") {
				t.Errorf("benchmark name %q ends in -digits", name)
			}
			if !strings.HasPrefix(name, "Replay/bin=self/input=trace-") {
				t.Errorf("benchmark name %q", name)
			}
			for _, v := range rec.Values {
				u := v.OrigUnit
				if u == "" {
					u = v.Unit // not tidied
				}
				units[u]++
			}
			if _, ok := rec.Value("cache-hit-%"); ok != strings.Contains(name, "/enc=varint+cache/") {
				t.Errorf("%s: cache-hit-%% present: %v", name, ok)
			}
		}
	}
	// 2 inputs (events, distinct) x 4 workloads x 3 encodings x 2 passes.
	// No name may end in -digits, which benchstat reads as GOMAXPROCS.
	if want := 2 * 4 * 3 * 2; results != want {
		t.Errorf("%d results, want %d\n%s", results, want, out)
	}
	for _, u := range []string{"ns/frame", "lookups/frame", "walks/frame"} {
		if units[u] != results {
			t.Errorf("unit %s in %d of %d results", u, units[u], results)
		}
	}
	if !strings.Contains(out, "# ratio input=trace-distinct workload=symbolize: linear / varint+cache = ") {
		t.Errorf("no symbolize ratio in\n%s", out)
	}
}

// TestReplayJSON replays the CPU profile of this process with -json.
func TestReplayJSON(t *testing.T) {
	exe, _, pp := replaySelf(t)
	out, errOut, err := runReplayArgs(t, "-json", "-workload", "unwind,symbolize", "-pprof", pp, exe)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut)
	}
	checkJSONValue(t, "replay", []byte(out))
	var rep replayReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Source != "pprof" || rep.Check.Against != "pprof locations" || rep.Check.Mismatches != 0 || rep.Check.Encodings != 3 {
		t.Errorf("check: %+v", rep.Check)
	}
	if len(rep.Inputs) != 1 || rep.Inputs[0].Name != "pprof" {
		t.Fatalf("inputs: %+v", rep.Inputs)
	}
	if rep.Inputs[0].Frames == 0 {
		t.Fatalf("no frames replayed from a profile with samples: %+v", rep.Inputs[0])
	}
	if got, want := len(rep.Results), 2*3; got != want {
		t.Errorf("%d results, want %d", got, want)
	}
	for _, r := range rep.Results {
		if len(r.NsPerFrame) != 2 || r.MedianNs <= 0 || r.LookupsPerFrame < 1 {
			t.Errorf("result %+v", r)
		}
	}
	if len(rep.Ratios) != 2*2 {
		t.Errorf("ratios: %+v", rep.Ratios)
	}
}

// TestReplaySynthetic draws stacks from this binary's call graph.
func TestReplaySynthetic(t *testing.T) {
	exe, _, _ := replaySelf(t)
	out, errOut, err := runReplayArgs(t, "-json", "-workload", "gcscan", "-synthetic", "300", "-seed", "3", exe)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Check.Against != "debug/gosym" || rep.Check.Frames == 0 || rep.Check.Mismatches != 0 {
		t.Errorf("check: %+v", rep.Check)
	}
	if len(rep.Inputs) != 1 || rep.Inputs[0].Stacks != 300 || rep.Inputs[0].Frames < 300 {
		t.Errorf("inputs: %+v", rep.Inputs)
	}
	if len(rep.Results) != 3 {
		t.Errorf("%d results, want 3", len(rep.Results))
	}
}

// TestReplayMismatch gives a wrong slide: the check must fail, say which
// frames and how, and the command must fail without timing anything.
func TestReplayMismatch(t *testing.T) {
	exe, tr, _ := replaySelf(t)
	out, errOut, err := runReplayArgs(t, "-slide", "0x40", "-mismatches", "3", "-trace", tr, exe)
	if err == nil {
		t.Fatalf("replay succeeded with a wrong slide:\n%s", out)
	}
	if !strings.Contains(out, "mismatches: ") || strings.Contains(out, "mismatches: 0\n") {
		t.Errorf("no mismatch count in\n%s", out)
	}
	if strings.Contains(out, "Benchmark") {
		t.Errorf("benchmarks ran despite mismatches:\n%s", out)
	}
	if n := strings.Count(errOut, "replay: mismatch: encoding "); n != 3 {
		t.Errorf("%d mismatch lines on stderr, want 3:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, " differ: recorded ") {
		t.Errorf("mismatch lines do not say how frames differ:\n%s", errOut)
	}
}

// TestReplayFlags checks the command line errors: usage errors exit 2, and
// a file that cannot be read exits 1.
func TestReplayFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{}, 2},
		{[]string{"bin"}, 2},
		{[]string{"-trace", "t", "-pprof", "p", "bin"}, 2},
		{[]string{"-trace", "t"}, 2},
		{[]string{"-trace", "t", "a", "b"}, 2},
		{[]string{"-trace", "t", "-enc", "nope", "bin"}, 2},
		{[]string{"-trace", "t", "-workload", "nope", "bin"}, 2},
		{[]string{"-trace", "t", "-slide", "x", "bin"}, 2},
		{[]string{"-trace", "t", "-count", "0", "bin"}, 2},
		{[]string{"-trace", "t", "-min-depth", "2", "bin"}, 2},
		{[]string{"-trace", "/nonexistent/trace", os.Args[0]}, 1},
		{[]string{"-trace", "t", "/nonexistent/binary"}, 1},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"replay"}, tc.args...), &stdout, &stderr); code != tc.code {
			t.Errorf("replay %q: exit %d, want %d\n%s", tc.args, code, tc.code, stderr.String())
		}
	}
}
