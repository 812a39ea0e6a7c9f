package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/stackcompress/stackreport"
)

//go:noinline
func stacksDescend(n int, ch chan int) int {
	if n == 0 {
		return <-ch
	}
	return stacksDescend(n-1, ch) + 1
}

//go:noinline
func stacksSpin(i int) int { return i * i % 7 }

// stacksInputs writes an execution trace and a CPU profile of this test
// process to dir.
func stacksInputs(t *testing.T, dir string) (tracePath, pprofPath string) {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var tr, pr bytes.Buffer
	if err := trace.Start(&tr); err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(&pr); err != nil {
		t.Skip("CPU profiling unavailable:", err)
	}
	var wg sync.WaitGroup
	for g := range 12 {
		ch := make(chan int)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				stacksDescend(g%5, ch)
			}
		}()
		for range 25 {
			ch <- g
		}
	}
	wg.Wait()
	x := 0
	c0, _ := cputime.Process()
	for c := c0; c-c0 < 200*time.Millisecond; c, _ = cputime.Process() {
		for i := range 1000 {
			x += stacksSpin(i)
		}
	}
	trace.Stop()
	pprof.StopCPUProfile()
	tracePath, pprofPath = filepath.Join(dir, "t.out"), filepath.Join(dir, "c.pprof")
	if err := os.WriteFile(tracePath, tr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pprofPath, pr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return tracePath, pprofPath
}

func TestRunStacks(t *testing.T) {
	dir := t.TempDir()
	tracePath, pprofPath := stacksInputs(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string // substrings of the text output
	}{
		{"trace", []string{"-trace", tracePath}, []string{"stacks:", "full-stack dedup:", "pc/f64-absolute", "text/f32-delta", "pc/fpack-chain-dict", "line/fpack-chain", "anchors:"}},
		{"trace-binary", []string{"-trace", tracePath, self}, []string{"text base:", "text/f32-absolute", "physical PCs:", "tracer dedup:"}},
		{"pprof-binary", []string{"-pprof", pprofPath, self}, []string{"pprof profile"}},
		{"pprof", []string{"-pprof", pprofPath, "-cachekey", "off"}, []string{"pprof profile", "cache key:            off"}},
		{"layouts", []string{"-trace", tracePath, "-layouts", "pc/seed,text/f32-chain,line/packed"}, []string{"pc/f64-absolute", "text/f32-chain", "line/fpack-chain-dict"}},
		{"file", []string{"-trace", tracePath, "-pagenodes", "16", "-o", filepath.Join(dir, "dag"), "-budget", "20000", "-nommap"}, []string{"read by ReadAt with budget 20000 B", "stacks verified"}},
		{"file-mmap", []string{"-trace", tracePath, "-o", filepath.Join(dir, "dag2"), "-filelayout", "text/delta32"}, []string{"(text/f32-delta)", "budget none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"stacks"}, tt.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("stacks %q: exit %d\n%s", tt.args, code, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

func TestRunStacksJSON(t *testing.T) {
	dir := t.TempDir()
	tracePath, _ := stacksInputs(t, dir)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"stacks", "-json", "-trace", tracePath, "-o", filepath.Join(dir, "dag")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	checkJSONValue(t, "stacks", stdout.Bytes())
	var out stacksJSON
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if out.File == nil {
		t.Fatalf("no file report with -o:\n%s", stdout.String())
	}
	if out.Stacks == 0 || out.RawBytes != 8*out.Frames || len(out.Variants) == 0 || out.File.Verified != out.Stacks {
		t.Fatalf("JSON report %+v", out)
	}
	for _, v := range out.Variants {
		if v.Verified != out.Stacks || v.Nodes == 0 || v.BytesPerNode <= 0 || v.MeanProbe < 1 {
			t.Errorf("variant %+v", v)
		}
	}
}

func TestRunStacksErrors(t *testing.T) {
	dir := t.TempDir()
	tracePath, pprofPath := stacksInputs(t, dir)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{}, 2},
		{[]string{"-trace", tracePath, "-pprof", pprofPath}, 2},
		{[]string{"-trace", filepath.Join(dir, "missing")}, 1},
		{[]string{"-trace", pprofPath}, 1},
		{[]string{"-pprof", tracePath}, 1},
		{[]string{"-trace", tracePath, "a", "b"}, 2},
		{[]string{"-trace", tracePath, "-layouts", "pc"}, 2},
		{[]string{"-trace", tracePath, "-layouts", "bogus/seed"}, 2},
		{[]string{"-trace", tracePath, "-layouts", "pc/bogus"}, 2},
		{[]string{"-trace", tracePath, "-o", filepath.Join(dir, "y"), "-filelayout", "pc"}, 2},
		{[]string{"-trace", tracePath, "-cachekey", "bogus"}, 2},
		{[]string{"-trace", tracePath, "-pagenodes", "3"}, 2},
		{[]string{"-trace", tracePath, "-o", filepath.Join(dir, "x"), "-budget", "1"}, 1},
		{[]string{"-trace", tracePath, filepath.Join(dir, "missing-binary")}, 1},
		{[]string{"-bogus-flag"}, 2},
		{[]string{"-trace", tracePath, "-no-mmap"}, 2},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"stacks"}, tc.args...), &stdout, &stderr); code != tc.code {
			t.Errorf("stacks %q: exit %d, want %d\n%s", tc.args, code, tc.code, stderr.String())
		}
	}
}

// TestFromBinaryTextBase moves the PCs of a trace of this process by a
// page-aligned slide, as a position-independent binary loaded elsewhere
// records them, and checks the text base fromBinary sets: the binary's
// text start plus the slide when none is given, and exactly the given one
// (a run-time address already) when the user gives -textbase.
func TestFromBinaryTextBase(t *testing.T) {
	dir := t.TempDir()
	tracePath, _ := stacksInputs(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := objscan.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	textStart := f.TextStart
	f.Close()
	const slide = 0x5550000
	for _, tc := range []struct {
		name     string
		slide    uint64
		userBase uint64
		wantBase uint64
	}{
		{"no slide, binary's base", 0, 0, textStart},
		{"slide, binary's base", slide, 0, textStart + slide},
		{"no slide, user's base", 0, 0x401000, 0x401000},
		{"slide, user's base", slide, textStart + slide, textStart + slide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := readCorpus(tracePath, "")
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.Locations {
				if c.Locations[i].PC != 0 {
					c.Locations[i].PC += tc.slide
				}
			}
			opts := stackreport.Options{TextBase: tc.userBase}
			var stderr bytes.Buffer
			if err := fromBinary(self, c, &opts, true, &stderr); err != nil {
				t.Fatal(err)
			}
			if opts.Physical == nil {
				t.Fatalf("no physical frames: the slide was not found: %s", stderr.String())
			}
			if opts.TextBase != tc.wantBase {
				t.Errorf("text base %#x, want %#x", opts.TextBase, tc.wantBase)
			}
		})
	}
}
