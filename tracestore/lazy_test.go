package tracestore

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"testing"
)

// pingPongTrace records two goroutines passing a value back and forth
// 500 times: lanes of some 1,500 spans each.
func pingPongTrace(t *testing.T) []byte {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	for i := range 500 {
		ping <- i
		<-pong
	}
	close(ping)
	<-pong
	trace.Stop()
	return buf.Bytes()
}

// TestLazyCorruption corrupts one block of the lane with the most spans
// (its bytes in spans.bin, or its leaf in forest.bin), in a store that
// Open accepts since it checks only the metadata: the first query that
// reads the block finds it, the lane answers as if it had no spans from
// then on and LaneError says what and where, other lanes answer as
// before, and Verify fails.
func TestLazyCorruption(t *testing.T) {
	data := pingPongTrace(t)
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), base, Options{PageSize: MinPageSize}); err != nil {
		t.Fatal(err)
	}
	good, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	big := 0
	for l := range good.NumLanes() {
		ln := good.Lane(l)
		if ln.Spans > good.Lane(big).Spans {
			big = l
		}
	}
	ln := good.Lane(big)
	if ln.Spans < 3*BlockSpans {
		t.Fatalf("the largest lane has %d spans", ln.Spans)
	}
	k := blocks(ln.Spans) / 2 // a whole block in the middle
	d := good.Manifest().Duration
	want := make([][]Cell, good.NumLanes())
	for l := range want {
		want[l] = make([]Cell, 64)
		good.QueryRow(l, 0, d+1, want[l])
	}
	for _, c := range []struct {
		name, file, says string
		edit             func(b []byte)
	}{
		{"block bytes", fileSpans, fileSpans, func(b []byte) {
			lo, _, _ := good.blockAt(ln.blockOff + k)
			b[lo] = 0xff // a varint that does not end
		}},
		{"forest leaf", fileForest, fileForest, func(b []byte) {
			o := (ln.forestOff + 2*k) * int64(good.w.aggBytes())
			a := good.w.getAgg(b[o:])
			a.Busy++
			good.w.putAgg(b[o:], a)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openEdited(t, base, c.file, c.edit)
			if err := s.LaneError(big); err != nil {
				t.Fatalf("LaneError before any query: %v", err)
			}
			// A row that begins inside the block decodes it (a row
			// whose pixel boundaries all fall in other blocks would
			// take it whole from the forest, unread).
			_, _, start := good.blockAt(ln.blockOff + k)
			cells := make([]Cell, 64)
			s.QueryRow(big, start+1, d+1, cells)
			for p, c := range cells {
				if c.Kind != NoSpan || c.Count != 0 || c.Span != -1 {
					t.Fatalf("pixel %d of the corrupt lane: %+v", p, c)
				}
			}
			err = s.LaneError(big)
			if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "offset") {
				t.Fatalf("LaneError = %v, want an error naming %s and the offset", err, c.says)
			}
			if a := s.Query(big, 0, d+1); a.Count != 0 || a.Longest != -1 {
				t.Errorf("Query of the corrupt lane: %+v", a)
			}
			if s.HasSpans(big, 0, d+1) {
				t.Error("HasSpans of the corrupt lane")
			}
			if sp := s.Span(big, k*BlockSpans); sp.Kind != NoSpan {
				t.Errorf("Span in the corrupt block: %+v", sp)
			}
			got := make([]Cell, 64)
			for l := range s.NumLanes() {
				if l == big {
					continue
				}
				s.QueryRow(l, 0, d+1, got)
				for p := range got {
					if got[p] != want[l][p] {
						t.Fatalf("lane %d, pixel %d: %+v, before the corruption %+v", l, p, got[p], want[l][p])
					}
				}
				if err := s.LaneError(l); err != nil {
					t.Fatalf("lane %d: %v", l, err)
				}
			}
			if err := s.Verify(); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Verify = %v, want an error naming %s", err, c.says)
			}
		})
	}
}

// TestKindChunk fills kind chunks with few and with many distinct values:
// each gives back every value.
func TestKindChunk(t *testing.T) {
	for _, distinct := range []int{1, 7, 18, 19, 4096} { // times 7 kinds and 2, or 1
		if distinct == 1 {
			c := &kindChunk{idx: make([]byte, 10)}
			for j := range 10 {
				c.set(j, 42)
			}
			if c.pack(); c.bits != 0 || c.at(9) != 42 {
				t.Errorf("one value: %d bits, %d", c.bits, c.at(9))
			}
		}
		c := &kindChunk{idx: make([]byte, AttrChunk)}
		want := make([]kindName, AttrChunk)
		for j := range want {
			// Names past 2^24 too.
			want[j] = packKindName(SpanKind(j%7), uint32((j/3)%distinct)<<4|uint32(j%2)<<31)
			c.set(j, want[j])
		}
		c.pack()
		for j, v := range want {
			if got := c.at(int64(j)); got != v {
				t.Fatalf("%d distinct values: span %d: %#x, want %#x", distinct, j, got, v)
			}
		}
		if n := distinct * 7 * 2; (c.all == nil) != (n <= 256) {
			t.Errorf("%d distinct values: dictionary %v", n, c.all == nil)
		}
	}
}

// TestLazyLaneCorruption corrupts the records of one group of lanes in
// lanes.tab (a byte of a record), or the group's record in lanes.idx
// (its checksum), in a store that Open accepts since it reads neither:
// the group's lanes answer as if they had no spans and LaneError says
// what and where, the other groups' lanes answer as before, and Verify
// fails.
func TestLazyLaneCorruption(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), base, Options{PageSize: MinPageSize}); err != nil {
		t.Fatal(err)
	}
	good, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	nl := good.NumLanes()
	if nl <= LaneGroup {
		t.Fatalf("%d lanes: one group", nl)
	}
	g := int64(nl/LaneGroup) / 2 // a group in the middle
	d := good.Manifest().Duration
	want := make([][]Cell, nl)
	for l := range want {
		want[l] = make([]Cell, 64)
		good.QueryRow(l, 0, d+1, want[l])
	}
	e := getLaneIdx(good.laneIdx[g*laneIdxBytes:])
	for _, c := range []struct {
		name, file, says string
		edit             func(b []byte)
	}{
		{"record bytes", fileLanes, fileLanes, func(b []byte) { b[e.off+3] ^= 0x10 }},
		{"group checksum", fileLaneIdx, "checksum", func(b []byte) { b[g*laneIdxBytes+32]++ }},
		{"group's first span", fileLaneIdx, "do not fit", func(b []byte) { b[g*laneIdxBytes+8]++ }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openEdited(t, base, c.file, c.edit)
			got := make([]Cell, 64)
			for l := range nl {
				s.QueryRow(l, 0, d+1, got)
				lerr := s.LaneError(l)
				if int64(l)/LaneGroup == g || c.name == "group's first span" && int64(l)/LaneGroup == g-1 {
					// The group (and, for its first span, the group
					// before, which ends where it begins) is empty.
					if ln := s.Lane(l); ln.Spans != 0 || s.HasSpans(l, 0, d+1) || s.Query(l, 0, d+1).Count != 0 {
						t.Fatalf("lane %d of the corrupt group: %+v", l, ln)
					}
					for p := range got {
						if got[p].Kind != NoSpan || got[p].Span != -1 {
							t.Fatalf("lane %d of the corrupt group, pixel %d: %+v", l, p, got[p])
						}
					}
					if lerr == nil || !strings.Contains(lerr.Error(), fileLanes) || !strings.Contains(lerr.Error(), "offset") {
						t.Fatalf("lane %d: LaneError = %v, want an error naming %s and the offset", l, lerr, fileLanes)
					}
					continue
				}
				if lerr != nil {
					t.Fatalf("lane %d: %v", l, lerr)
				}
				if s.Lane(l) != good.Lane(l) {
					t.Fatalf("lane %d: %+v, before the corruption %+v", l, s.Lane(l), good.Lane(l))
				}
				for p := range got {
					if got[p] != want[l][p] {
						t.Fatalf("lane %d, pixel %d: %+v, before the corruption %+v", l, p, got[p], want[l][p])
					}
				}
			}
			if err := s.Verify(); err == nil {
				t.Error("Verify succeeded")
			}
		})
	}
}

// FuzzLaneIndex decodes arbitrary lanes.tab and lanes.idx bytes as Open
// and the lazy lane checks do, for an arbitrary number of lanes and
// spans, blocks and forest values in the files they index: no group may
// panic, and every lane of a group that passes must lie inside them.
func FuzzLaneIndex(f *testing.F) {
	base := filepath.Join(f.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(f)), base, Options{PageSize: MinPageSize}); err != nil {
		f.Fatal(err)
	}
	s, err := Open(base)
	if err != nil {
		f.Fatal(err)
	}
	tab, _ := os.ReadFile(filepath.Join(base, fileLanes))
	idx, _ := os.ReadFile(filepath.Join(base, fileLaneIdx))
	f.Add(tab, idx, uint32(s.m.Lanes), s.m.Spans, s.nblocks, s.nvals)
	f.Add(tab[:len(tab)/2], idx, uint32(s.m.Lanes), s.m.Spans, s.nblocks, s.nvals)
	f.Add(tab, idx[:len(idx)-laneIdxBytes], uint32(s.m.Lanes-LaneGroup), s.m.Spans, s.nblocks, s.nvals)
	f.Add(tab, idx, uint32(s.m.Lanes), s.m.Spans+1, s.nblocks+1, s.nvals)
	s.Close()
	f.Fuzz(func(t *testing.T, tab, idx []byte, lanes uint32, spans, nblocks, nvals int64) {
		s := &Store{laneTab: tab, laneIdx: idx, nblocks: nblocks, nvals: nvals}
		s.m.Lanes, s.m.Spans = int(lanes), spans
		// Open's checks of the counts (see open): the spans fit in
		// spans.bin, the blocks and forest values in their files.
		groups := (int64(s.m.Lanes) + LaneGroup - 1) / LaneGroup
		if spans < 0 || nblocks < 0 || nvals < 0 || int64(s.m.Lanes) > int64(len(tab))/5 ||
			int64(len(idx))%laneIdxBytes != 0 || int64(len(idx))/laneIdxBytes != groups {
			return
		}
		for g := range groups {
			grp := s.decodeLaneGroup(g)
			if grp.err != nil {
				if !strings.Contains(grp.err.Error(), "offset") {
					t.Fatalf("group %d: error without the offset: %v", g, grp.err)
				}
				continue
			}
			if int64(len(grp.lanes)) != min(LaneGroup, int64(s.m.Lanes)-g*LaneGroup) {
				t.Fatalf("group %d: %d lanes", g, len(grp.lanes))
			}
			for _, l := range grp.lanes {
				if l.Spans < 0 || l.firstSpan < 0 || l.blockOff < 0 || l.forestOff < 0 ||
					l.Spans > spans-l.firstSpan || blocks(l.Spans) > nblocks-l.blockOff || forestValues(l.Spans) > nvals-l.forestOff {
					t.Fatalf("group %d: lane %+v outside %d spans, %d blocks and %d forest values", g, l, spans, nblocks, nvals)
				}
			}
		}
		for l := range s.m.Lanes {
			ln := s.lane(l)
			if (ln == &noLane) != (s.LaneError(l) != nil) {
				t.Fatalf("lane %d: %+v, LaneError %v", l, *ln, s.LaneError(l))
			}
		}
		s.eachLane(func(int, *Lane, int64) error { return nil })
	})
}

// openEdited opens a copy of the store in base whose file name edit has
// changed in place, failing the test if Open refuses it.
func openEdited(t *testing.T, base, name string, edit func([]byte)) *Store {
	t.Helper()
	dir := copyStore(t, base)
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	edit(b)
	replaceFile(t, dir, name, b)
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
