package stackreport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"testing"

	"github.com/pctab/pctab/internal/stackcapture"
	"github.com/pctab/pctab/stackcompress"
	"github.com/pctab/pctab/stackinput"
)

//go:noinline
func descend(n int, ch chan int) int {
	if n == 0 {
		return <-ch
	}
	return descend(n-1, ch) + 1
}

// inProcessCorpus traces goroutines that block at several depths.
func inProcessCorpus(t *testing.T) *stackinput.Corpus {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		ch := make(chan int)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				descend(g%7, ch)
			}
		}()
		for range 30 {
			ch <- g
		}
	}
	wg.Wait()
	trace.Stop()
	c, err := stackinput.ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkReport checks r against numbers computed independently from c.
func checkReport(t *testing.T, c *stackinput.Corpus, r *Report) {
	t.Helper()
	var frames uint64
	uniq := map[string]int{}
	for _, s := range c.Samples {
		var pcs []string
		for _, l := range c.Stack(s.Stack) {
			pcs = append(pcs, fmt.Sprint(c.Locations[l].PC))
		}
		frames += uint64(len(pcs))
		uniq[strings.Join(pcs, ",")] = len(pcs)
	}
	var dedup uint64
	for _, n := range uniq {
		dedup += 72 + 8*uint64(n+1)
	}
	if r.Stacks != uint64(len(c.Samples)) || r.Frames != frames || r.RawBytes != 8*frames ||
		r.UniqueStacks != uint64(len(uniq)) || r.DedupBytes != dedup {
		t.Errorf("report %d stacks, %d frames, %d raw, %d unique, %d dedup; want %d, %d, %d, %d, %d",
			r.Stacks, r.Frames, r.RawBytes, r.UniqueStacks, r.DedupBytes, len(c.Samples), frames, 8*frames, len(uniq), dedup)
	}
	if r.DedupBytesPerGeneration < r.DedupBytes {
		t.Errorf("per-generation dedup %d below whole-input dedup %d", r.DedupBytesPerGeneration, r.DedupBytes)
	}
	nodes := map[string]uint64{}
	for _, v := range r.Variants {
		if v.Verified != r.Stacks {
			t.Errorf("%s: %d of %d stacks verified", v.Name, v.Verified, r.Stacks)
		}
		if v.DAGBytes != v.PageBytes+v.DictBytes || v.Nodes == 0 || v.FileBytes <= v.DAGBytes {
			t.Errorf("%s: inconsistent sizes %+v", v.Name, v)
		}
		if v.Lookups+uint64(v.CacheSaved*float64(v.InsertFrames)+0.5) != v.InsertFrames {
			t.Errorf("%s: %d lookups and %.3f saved do not add up to %d frames", v.Name, v.Lookups, v.CacheSaved, v.InsertFrames)
		}
		if n, ok := nodes[v.Frames]; ok && n != v.Nodes {
			t.Errorf("%s: %d nodes, another %s variant has %d", v.Name, v.Nodes, v.Frames, n)
		}
		nodes[v.Frames] = v.Nodes
	}
	// PCs and text offsets correspond one to one. With one logical frame
	// per PC, as in traces, lines can only merge nodes.
	if nodes[FramesPC] != nodes[FramesText] || (r.LogicalFrames == r.Frames && nodes[FramesLine] > nodes[FramesPC]) {
		t.Errorf("nodes by frame kind: %v", nodes)
	}
}

func TestMeasureInProcess(t *testing.T) {
	c := inProcessCorpus(t)
	for _, key := range []string{KeyGoroutine, KeyThread, KeySingle, KeyOff} {
		r, err := Measure(c, Options{PageNodes: 64, CacheKey: key})
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, c, r)
		if len(r.Variants) != len(DefaultVariants()) {
			t.Fatalf("%d variants, want %d", len(r.Variants), len(DefaultVariants()))
		}
		if key == KeyOff && r.Variants[0].CacheSaved != 0 {
			t.Errorf("cache off but %.3f saved", r.Variants[0].CacheSaved)
		}
	}
	var buf bytes.Buffer
	r, _ := Measure(c, Options{})
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"full-stack dedup", "pc/f64-absolute", "text/f32-delta", "anchors"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
	if _, err := Measure(c, Options{CacheKey: "bogus"}); err == nil {
		t.Error("bogus cache key accepted")
	}
	if _, err := Measure(c, Options{Variants: []Variant{{"bogus", stackcompress.LayoutSeed()}}}); err == nil {
		t.Error("bogus frame kind accepted")
	}
	if _, err := Measure(c, Options{TextBase: 1 << 62}); err == nil {
		t.Error("text base above every PC accepted")
	}
}

// TestMeasureCapture runs the report on real captures: the execution trace
// and CPU profile of the compress/flate tests, plus the packages listed in
// $PCTAB_CAPTURE_PKGS (for example net/http), and checks that every stack
// round-trips, also through a file read back under a memory budget.
func TestMeasureCapture(t *testing.T) {
	pkgs := []string{"compress/flate"}
	if extra := os.Getenv("PCTAB_CAPTURE_PKGS"); extra != "" {
		pkgs = append(pkgs, strings.Fields(extra)...)
	}
	for _, pkg := range pkgs {
		t.Run(strings.ReplaceAll(pkg, "/", "_"), func(t *testing.T) {
			files, err := stackcapture.Std(context.Background(), pkg)
			if errors.Is(err, stackcapture.ErrCrossBuild) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []struct {
				path string
				read func(r interface{ Read([]byte) (int, error) }) (*stackinput.Corpus, error)
			}{
				{files.Trace, func(r interface{ Read([]byte) (int, error) }) (*stackinput.Corpus, error) {
					return stackinput.ReadTrace(r)
				}},
				{files.Profile, func(r interface{ Read([]byte) (int, error) }) (*stackinput.Corpus, error) {
					return stackinput.ReadPprof(r)
				}},
			} {
				f, err := os.Open(in.path)
				if err != nil {
					t.Fatal(err)
				}
				c, err := in.read(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Samples) == 0 {
					t.Fatalf("%s: no stacks", in.path)
				}
				r, err := Measure(c, Options{})
				if err != nil {
					t.Fatal(err)
				}
				checkReport(t, c, r)
				t.Logf("%s: %d stacks, %d frames, %d unique, dedup %d B; %s %.2f B/node",
					filepath.Base(in.path), r.Stacks, r.Frames, r.UniqueStacks, r.DedupBytes, r.Variants[4].Name, r.Variants[4].BytesPerNode)

				// Small pages and a budget of a few pages force evictions.
				path := filepath.Join(t.TempDir(), "dag")
				opts := Options{PageNodes: 256}
				probe, err := WriteFile(c, Variant{FramesPC, stackcompress.LayoutPacked()}, opts, path, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				budget := probe.MinBudget + (probe.Reader.PeakResident-probe.MinBudget)/4
				for _, noMmap := range []bool{false, true} {
					fr, err := WriteFile(c, Variant{FramesPC, stackcompress.LayoutPacked()}, opts, path, budget, noMmap)
					if err != nil {
						t.Fatal(err)
					}
					if fr.Verified != r.Stacks || fr.Reader.PeakResident > budget || (fr.Pages > 8 && fr.Reader.Evictions == 0) {
						t.Errorf("%s: file report %+v with budget %d", in.path, fr, budget)
					}
				}
			}
		})
	}
}

func TestPhysical(t *testing.T) {
	c := stackinput.NewCorpus("test")
	loc := func(pc uint64) stackinput.Location {
		return stackinput.Location{PC: pc, Lines: []stackinput.Line{{Func: "f", File: "f.go", Line: int64(pc)}}}
	}
	// Logical stacks a, b; physically, b's two inner frames are one frame.
	a := []stackinput.Location{loc(1), loc(2)}
	b := []stackinput.Location{loc(3), loc(4), loc(2)}
	c.Add(1, 1, 1, a)
	c.Add(1, 1, 1, b)
	c.Add(1, 1, 2, b)
	c.Add(1, 1, 2, b)
	c.Samples[3].CPU = true // stored logical: 3 PCs
	phys := [][]uint64{{1, 2}, {3, 2}, {3, 2}, {3, 2}}
	r, err := Measure(c, Options{Physical: phys})
	if err != nil {
		t.Fatal(err)
	}
	// Unique as stored: {1,2}, {3,2}, and the logical CPU sample {3,4,2}.
	wantDedup := TracerStackBytes(2) + TracerStackBytes(2) + TracerStackBytes(3)
	// Per generation: gen 1 holds {1,2} and {3,2}; gen 2 holds {3,2} and {3,4,2}.
	wantGen := 3*TracerStackBytes(2) + TracerStackBytes(3)
	if r.PhysicalFrames != 2+2+2+3 || r.UniquePhysicalStacks != 3 || r.DedupBytesPhysical != wantDedup || r.DedupBytesPhysicalPerGeneration != wantGen {
		t.Errorf("physical: %d frames, %d unique, %d B, %d B per generation; want 9, 3, %d, %d",
			r.PhysicalFrames, r.UniquePhysicalStacks, r.DedupBytesPhysical, r.DedupBytesPhysicalPerGeneration, wantDedup, wantGen)
	}
	if _, err := Measure(c, Options{Physical: phys[:2]}); err == nil {
		t.Error("Measure with too few physical stacks succeeded")
	}
}
