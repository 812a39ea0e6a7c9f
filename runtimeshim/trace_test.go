package runtimeshim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/stackinput"
)

// stdWorkload is a real workload: the test binary of a standard-library
// package, run with an execution trace and a CPU profile.
type stdWorkload struct {
	bin, trace, pprof string
}

// stdTrace builds the compress/flate test binary for goarch with the go
// command on PATH and runs its short tests in the package directory with
// -test.trace and -test.cpuprofile. The three files are cached under the
// testbuild cache directory, keyed by the toolchain and the target, so
// later runs only read them. It skips when binaries of goarch cannot run
// here.
func stdTrace(t testing.TB, goarch string) stdWorkload {
	t.Helper()
	cfg := testbuild.Config{GOOS: "linux", GOARCH: goarch}
	runner, err := testbuild.Runner(cfg)
	if errors.Is(err, testbuild.ErrCannotRun) {
		t.Skipf("cannot run linux/%s binaries here: %v", goarch, err)
	} else if err != nil {
		t.Fatal(err)
	}
	ver, err := exec.Command("go", "env", "GOVERSION", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	fields := strings.Fields(string(ver))
	if len(fields) != 2 {
		t.Fatalf("go env GOVERSION GOROOT printed %q", ver)
	}
	cache, err := testbuild.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "runtimeshim-std", fmt.Sprintf("%s-linux-%s", fields[0], goarch))
	w := stdWorkload{
		bin:   filepath.Join(dir, "flate.test"),
		trace: filepath.Join(dir, "flate.trace"),
		pprof: filepath.Join(dir, "flate.pprof"),
	}
	if _, err := os.Stat(w.pprof); err == nil {
		return w
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(dir, "tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", filepath.Join(tmp, "flate.test"), "compress/flate")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the compress/flate test binary: %v\n%s", err, out)
	}
	args := append(append([]string(nil), runner...), filepath.Join(tmp, "flate.test"),
		"-test.run=.", "-test.short", "-test.trace="+filepath.Join(tmp, "flate.trace"), "-test.cpuprofile="+filepath.Join(tmp, "flate.pprof"))
	run := exec.CommandContext(ctx, args[0], args[1:]...)
	run.Dir = filepath.Join(fields[1], "src", "compress", "flate") // its testdata
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("running the compress/flate tests: %v\n%s", err, out)
	}
	// Publish the binary last: its trace and profile exist once it does.
	for _, name := range []string{"flate.trace", "flate.pprof", "flate.test"} {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// readCorpus reads a trace or profile file.
func readCorpus(t testing.TB, path string, read func(f *os.File) (*stackinput.Corpus, error)) *stackinput.Corpus {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestStdTrace is the cross-check on a real workload: symbolizing the PCs
// of an execution trace and of a CPU profile of the compress/flate tests
// through every encoding reproduces every frame the runtime recorded, and
// every workload replays the trace's stacks alike with every encoding.
func TestStdTrace(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds and runs the compress/flate tests with tracing")
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			w := stdTrace(t, goarch)
			f, err := objscan.Open(w.bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := NewModule(f)
			if err != nil {
				t.Fatal(err)
			}
			shims := allShims(t, m)
			tr := readCorpus(t, w.trace, func(f *os.File) (*stackinput.Corpus, error) { return stackinput.ReadTrace(f) })
			pp := readCorpus(t, w.pprof, func(f *os.File) (*stackinput.Corpus, error) { return stackinput.ReadPprof(f) })
			slide, err := shims[0].FindSlide(tr.Locations)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range shims {
				r := s.CheckTrace(tr, slide, 10)
				for _, m := range r.Mismatches {
					t.Errorf("%s: trace: %v", s.enc.Name, m)
				}
				if r.Frames < 1000 {
					t.Errorf("%s: only %d trace frames checked", s.enc.Name, r.Frames)
				}
				p := s.CheckPprof(pp, slide, 10)
				for _, m := range p.Mismatches {
					t.Errorf("%s: pprof: %v", s.enc.Name, m)
				}
				if p.Frames < 10 {
					t.Errorf("%s: only %d profile frames checked", s.enc.Name, p.Frames)
				}
				if s == shims[0] {
					t.Logf("trace: %d stacks, %d frames; profile: %d locations, %d frames; checked with %d encodings", r.Stacks, r.Frames, p.Stacks, p.Frames, len(shims))
				}
			}
			stacks, st := shims[0].StacksFromCorpus(tr, slide)
			if st.Frames == 0 || st.Ms == 0 {
				t.Fatalf("no stacks: %+v", st)
			}
			distinct := DistinctStacks(stacks)
			if g, err := shims[0].CheckGosym(distinct, 10); err != nil {
				t.Fatal(err)
			} else if g.Mismatched > 0 {
				t.Errorf("debug/gosym disagrees on %d of %d frames: %v", g.Mismatched, g.Frames, g.Mismatches)
			}
			// A trapped frame at the last instruction of a function:
			// replayed as a trap it stays in its table; taken for a
			// return PC it is one past it, where the runtime throws.
			if pc, ok := pastTable(f); ok {
				for _, wl := range Workloads() {
					if c := shims[0].Replay(wl, []Stack{{PCs: []uint64{pc}, Trap: true}}); c.Errors != 0 || c.Unresolved != 0 {
						t.Errorf("%s: trapped frame %#x: %+v", wl, pc, c)
					}
					if c := shims[0].Replay(wl, []Stack{{PCs: []uint64{pc}}}); c.Errors != 1 {
						t.Errorf("%s: return PC %#x one past its table: %d errors, want 1", wl, pc, c.Errors)
					}
				}
			} else if goarch == "amd64" {
				// The amd64 linker pads functions to 32 bytes; arm64's
				// tables cover every function to the next one.
				t.Error("no function has padding after its pcsp table")
			}
			for _, wl := range Workloads() {
				ref := shims[0].Replay(wl, distinct)
				for _, s := range shims[1:] {
					c := s.Replay(wl, distinct)
					c.Hits, c.Misses = 0, 0
					if c != ref {
						t.Errorf("%s: %s gives %+v, varint %+v", wl, s.enc.Name, c, ref)
					}
				}
				// The runtime throws on a lookup past the end of a
				// table, so a faithful replay makes none. (A CPU
				// sample's innermost frame is a trapped instruction,
				// stored plus one: replayed as a return PC it reached
				// one past runtime.tgkill's table; see Stack.Trap.)
				if ref.Errors != 0 || ref.Unresolved != 0 {
					t.Errorf("%s: %d lookup errors, %d unresolved frames", wl, ref.Errors, ref.Unresolved)
				}
				if n := trapEndFrames(f, distinct); n > 0 {
					t.Logf("%s: %d CPU-sample stacks end one past their innermost function's pcsp table", wl, n)
				}
			}
		})
	}
}

// BenchmarkReplay replays the distinct stacks of the compress/flate trace
// (see TestStdTrace) with every workload and encoding. The side-by-side
// comparison, with its caches modelled per M and its interleaving, is
// "pctab-stats replay"; this benchmark times one encoding at a time.
func BenchmarkReplay(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: builds and runs the compress/flate tests once (then cached)")
	}
	w := stdTrace(b, runtime.GOARCH)
	f, err := objscan.Open(w.bin)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := NewModule(f)
	if err != nil {
		b.Fatal(err)
	}
	shims := allShims(b, m)
	tr := readCorpus(b, w.trace, func(f *os.File) (*stackinput.Corpus, error) { return stackinput.ReadTrace(f) })
	stacks, _ := shims[0].StacksFromCorpus(tr, 0)
	stacks = DistinctStacks(stacks)
	for _, wl := range Workloads() {
		for _, s := range shims {
			b.Run(fmt.Sprintf("workload=%s/enc=%s", wl, s.enc.Name), func(b *testing.B) {
				c := s.Replay(wl, stacks)
				b.ResetTimer()
				for range b.N {
					s.Replay(wl, stacks)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.Frames), "ns/frame")
				b.ReportMetric(float64(c.Lookups)/float64(c.Frames), "lookups/frame")
				if c.Hits+c.Misses > 0 {
					b.ReportMetric(100*c.HitRate(), "cache-hit-%")
				}
			})
		}
	}
}

// pastTable returns the PC one past the pcsp table of a function whose
// table ends before the next function starts.
func pastTable(f *objscan.File) (uint64, bool) {
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		t := f.Table(fn.PCSP)
		if t == nil || t.Len == 0 {
			continue
		}
		if pc := fn.Entry + uint64(t.Len)*uint64(f.PCQuantum); pc < fn.End {
			return pc, true
		}
	}
	return 0, false
}

// trapEndFrames counts the trapped stacks whose stored innermost PC is one
// past the end of its function's pcsp table: the case a replay that took
// it for a return PC would get wrong.
func trapEndFrames(f *objscan.File, stacks []Stack) uint64 {
	var n uint64
	for _, st := range stacks {
		if !st.Trap || len(st.PCs) == 0 {
			continue
		}
		pc := st.PCs[0]
		j := sort.Search(len(f.Funcs), func(j int) bool { return f.Funcs[j].End >= pc })
		if j == len(f.Funcs) || f.Funcs[j].Entry >= pc {
			continue
		}
		fn := &f.Funcs[j]
		if t := f.Table(fn.PCSP); t != nil && pc == fn.Entry+uint64(t.Len)*uint64(f.PCQuantum) {
			n++
		}
	}
	return n
}
