package tracestore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/exp/trace"
)

// TestLanesSpillWhileReading reads a real trace into a builder and checks
// that the lanes of the goroutines that exited left memory for the lane
// file as they exited: at the trace's end, most lanes are in the file,
// not live.
func TestLanesSpillWhileReading(t *testing.T) {
	data := smallTrace(t)
	dir := t.TempDir()
	b, err := newBuilder(dir, PageSize, DefaultMemLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer b.cleanup()
	b.mem = DefaultMemLimit
	tr, err := trace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := b.add(&ev); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d lanes: %d spilled, %d live", b.numLanes, b.lanesOut, len(b.live))
	if b.lanesOut == 0 || int64(len(b.live))+b.lanesOut != b.numLanes {
		t.Fatalf("%d lanes: %d spilled, %d live", b.numLanes, b.lanesOut, len(b.live))
	}
	if int64(len(b.live)) > b.numLanes/2 {
		t.Errorf("%d of %d lanes live at the trace's end", len(b.live), b.numLanes)
	}
}

// TestSortLanesRuns sorts lane records in one run and in many, merged
// from a file, and checks both against the order of laneCompare.
func TestSortLanesRuns(t *testing.T) {
	defer func(v int64) { minGroupBytes = v }(minGroupBytes)
	minGroupBytes = laneRecBytes
	const n = 1000
	var want []Lane
	var file []byte
	for i := range n {
		// Numbered in an order unlike the store's.
		l := Lane{Track: TrackKind(1 + i%3), ID: int64((i * 7919) % 211), Layer: Layer(i % 3), Depth: (i / 7) % 5, Spans: int64(i + 1)}
		var rec [laneRecBytes]byte
		putLaneRec(rec[:], uint32(i), l)
		file = append(file, rec[:]...)
		want = append(want, l)
	}
	for _, mem := range []int64{8 * n * laneRecBytes, 8 * 10 * laneRecBytes, 8 * 3 * laneRecBytes} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "lanes.tmp"))
		if err != nil {
			t.Fatal(err)
		}
		f.Write(file)
		b := &builder{dir: dir, mem: mem}
		var got []uint32
		var prev *laneRec
		err = b.sortLanes(f, n, func(num uint32, l Lane) error {
			if l != want[num] {
				t.Fatalf("mem %d: lane %d is %+v, want %+v", mem, num, l, want[num])
			}
			var rec laneRec
			putLaneRec(rec[:], num, l)
			if prev != nil && laneRecCompare(prev, &rec) >= 0 {
				t.Fatalf("mem %d: lane %d (%+v) out of order", mem, num, l)
			}
			prev = &rec
			got = append(got, num)
			return nil
		})
		f.Close()
		if err != nil || len(got) != n {
			t.Fatalf("mem %d: %d lanes, %v", mem, len(got), err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("mem %d: %d files left in the directory, want the lane file", mem, len(ents))
		}
	}
}

// TestWriteLanesHostile gives writeLanes lane and span files that
// disagree with the builder's counts (truncated, duplicated, out of
// range): an error that says so, never a panic or a store.
func TestWriteLanesHostile(t *testing.T) {
	rec := func(num uint32, l Lane) []byte {
		var r [laneRecBytes]byte
		putLaneRec(r[:], num, l)
		return r[:]
	}
	good := append(rec(1, Lane{Track: TrackGoroutine, ID: 2, Spans: 1}), rec(0, Lane{Track: TrackProc, ID: 1, Spans: 2})...)
	for _, tc := range []struct {
		name  string
		lanes []byte
		spans int64 // span records in the span file
	}{
		{"ok", good, 3},
		{"truncated lanes", good[:len(good)-5], 3},
		{"lane twice", append(rec(0, Lane{Track: TrackProc, ID: 1, Spans: 1}), rec(0, Lane{Track: TrackProc, ID: 2, Spans: 2})...), 3},
		{"lane out of range", append(rec(7, Lane{Track: TrackProc, ID: 1, Spans: 1}), rec(0, Lane{Track: TrackProc, ID: 2, Spans: 2})...), 3},
		{"too many spans", append(rec(1, Lane{Track: TrackProc, ID: 1, Spans: 1 << 60}), rec(0, Lane{Track: TrackProc, ID: 2, Spans: 2})...), 3},
		{"no spans", append(rec(1, Lane{Track: TrackProc, ID: 1, Spans: 0}), rec(0, Lane{Track: TrackProc, ID: 2, Spans: 3})...), 3},
		{"truncated spans", good, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := newBuilder(dir, PageSize, DefaultMemLimit)
			if err != nil {
				t.Fatal(err)
			}
			defer b.cleanup()
			b.mem = MinMemLimit
			b.laneW.Write(tc.lanes)
			b.numLanes, b.lanesOut = 2, 2
			b.numSpans, b.last = 3, 100
			for i := range tc.spans {
				var r [4 + spanBytes]byte
				lane := uint32(0)
				if i == 2 {
					lane = 1
				}
				binary.LittleEndian.PutUint32(r[:], lane)
				putSpan(r[4:], Span{Start: i * 10, Dur: 5})
				b.spanW.Write(r[:])
			}
			b.spanW.Flush()
			err = b.writeLanes()
			if tc.name == "ok" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "tracestore: reading back") {
				t.Fatalf("error %v, want one reading back", err)
			}
		})
	}
}

// FuzzWriteLanes gives writeLanes an arbitrary lane file, with a memory
// limit small enough that lanes sort in runs and spans gather in groups:
// an error or lanes, never a panic.
func FuzzWriteLanes(f *testing.F) {
	rec := func(num uint32, l Lane) []byte {
		var r [laneRecBytes]byte
		putLaneRec(r[:], num, l)
		return r[:]
	}
	var good []byte
	for i := range 6 {
		good = append(good, rec(uint32(5-i), Lane{Track: TrackGoroutine, ID: int64(i), Spans: 1})...)
	}
	f.Add(good, uint8(6))
	f.Add(good[:len(good)-1], uint8(6))
	f.Add(append(good, good...), uint8(12))
	f.Add(bytes.Repeat([]byte{0xff}, 6*laneRecBytes), uint8(6))
	f.Fuzz(func(t *testing.T, lanes []byte, n uint8) {
		defer func(v int64) { minGroupBytes = v }(minGroupBytes)
		minGroupBytes = laneRecBytes
		dir := t.TempDir()
		b, err := newBuilder(dir, PageSize, DefaultMemLimit)
		if err != nil {
			t.Fatal(err)
		}
		defer b.cleanup()
		b.mem = 8 * 2 * laneRecBytes // runs of two lanes; groups of one
		b.laneW.Write(lanes)
		b.numLanes, b.lanesOut = int64(n), int64(n)
		b.numSpans, b.last = 6, 100
		w := bufio.NewWriter(b.spanTmp)
		for i := range 6 {
			var r [4 + spanBytes]byte
			binary.LittleEndian.PutUint32(r[:], uint32(i))
			putSpan(r[4:], Span{Start: int64(i) * 10, Dur: 5})
			w.Write(r[:])
		}
		w.Flush()
		b.spanW.Reset(b.spanTmp)
		if err := b.writeLanes(); err != nil && !strings.Contains(err.Error(), "tracestore") {
			t.Fatalf("error without context: %v", err)
		}
	})
}
