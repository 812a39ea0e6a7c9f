package tracestore

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
)

// A lane's record in the builder's lane file is its number (the order in
// which the build met it), its track, layer, depth, ID and span count,
// little-endian:
//
//	[number: 4][track: 1][layer: 1][depth: 2][ID: 8][spans: 8]
const laneRecBytes = 24

type laneRec [laneRecBytes]byte

func putLaneRec(b []byte, n uint32, l Lane) {
	binary.LittleEndian.PutUint32(b[0:], n)
	b[4], b[5] = byte(l.Track), byte(l.Layer)
	binary.LittleEndian.PutUint16(b[6:], uint16(l.Depth))
	binary.LittleEndian.PutUint64(b[8:], uint64(l.ID))
	binary.LittleEndian.PutUint64(b[16:], uint64(l.Spans))
}

func getLaneRec(b []byte) (uint32, Lane) {
	return binary.LittleEndian.Uint32(b[0:]), Lane{
		Track: TrackKind(b[4]),
		Layer: Layer(b[5]),
		Depth: int(binary.LittleEndian.Uint16(b[6:])),
		ID:    int64(binary.LittleEndian.Uint64(b[8:])),
		Spans: int64(binary.LittleEndian.Uint64(b[16:])),
	}
}

// laneRecCompare orders lane records as the store orders lanes
// (laneCompare), then by number, so that the order is total.
func laneRecCompare(x, y *laneRec) int {
	nx, lx := getLaneRec(x[:])
	ny, ly := getLaneRec(y[:])
	return cmp.Or(laneCompare(lx, ly), cmp.Compare(nx, ny))
}

// sortLanes calls yield with the n lane records of the file f, in the
// store's order. It sorts runs of records that fit an eighth of the
// memory limit (24 bytes a lane) and, if there is more than one run,
// writes them to a temporary file and merges them, reading each run
// through a buffer of its share of that eighth.
func (b *builder) sortLanes(f *os.File, n int64, yield func(num uint32, l Lane) error) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	per := max(b.mem/8, minGroupBytes) / laneRecBytes // records a run holds
	per = max(per, 2)
	r := bufio.NewReaderSize(f, 16<<10)
	run := make([]laneRec, 0, min(per, n))
	readRun := func(k int64) error {
		run = run[:k]
		for i := range run {
			if _, err := io.ReadFull(r, run[i][:]); err != nil {
				return fmt.Errorf("tracestore: reading back lanes: %w", err)
			}
		}
		slices.SortFunc(run, func(x, y laneRec) int { return laneRecCompare(&x, &y) })
		b.probeNow()
		return nil
	}
	if b.stats != nil {
		b.stats.laneRuns = int((n + per - 1) / per)
	}
	if n <= per {
		if err := readRun(n); err != nil {
			return err
		}
		for i := range run {
			if err := yield(getLaneRec(run[i][:])); err != nil {
				return err
			}
		}
		return nil
	}
	runs, err := os.CreateTemp(b.dir, "lanes-*.tmp")
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	defer os.Remove(runs.Name())
	defer runs.Close()
	w := bufio.NewWriterSize(runs, 16<<10)
	var bounds []int64 // run k is records [bounds[k], bounds[k+1])
	for at := int64(0); at < n; at += per {
		bounds = append(bounds, at)
		if err := readRun(min(per, n-at)); err != nil {
			return err
		}
		for i := range run {
			w.Write(run[i][:])
		}
	}
	bounds = append(bounds, n)
	run = nil
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: lanes: %w", errWrite, err)
	}
	k := len(bounds) - 1
	bufSize := int(min(max(b.mem/8/int64(k), 4<<10), 64<<10))
	h := make(laneHeap, 0, k)
	for i := range k {
		lo, hi := bounds[i]*laneRecBytes, bounds[i+1]*laneRecBytes
		c := &laneCursor{r: bufio.NewReaderSize(io.NewSectionReader(runs, lo, hi-lo), bufSize), left: bounds[i+1] - bounds[i]}
		if err := c.next(); err != nil {
			return err
		}
		h = append(h, c)
	}
	heap.Init(&h)
	for len(h) > 0 {
		c := h[0]
		if err := yield(getLaneRec(c.rec[:])); err != nil {
			return err
		}
		if c.left == 0 {
			heap.Pop(&h)
			continue
		}
		if err := c.next(); err != nil {
			return err
		}
		heap.Fix(&h, 0)
	}
	return nil
}

// A laneCursor reads one sorted run of lane records.
type laneCursor struct {
	r    *bufio.Reader
	left int64 // records after rec
	rec  laneRec
}

func (c *laneCursor) next() error {
	if _, err := io.ReadFull(c.r, c.rec[:]); err != nil {
		return fmt.Errorf("tracestore: reading back sorted lanes: %w", err)
	}
	c.left--
	return nil
}

type laneHeap []*laneCursor

func (h laneHeap) Len() int           { return len(h) }
func (h laneHeap) Less(i, j int) bool { return laneRecCompare(&h[i].rec, &h[j].rec) < 0 }
func (h laneHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *laneHeap) Push(x any)        { *h = append(*h, x.(*laneCursor)) }
func (h *laneHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
