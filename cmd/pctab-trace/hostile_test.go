package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
	xtrace "golang.org/x/exp/trace"
)

// TestAggTopNegative is issue 26's item 9: agg -top -1 panicked. It is an
// error now, and -top 0 prints no lane.
func TestAggTopNegative(t *testing.T) {
	tr := traceFile(t)
	store := filepath.Join(t.TempDir(), "store")
	runCmd(t, "build", tr, store)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"agg", "-top", "-1", store}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-top") {
		t.Errorf("agg -top -1: exit %d, stderr:\n%s", code, &stderr)
	}
	if out := runCmd(t, "agg", "-top", "0", store); !strings.Contains(out, "the 0 busiest") {
		t.Errorf("agg -top 0 printed:\n%s", out)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"query", "-show", "-1", "-func", "main.main", store}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-show") {
		t.Errorf("query -show -1: exit %d, stderr:\n%s", code, &stderr)
	}
}

// TestFromPastEnd checks that a -from at or after the trace's end, with
// no -to, is a usage error that says where the trace ends, as a
// reversed -from and -to are (TestCommandLine): query and agg printed the
// range [from, end) reversed, and nothing in it.
func TestFromPastEnd(t *testing.T) {
	tr := traceFile(t)
	store := filepath.Join(t.TempDir(), "store")
	runCmd(t, "build", tr, store)
	for _, args := range [][]string{
		{"agg", "-from", "1h", store},
		{"query", "-from", "1h", "-func", "main.main", store},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "the trace ends at") {
			t.Errorf("%s: exit %d, stderr:\n%s", strings.Join(args, " "), code, &stderr)
		}
	}
	// Within the trace, -from alone is fine.
	runCmd(t, "agg", "-from", "1", store)
}

// TestBuildFailsCleanly checks that a build that fails leaves no STORE.
func TestBuildFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.trace")
	os.WriteFile(bad, []byte("go 1.26 trace\x00\x00\x00\x01\x02\x03"), 0o666)
	store := filepath.Join(dir, "store")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"build", bad, store}, &stdout, &stderr); code != 1 {
		t.Fatalf("build of a bad trace: exit %d, want 1; stderr:\n%s", code, &stderr)
	}
	t.Log(stderr.String())
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("a failed build left %s: %v", store, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed build left %v", ents)
	}
}

// TestBuildOldFormat checks that build of a trace of Go 1.21 or older,
// which x/exp/trace reads, succeeds and prints the store's sizes: it wrote
// the store, then failed measuring the trace's parts ("event type 65 where
// a batch starts").
func TestBuildOldFormat(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	out := runCmd(t, "build", filepath.Join("..", "..", "tracestore", "testdata", "go1.21-small.trace"), store)
	if !strings.Contains(out, "78 events") || !strings.Contains(out, "total") {
		t.Errorf("build printed:\n%s", out)
	}
	t.Log(out)
}

// TestBuildFromPipe checks that build reads a trace from a pipe
// (curl .../debug/pprof/trace | pctab-trace build /dev/stdin STORE): it
// wrote the store, then failed with "seek /dev/stdin: illegal seek"
// measuring the trace's parts. With -labels, which reads the trace twice,
// it fails before it builds, and says why.
func TestBuildFromPipe(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /dev/fd")
	}
	data, err := os.ReadFile(traceFile(t))
	if err != nil {
		t.Fatal(err)
	}
	pipe := func() string {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		go func() {
			w.Write(data)
			w.Close()
		}()
		return fmt.Sprintf("/dev/fd/%d", r.Fd())
	}
	store := filepath.Join(t.TempDir(), "store")
	out := runCmd(t, "build", pipe(), store)
	if !strings.Contains(out, "total") {
		t.Errorf("build printed:\n%s", out)
	}
	hist := filepath.Join(t.TempDir(), "history.json")
	os.WriteFile(hist, []byte(`{"schema_version":1,"trampolines":1024,"bindings":[]}`), 0o666)
	store2 := filepath.Join(t.TempDir(), "store2")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"build", "-labels", hist, pipe(), store2}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "regular file") {
		t.Errorf("build -labels from a pipe: exit %d, stderr:\n%s", code, &stderr)
	}
	if _, err := os.Stat(store2); !os.IsNotExist(err) {
		t.Errorf("build -labels from a pipe left %s: %v", store2, err)
	}
}

// TestServeHosts checks the Host names serve allows: -addr's host, the
// address bound, and -allowhost's list; loopback names are the handler's.
func TestServeHosts(t *testing.T) {
	got := allowedHosts("mybox:8080", "10.1.2.3:8080", " a.example, b.example:9 ,")
	want := []string{"10.1.2.3", "mybox", "a.example", "b.example:9"}
	if !slices.Equal(got, want) {
		t.Errorf("allowedHosts = %q, want %q", got, want)
	}
	if got := allowedHosts(":8080", "[::]:8080", ""); len(got) != 0 {
		t.Errorf("allowedHosts for every interface = %q", got)
	}
	if got := allowedHosts("0.0.0.0:8080", "0.0.0.0:8080", "mybox"); !slices.Equal(got, []string{"mybox"}) {
		t.Errorf("allowedHosts for 0.0.0.0 = %q", got)
	}
}

// TestBuildLabelsCutTraceHelper is the child's side of
// TestBuildLabelsCutTrace.
func TestBuildLabelsCutTraceHelper(t *testing.T) { labelstest.MultiGenHelper(t) }

// TestBuildLabelsCutTrace runs build -labels on a trace cut short: the
// store kept the trace's whole generations, then the label index failed
// on the cut. The index holds the samples of the generations the store
// holds.
func TestBuildLabelsCutTrace(t *testing.T) {
	data, h := labelstest.MultiGenWorkload(t, "TestBuildLabelsCutTraceHelper")
	dir := t.TempDir()
	tr, hist, store := filepath.Join(dir, "cut.trace"), filepath.Join(dir, "h.json"), filepath.Join(dir, "store")
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr, data[:len(data)/2], 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, hb, 0o666); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"build", "-labels", hist, tr, store}, &stdout, &stderr); code != 0 {
		t.Fatalf("build -labels of a cut trace: exit %d\n%s", code, &stderr)
	}
	if !strings.Contains(stderr.String(), "warning: "+tr+": the trace is cut") || !strings.Contains(stdout.String(), "labels.idx:") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	}
	s, err := tracestore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, err := openLabels(store)
	if err != nil || x == nil {
		t.Fatalf("labels.idx: %v", err)
	}
	// Every sample the index holds is an event of the store.
	var samples, events int
	for _, l := range x.Labels() {
		samples += len(x.Samples(l, -1<<63, 1<<63-1))
	}
	if err := s.Events(0, s.Manifest().Duration+1, func(e *tracestore.Event) bool {
		if e.Kind == xtrace.EventStackSample {
			events++
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if samples != events || samples == 0 {
		t.Errorf("the index holds %d samples, the store %d", samples, events)
	}
}

// TestAggCorruptStore checks that agg fails, naming the file, on a store
// whose lanes, forests or span attributes are corrupt: the store checks
// them lazily and answers a corrupt lane as if it had no spans, a span of
// a corrupt chunk of attributes with kind NoSpan, and a forest's inner
// nodes unchecked, so agg printed fewer lanes, or a kind "SpanKind(255)",
// or wrong busy times, and exited 0.
func TestAggCorruptStore(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	// Goroutines that block and wake a few hundred times: lanes of
	// hundreds of spans, which have forests.
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	for i := range 300 {
		ping <- i
		<-pong
	}
	close(ping)
	trace.Stop()
	tr := filepath.Join(t.TempDir(), "pingpong.trace")
	if err := os.WriteFile(tr, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "store")
	runCmd(t, "build", tr, base)
	for _, c := range []struct {
		file string
		edit func([]byte)
	}{
		{"lanes.tab", func(b []byte) { b[len(b)/2] ^= 0x40 }},
		{"forest.bin", func(b []byte) { b[len(b)/2] ^= 0x40 }},
		{"spanattr.bin", func(b []byte) {
			for i := range b {
				b[i] = 0xff // every chunk unreadable
			}
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			os.Mkdir(store, 0o777)
			ents, _ := os.ReadDir(base)
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(base, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if e.Name() == c.file {
					if len(b) == 0 {
						t.Skipf("%s is empty", c.file)
					}
					c.edit(b)
				}
				os.WriteFile(filepath.Join(store, e.Name()), b, 0o666)
			}
			for _, args := range [][]string{{"agg", store}, {"agg", "-json", store}} {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, &stdout, &stderr)
				t.Logf("%s: exit %d: %s", strings.Join(args, " "), code, &stderr)
				if code != 1 || !strings.HasPrefix(stderr.String(), "pctab-trace: ") || !strings.Contains(stderr.String(), c.file) || stdout.Len() != 0 {
					t.Errorf("%s: exit %d, %d bytes of output, stderr %q; want exit 1 and an error that names %s", strings.Join(args, " "), code, stdout.Len(), &stderr, c.file)
				}
			}
		})
	}
}
