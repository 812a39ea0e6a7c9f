package tracestore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	xtrace "golang.org/x/exp/trace"
)

// TestSpillEverything builds stores of recorded traces with a memory limit
// so small that everything the builder spills does (the function and line
// indexes in many runs, the lane records in sorted runs, the spans in
// groups) and with one so large that nothing does, and finds the same
// files byte for byte, the manifest included.
func TestSpillEverything(t *testing.T) {
	longLanes, err := os.ReadFile(filepath.Join("testdata", "long-lanes.trace"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"recorded", smallTrace(t)}, {"long-lanes.trace", longLanes}} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(mem int64) (string, buildStats) {
				dir := t.TempDir()
				var st buildStats
				if _, err := buildInto(bytes.NewReader(tc.data), dir, MinPageSize, Options{MemLimit: mem, stats: &st}); err != nil {
					t.Fatal(err)
				}
				return dir, st
			}
			large, ls := build(1 << 30)
			if ls.funcRuns+ls.lineRuns != 0 || ls.laneRuns != 1 || ls.spanGroups != 1 || ls.laneIDPages != -1 {
				t.Fatalf("spilled at 1 GiB: %+v", ls)
			}
			defer func(g, i int64) { minGroupBytes, minIndexBytes = g, i }(minGroupBytes, minIndexBytes)
			minGroupBytes, minIndexBytes = spanBytes, 1
			// An eighth of the limit for each index: some 20 keys; a
			// quarter for a group: 40 spans; an eighth for a run of lane
			// records: 20; a sixteenth for the lanes' new numbers: two
			// pages of 1,024 lanes in a file.
			tiny, ts := build(8 * 20 * laneRecBytes)
			if ts.funcRuns < 3 || ts.lineRuns < 3 || ts.laneRuns < 3 || ts.spanGroups < 3 || ts.laneIDPages < 1 {
				t.Fatalf("a tiny limit spilled too little: %+v", ts)
			}
			t.Logf("tiny limit: %+v", ts)
			ents, err := os.ReadDir(large)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadDir(tiny); len(got) != len(ents) {
				t.Errorf("%d files spilled, %d not", len(got), len(ents))
			}
			for _, e := range ents {
				x, _ := os.ReadFile(filepath.Join(large, e.Name()))
				y, err := os.ReadFile(filepath.Join(tiny, e.Name()))
				if err != nil || !bytes.Equal(x, y) {
					t.Errorf("%s differs when everything spills (%d bytes, %d not): %v", e.Name(), len(y), len(x), err)
				}
			}
			if _, err := Open(tiny); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLaneIDs numbers lanes in a random order through a cache of two
// pages, and of 16, and in memory, and reads them back in another.
func TestLaneIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int64{0, 1, 1023, 1024, 1025, 20_000} {
		for _, mem := range []int64{1, 16 * 4 * idPageLanes, 1 << 30} {
			m, err := newLaneIDs(n, mem, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ids := r.Perm(int(n))
			for old, id := range ids {
				if err := m.set(uint32(old), uint32(id)); err != nil {
					t.Fatal(err)
				}
			}
			if n > 0 {
				if err := m.set(0, 5); err == nil {
					t.Errorf("%d lanes: lane 0 numbered twice, no error", n)
				}
			}
			for _, old := range r.Perm(int(n)) {
				id, err := m.get(uint32(old))
				if err != nil || id != uint32(ids[old]) {
					t.Fatalf("%d lanes, mem %d: lane %d: %d, %v; want %d", n, mem, old, id, err, ids[old])
				}
			}
			if _, err := m.get(uint32(n)); err == nil {
				t.Errorf("%d lanes: lane %d: no error", n, n)
			}
			if (m.f != nil) != (n*4 > mem) {
				t.Errorf("%d lanes, mem %d: file %v", n, mem, m.f != nil)
			}
			m.close()
		}
	}
	m, _ := newLaneIDs(10, 1, t.TempDir())
	defer m.close()
	if _, err := m.get(3); err == nil {
		t.Error("a lane not numbered: no error")
	}
}

// FuzzLaneIDs reads lane numbers back from an arbitrary file: a number or
// an error, never a panic.
func FuzzLaneIDs(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255}, uint16(3000), uint16(2))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, n, old uint16) {
		m, err := newLaneIDs(int64(n), 1, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer m.close()
		if m.f == nil {
			return
		}
		if _, err := m.f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			o := uint32(old) + uint32(k)*idPageLanes
			id, err := m.get(o)
			if err == nil && (int64(o) >= int64(n) || id == ^uint32(0)) {
				t.Fatalf("lane %d of %d: %d, no error", o, n, id)
			}
		}
	})
}

// TestBuildHeapBounded builds the store of a real trace, the HTTP server
// under load for 3 s, at the least memory limit and at a larger one, and
// measures the live heap (after a collection) every probeEvents events
// and at each step of the build's end. The builder's part, beyond what
// reading the trace alone holds at most (x/exp/trace's generation), stays
// within the limit plus some fixed buffers, where the trace's spans alone
// take several times that.
func TestBuildHeapBounded(t *testing.T) {
	testenv.SkipUnlessLong(t, "records a 3 s trace of an HTTP server")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srvCfg := testbuild.Config{Archive: "server"}
	bin := testbuild.Build(t, srvCfg)
	path := cachedTrace(t, "server-3s-"+filepath.Base(bin), func(p string) error {
		_, err := testbuild.Exec(ctx, srvCfg, bin, "-trace", p, "-duration", "3s")
		return err
	})
	live := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Reading alone.
	f := open()
	base := live()
	var reader int64
	r, err := xtrace.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		if _, err := r.ReadEvent(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if n%probeEvents == 0 {
			reader = max(reader, live()-base)
		}
	}
	f.Close()
	r = nil
	const fixed = 4 << 20 // file buffers, the page being built, the stacks, the sample of durations
	for _, mem := range []int64{MinMemLimit, 16 << 20} {
		f := open()
		base := live()
		var peak int64
		probes := 0
		var st buildStats
		dir := t.TempDir()
		// Pages of 1 KiB, for an index of many pages.
		m, err := buildInto(bufio.NewReader(f), dir, MinPageSize, Options{MemLimit: mem, stats: &st, probe: func() {
			peak = max(peak, live()-base)
			probes++
		}})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("-mem %d MiB: %d events, %d spans, %d lanes, %d pages: live heap at most %.1f MiB building (%d probes), %.1f MiB reading alone; %+v", mem>>20, m.Events, m.Spans, m.Lanes, m.Pages, float64(peak)/(1<<20), probes, float64(reader)/(1<<20), st)
		if ceiling := reader + mem + fixed; peak > ceiling {
			t.Errorf("-mem %d MiB: the build's live heap reached %d bytes, past %d (reading alone %d, the limit, %d fixed)", mem>>20, peak, ceiling, reader, fixed)
		}
		// What the builder would hold without the limit: its spans and
		// its indexes, at least.
		unbounded := m.Spans * spanBytes
		for _, s := range m.Files {
			if s.Name == fileFuncIdx || s.Name == fileLineIdx {
				unbounded += s.Bytes
			}
		}
		if mem == MinMemLimit && (unbounded < 2*(mem+fixed) || st.funcRuns < 2 || st.lineRuns < 2) {
			t.Errorf("%d bytes of spans and indexes, %d and %d runs of index keys: too few to tell a bounded build from one that holds them", unbounded, st.funcRuns, st.lineRuns)
		}
	}
}
