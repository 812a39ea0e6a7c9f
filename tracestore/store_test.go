package tracestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/pctab/pctab/internal/allocs"
	xtrace "golang.org/x/exp/trace"
)

//go:noinline
func spin(d time.Duration) int {
	n := 0
	for t := time.Now(); time.Since(t) < d; n++ {
	}
	return n
}

//go:noinline
func blockOn(ch chan int) int { return <-ch }

// workload runs goroutines that compute, block on channels, sleep, and
// mark user tasks and nested regions.
func workload() {
	ctx, task := trace.NewTask(context.Background(), "work")
	var wg sync.WaitGroup
	ch := make(chan int)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			trace.WithRegion(ctx, "outer", func() {
				trace.WithRegion(ctx, "inner", func() { spin(200 * time.Microsecond) })
				if i%2 == 0 {
					blockOn(ch)
				} else {
					ch <- i
				}
			})
			time.Sleep(time.Millisecond)
			trace.Log(ctx, "done", "ok")
		}()
	}
	wg.Wait()
	task.End()
}

func recordTrace(t testing.TB) []byte {
	return record(t, func() {
		for range 20 {
			workload()
		}
	})
}

// record returns the execution trace of run.
func record(t testing.TB, run func()) []byte {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	run()
	trace.Stop()
	return buf.Bytes()
}

// truthEvent is what a full scan of the trace with x/exp/trace says.
type truthEvent struct {
	time   int64
	kind   xtrace.EventKind
	frames []xtrace.StackFrame
}

func scanTrace(t testing.TB, data []byte) []truthEvent {
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []truthEvent
	var base int64
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			base = int64(ev.Time())
		}
		st := ev.Stack()
		if ev.Kind() == xtrace.EventStateTransition && st == xtrace.NoStack {
			st = ev.StateTransition().Stack
		}
		te := truthEvent{time: int64(ev.Time()) - base, kind: ev.Kind()}
		for f := range st.Frames() {
			te.frames = append(te.frames, f)
		}
		out = append(out, te)
	}
	return out
}

func build(t testing.TB, data []byte) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Build(bytes.NewReader(data), dir, Options{Source: "test", PageSize: MinPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if m.TraceBytes != int64(len(data)) {
		t.Errorf("manifest: %d trace bytes, read %d", m.TraceBytes, len(data))
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func TestEventsAgainstTrace(t *testing.T) {
	data := recordTrace(t)
	truth := scanTrace(t, data)
	s, _ := build(t, data)
	m := s.Manifest()
	if m.Events != uint64(len(truth)) {
		t.Fatalf("store has %d events, the trace %d", m.Events, len(truth))
	}
	// Every event, in order, with its time, kind and stack.
	i := 0
	err := s.Events(0, m.Duration+1, func(e *Event) bool {
		tr := truth[i]
		if e.Index != uint64(i) || e.Time != tr.time || e.Kind != tr.kind {
			t.Fatalf("event %d: %+v, trace has time %d kind %v", i, e, tr.time, tr.kind)
		}
		frames, err := s.Stack(e.Stack)
		if err != nil {
			t.Fatal(err)
		}
		if len(frames) != len(tr.frames) {
			t.Fatalf("event %d: %d frames, trace has %d", i, len(frames), len(tr.frames))
		}
		for k, f := range frames {
			w := tr.frames[k]
			if f.Func != w.Func || f.File != w.File || uint64(f.Line) != w.Line {
				t.Fatalf("event %d frame %d: %+v, trace has %+v", i, k, f, w)
			}
		}
		i++
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(truth) {
		t.Fatalf("visited %d events of %d", i, len(truth))
	}
	// Indexed queries equal a filtered scan, for several functions and
	// time ranges.
	for _, fn := range []string{"github.com/pctab/pctab/tracestore.blockOn", "runtime/trace.WithRegion", "time.Sleep", "github.com/pctab/pctab/tracestore.spin", "no.such.function"} {
		for _, r := range [][2]int64{{0, m.Duration + 1}, {m.Duration / 3, m.Duration / 2}} {
			var want []int64
			for _, e := range truth {
				if e.time >= r[0] && e.time < r[1] && slices.ContainsFunc(e.frames, func(f xtrace.StackFrame) bool { return f.Func == fn }) {
					want = append(want, e.time)
				}
			}
			var got []int64
			st, err := s.EventsThrough(fn, r[0], r[1], func(e *Event) bool { got = append(got, e.Time); return true })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s in %v: %d events, a scan finds %d", fn, r, len(got), len(want))
			}
			if st.PagesRead > m.Pages || (len(want) == 0 && st.PagesRead > 0 && fn == "no.such.function") {
				t.Errorf("%s: read %d pages of %d", fn, st.PagesRead, m.Pages)
			}
			t.Logf("%s in %v: %d events; %d pages indexed, %d read of %d", fn, r, len(got), st.IndexPages, st.PagesRead, m.Pages)
		}
	}
}

// TestLanesAgainstBruteForce checks every lane's aggregates over random
// ranges against a fold over its spans, and the spans against the trace's
// goroutine states.
func TestLanesAgainstBruteForce(t *testing.T) {
	s, _ := build(t, recordTrace(t))
	m := s.Manifest()
	if m.Lanes == 0 || m.Spans == 0 {
		t.Fatalf("%d lanes, %d spans", m.Lanes, m.Spans)
	}
	kinds := map[Layer]int{}
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		kinds[ln.Layer]++
		var spans []Span
		for i := range ln.Spans {
			sp := s.Span(l, i)
			if len(spans) > 0 && sp.Start < spans[len(spans)-1].End() {
				t.Fatalf("lane %d (%v %d %v %d): span %d %+v overlaps the previous %+v", l, ln.Track, ln.ID, ln.Layer, ln.Depth, i, sp, spans[len(spans)-1])
			}
			spans = append(spans, sp)
		}
		for q := range 50 {
			t0 := int64(q) * m.Duration / 50
			t1 := t0 + int64(q*q+1)*m.Duration/2500
			var want LaneAgg
			want.Longest = -1
			var longest int64 = -1
			for i, sp := range spans {
				if sp.End() <= t0 || sp.Start >= t1 || (sp.Dur == 0 && sp.Start < t0) {
					continue
				}
				if want.Count == 0 {
					want.First = int64(i)
				}
				want.Count++
				want.Busy += min(sp.End(), t1) - max(sp.Start, t0)
				if sp.Dur > longest {
					longest, want.Longest = sp.Dur, int64(i)
				}
			}
			got := s.Query(l, t0, t1)
			if want.Count == 0 {
				got.First = 0
			}
			if got != want {
				t.Fatalf("lane %d (%v %v, %d spans): Query(%d, %d) = %+v, a fold says %+v", l, ln.Track, ln.Layer, len(spans), t0, t1, got, want)
			}
		}
	}
	for _, layer := range []Layer{LayerState, LayerRegion, LayerTask} {
		if kinds[layer] == 0 {
			t.Errorf("no %v lanes", layer)
		}
	}
}

// TestManifestBitFlips flips bit 6 of each byte of manifest.json in turn (a
// letter becomes punctuation or a digit, a digit a letter): Open must refuse
// every one but those in the source's name, which nothing reads. Before, a
// flipped key ("4race_bytes", "#rc32c") was ignored as an unknown field, and
// a file renamed in the list went unnoticed until it was first read.
func TestManifestBitFlips(t *testing.T) {
	_, dir := build(t, recordTrace(t))
	path := filepath.Join(dir, fileManifest)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(`"source": "test"`)
	lo := bytes.Index(good, src) + len(`"source": "`)
	if lo < len(`"source": "`) {
		t.Fatalf("no %s in %s", src, good)
	}
	hi := lo + len("test")
	defer os.WriteFile(path, good, 0o666)
	accepted := 0
	for i := range good {
		b := slices.Clone(good)
		b[i] ^= 0x40
		if err := os.WriteFile(path, b, 0o666); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			continue
		}
		s.Close()
		if i < lo || i >= hi {
			t.Errorf("byte %d (%q in %q) flipped to %q: Open succeeded", i, good[i], good[max(0, i-16):min(len(good), i+16)], b[i])
		}
		accepted++
	}
	t.Logf("%d of %d flips accepted, all in the source's name", accepted, len(good))
}

func TestCorruptStore(t *testing.T) {
	_, dir := build(t, recordTrace(t))
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		name := ent.Name()
		path := filepath.Join(dir, name)
		good, _ := os.ReadFile(path)
		if len(good) == 0 {
			continue
		}
		for _, mut := range []struct {
			what string
			data []byte
		}{
			{"truncated", good[:len(good)/2]},
			{"a byte flipped", func() []byte { b := slices.Clone(good); b[len(b)/3] ^= 0x40; return b }()},
		} {
			if len(good) == 0 {
				continue
			}
			os.WriteFile(path, mut.data, 0o666)
			s, err := Open(dir)
			if err == nil {
				// The event log, the indexes and the timeline are
				// checked lazily.
				m := s.Manifest()
				_, qerr := s.EventsThrough("runtime/trace.WithRegion", 0, m.Duration+1, func(*Event) bool { return true })
				eerr := s.Events(0, m.Duration+1, func(*Event) bool { return true })
				exercise(s)
				verr := s.Verify()
				laneErrs := 0
				for l := range s.NumLanes() {
					if s.LaneError(l) != nil {
						laneErrs++
					}
				}
				s.Close()
				switch name {
				case fileSpans, fileBlocks, fileForest, fileAttrs, fileAttrIdx, fileCoarse:
					// The timeline is checked as it is read, and by Verify;
					// so are the coarse levels' sections (Open checks only
					// coarse.bin's directory, which a flipped byte at a
					// third of the file misses when the recording gave
					// the lanes long sections).
					if verr == nil {
						t.Errorf("%s %s: Verify succeeded", name, mut.what)
					}
				case fileLanes, fileLaneIdx:
					// So are the lanes' records, a group at a time.
					if verr == nil || laneErrs == 0 {
						t.Errorf("%s %s: Verify's error %v, %d lanes in error", name, mut.what, verr, laneErrs)
					}
				case fileEvents:
					if qerr == nil && eerr == nil {
						t.Errorf("%s %s: no error", name, mut.what)
					}
				case fileFuncIdx, fileLineIdx:
					// A corrupt index answers every page: no error.
				default:
					t.Errorf("%s %s: Open succeeded", name, mut.what)
				}
			}
			os.WriteFile(path, good, 0o666)
		}
	}
}

func FuzzPage(f *testing.F) {
	data := recordTrace(f)
	dir := filepath.Join(f.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		f.Fatal(err)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, fileEvents))
	idx, _ := os.ReadFile(filepath.Join(dir, filePages))
	end := len(ev)
	if len(idx) >= 2*pageIndexBytes {
		end = int(binary.LittleEndian.Uint64(idx[pageIndexBytes+24:]))
	}
	f.Add(ev[:end])
	f.Fuzz(func(t *testing.T, p []byte) {
		var evs []Event
		var err error
		// The least of three calls, each with a new codec: a goroutine
		// of another test, or the runtime's, may allocate during one.
		got := allocs.Least(3, func() {
			var c pageCodec
			evs, err = c.decodePage(nil, p, 0, 0, PageSize)
		})
		if err == nil && 2*len(evs) > PageSize {
			t.Fatalf("%d events from %d bytes", len(evs), len(p))
		}
		// The page's buffer (once) and its events, fewer than half its
		// record bytes, which are at most a page and at most maxInflation
		// times the page's own bytes.
		raw := min(uint64(PageSize), maxInflation*uint64(len(p)))
		if got > 2*raw+raw/2*uint64(unsafe.Sizeof(Event{}))*5/4+256<<10 {
			t.Fatalf("decoding a %d-byte page allocated %d bytes (%d events, err %v)", len(p), got, len(evs), err)
		}
	})
}

func FuzzBuild(f *testing.F) {
	data := recordTrace(f)
	f.Add(data[:min(len(data), 4096)])
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := filepath.Join(t.TempDir(), "store")
		if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
			return
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatalf("Build succeeded, Open failed: %v", err)
		}
		defer s.Close()
		m := s.Manifest()
		if err := s.Events(0, m.Duration+1, func(*Event) bool { return true }); err != nil {
			t.Fatal(err)
		}
	})
}

// TestQueryRow checks every pixel of rows of every lane against Query over
// the pixel's range.
func TestQueryRow(t *testing.T) {
	for name, data := range rowTraces(t) {
		t.Run(name, func(t *testing.T) { testQueryRow(t, data) })
	}
}

// rowTraces returns the traces the row tests check: one recorded now, and
// testdata/long-lanes.trace, recorded under qemu, whose goroutine lanes
// hold more than a block of spans each (the query forests' leaves were a
// quarter of a block, which a sweep that took them for blocks got wrong).
func rowTraces(t *testing.T) map[string][]byte {
	t.Helper()
	saved, err := os.ReadFile(filepath.Join("testdata", "long-lanes.trace"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"recorded": recordTrace(t), "long-lanes": saved}
}

func testQueryRow(t *testing.T, data []byte) {
	s, _ := build(t, data)
	d := s.Manifest().Duration
	for l := range s.NumLanes() {
		for _, v := range [][3]int64{{0, d + 1, 200}, {d / 4, d / 3, 97}, {d / 2, d/2 + 1000, 50}} {
			cells := make([]Cell, v[2])
			s.QueryRow(l, v[0], v[1], cells)
			w := v[1] - v[0]
			for p := range cells {
				a, b := v[0]+w*int64(p)/v[2], v[0]+w*int64(p+1)/v[2]
				q := s.Query(l, a, b)
				c := cells[p]
				if int64(c.Count) != min(q.Count, 65535) || c.Span != q.Longest {
					t.Fatalf("lane %d pixel %d [%d, %d): cell %+v, Query %+v", l, p, a, b, c, q)
				}
				if q.Longest >= 0 {
					sp := s.Span(l, q.Longest)
					if c.Kind != sp.Kind || c.Name != sp.Name {
						t.Fatalf("lane %d pixel %d: cell %+v, longest span %+v", l, p, c, sp)
					}
					if want := uint8(min(255, q.Busy*255/max(1, b-a))); c.Busy != want {
						t.Fatalf("lane %d pixel %d: busy %d, want %d", l, p, c.Busy, want)
					}
				} else if c.Kind != NoSpan {
					t.Fatalf("lane %d pixel %d: cell %+v for no span", l, p, c)
				}
			}
		}
	}
}

func TestMeasureTrace(t *testing.T) {
	data := recordTrace(t)
	s, err := MeasureTrace(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != int64(len(data)) || s.Header+s.Events+s.Stacks+s.Strings+s.CPUSamples+s.Sync+s.Experimental != s.Total {
		t.Errorf("%+v does not add up to %d bytes", s, len(data))
	}
	if s.Events == 0 || s.Stacks == 0 || s.Strings == 0 {
		t.Errorf("%+v: no events, stacks or strings", s)
	}
	for _, n := range []int{0, 10, 17, len(data) / 2} {
		if _, err := MeasureTrace(bytes.NewReader(data[:n])); err == nil && n < len(data)/2 {
			t.Errorf("a trace truncated to %d bytes measured without error", n)
		}
	}
}

func FuzzMeasureTrace(f *testing.F) {
	data := recordTrace(f)
	f.Add(data[:min(len(data), 2048)])
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := MeasureTrace(bytes.NewReader(b))
		if err == nil && s.Total != int64(len(b)) {
			t.Fatalf("measured %d of %d bytes", s.Total, len(b))
		}
	})
}

// FuzzStoreFiles replaces one file of a real store with arbitrary bytes and
// fixes the manifest's size and checksum for it, as a hostile writer could:
// Open must then reject the store or give one whose every query runs
// without panicking.
func FuzzStoreFiles(f *testing.F) {
	data := recordTrace(f)
	base := filepath.Join(f.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), base, Options{PageSize: MinPageSize}); err != nil {
		f.Fatal(err)
	}
	// New files go last: the seeds in testdata name files by number.
	names := []string{fileLanes, fileSpans, fileBlocks, fileForest, fileStrings, fileFrames, filePages, fileEvents, fileStacks, fileFuncIdx, fileLineIdx, fileAttrs, fileAttrIdx, fileLaneIdx}
	for i, n := range names {
		b, _ := os.ReadFile(filepath.Join(base, n))
		f.Add(uint8(i), b)
		if len(b) > 8 {
			c := slices.Clone(b)
			c[len(c)/2] ^= 0x80
			f.Add(uint8(i), c)
		}
	}
	man, _ := os.ReadFile(filepath.Join(base, fileManifest))
	// One copy of the store per process (each fuzzing worker runs this),
	// its changed file restored after each input: copying the store each
	// time was most of the fuzzer's time.
	dir := filepath.Join(f.TempDir(), "copy")
	os.Mkdir(dir, 0o777)
	for _, n := range append(names, fileManifest) {
		b, _ := os.ReadFile(filepath.Join(base, n))
		os.WriteFile(filepath.Join(dir, n), b, 0o666)
	}
	f.Fuzz(func(t *testing.T, which uint8, content []byte) {
		name := names[int(which)%len(names)]
		os.WriteFile(filepath.Join(dir, name), content, 0o666)
		defer func() {
			b, _ := os.ReadFile(filepath.Join(base, name))
			os.WriteFile(filepath.Join(dir, name), b, 0o666)
		}()
		var m Manifest
		if err := json.Unmarshal(man, &m); err != nil {
			t.Fatal(err)
		}
		for i := range m.Files {
			if m.Files[i].Name == name {
				m.Files[i].Bytes, m.Files[i].CRC32 = int64(len(content)), crc(content)
			}
		}
		mb, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fileManifest), mb, 0o666); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			return
		}
		defer s.Close()
		d := s.Manifest().Duration
		cells := make([]Cell, 37)
		for l := range s.NumLanes() {
			ln := s.Lane(l)
			s.Query(l, 0, d+1)
			s.Query(l, d/3, d/2)
			s.QueryRow(l, 0, d+1, cells)
			for i := range min(ln.Spans, 40) {
				sp := s.Span(l, i)
				s.String(sp.Name)
				s.Stack(uint64(sp.Stack))
			}
		}
		s.Events(0, d+1, func(e *Event) bool { s.Stack(e.Stack); return true })
		s.EventsThrough("runtime/trace.WithRegion", 0, d+1, func(*Event) bool { return true })
		s.EventsAtLine("x.go", 1, 0, d+1, func(*Event) bool { return true })
	})
}

// TestOpenRejectsUnorderedPageIndex checks that Open rejects a pages.idx
// whose time ranges are out of order, even with a manifest fixed to match:
// PagesIn binary-searches those ranges, so an unordered index would make
// queries silently miss events instead of failing.
func TestOpenRejectsUnorderedPageIndex(t *testing.T) {
	data := recordTrace(t)
	dir := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), dir, Options{PageSize: MinPageSize}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, filePages))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 48 {
		t.Fatalf("store has %d bytes of page index, want at least 2 pages", len(b))
	}
	// Swap the first two pages' records.
	c := slices.Clone(b)
	copy(c[:24], b[24:48])
	copy(c[24:48], b[:24])
	os.WriteFile(filepath.Join(dir, filePages), c, 0o666)
	man, _ := os.ReadFile(filepath.Join(dir, fileManifest))
	var m Manifest
	if err := json.Unmarshal(man, &m); err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		if m.Files[i].Name == filePages {
			m.Files[i].CRC32 = crc(c)
		}
	}
	if err := writeManifest(dir, &m); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(dir); err == nil {
		s.Close()
		t.Fatal("Open accepted a page index with pages out of time order")
	} else {
		t.Log(err)
	}
}

// TestOldSchema opens a store whose manifest says schema 3, the format
// before lanes.idx: Open refuses it and says to rebuild it.
func TestOldSchema(t *testing.T) {
	_, dir := build(t, recordTrace(t))
	editManifest(t, dir, func(m map[string]any) { m["schema_version"] = json.Number("3") })
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "schema_version 3") || !strings.Contains(err.Error(), "rebuild") {
		t.Errorf("Open of a schema-3 store: %v", err)
	}
}

// TestSpanStacks checks the spans' stacks, which come from spanattr.bin,
// against the event log's: a span's stack is that of an event at its
// start, or, for a state the trace found at its start (drawn from time
// 0), that of some event of the trace.
func TestSpanStacks(t *testing.T) {
	s, _ := build(t, recordTrace(t))
	checkSpanStacks(t, s)
}

// checkSpanStacks checks every span's stack in s against the stacks of
// the events of its event log.
func checkSpanStacks(t *testing.T, s *Store) {
	type timeStack struct {
		time  int64
		stack uint64
	}
	m := s.Manifest()
	at := map[timeStack]bool{} // the events' times and stacks
	all := map[uint64]bool{}   // the events' stacks
	evStacks := 0              // events with a stack
	if err := s.Events(0, m.Duration+1, func(e *Event) bool {
		at[timeStack{e.Time, e.Stack}] = true
		all[e.Stack] = true
		if e.Stack != 0 {
			evStacks++
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	withStack := 0
	for l := range s.NumLanes() {
		// The last row of a layer is shared by the regions nested deeper,
		// where each starts no earlier than the previous one ends: their
		// starts move.
		shared := s.Lane(l).Depth == maxRows-1
		for i := range s.Lane(l).Spans {
			sp := s.Span(l, i)
			if sp.Stack == 0 {
				continue
			}
			withStack++
			if !at[timeStack{sp.Start, uint64(sp.Stack)}] && ((sp.Start != 0 && !shared) || !all[uint64(sp.Stack)]) {
				t.Fatalf("lane %d span %d %+v: no event at %d has stack %d", l, i, sp, sp.Start, sp.Stack)
			}
		}
	}
	// Most spans are goroutine states, which begin at an event with a
	// stack, unless most events have none (cgo callbacks, whose syscall
	// states have none).
	if withStack < int(m.Spans/10) && uint64(evStacks) >= m.Events/4 {
		t.Errorf("%d of %d spans have a stack", withStack, m.Spans)
	}
}
