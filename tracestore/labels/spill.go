package labels

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
)

// The samples' temporary file holds runs, one after the other. A run is
// samples sorted by label, then time (equal times in the order read), each
// SampleBytes, little-endian:
//
//	[label: 4][stack: 4][time: 8][goroutine: 8]

// ErrSpill is wrapped by the errors of a build whose temporary file does
// not read back as it was written.
var ErrSpill = errors.New("labels: spill file corrupt")

// spill writes the samples held as a run and drops them.
func (b *builder) spill() error {
	if b.runs == nil {
		f, err := os.CreateTemp(b.opts.TempDir, "labels-*.tmp")
		if err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		b.runs, b.runW = f, bufio.NewWriterSize(f, 64<<10)
	}
	for len(b.spilled) < len(b.samples) {
		b.spilled = append(b.spilled, 0)
	}
	end := int64(0)
	if len(b.bounds) > 0 {
		end = b.bounds[len(b.bounds)-1]
	}
	var rec [SampleBytes]byte
	for l, ss := range b.samples {
		slices.SortStableFunc(ss, func(x, y Sample) int { return cmp.Compare(x.Time, y.Time) })
		for _, s := range ss {
			if uint64(s.Stack) > 1<<32-1 {
				return fmt.Errorf("labels: stack %d does not fit the index's 32-bit counts", s.Stack)
			}
			binary.LittleEndian.PutUint32(rec[0:], uint32(l))
			binary.LittleEndian.PutUint32(rec[4:], uint32(s.Stack))
			binary.LittleEndian.PutUint64(rec[8:], uint64(s.Time))
			binary.LittleEndian.PutUint64(rec[16:], uint64(s.Goroutine))
			b.runW.Write(rec[:])
		}
		end += SampleBytes * int64(len(ss))
		b.spilled[l] += int64(len(ss))
		b.samples[l] = ss[:0]
	}
	if err := b.runW.Flush(); err != nil {
		return fmt.Errorf("labels: writing samples: %w", err)
	}
	b.bounds = append(b.bounds, end)
	b.held = 0
	return nil
}

// close removes the temporary file.
func (b *builder) close() {
	if b.runs != nil {
		b.runs.Close()
		os.Remove(b.runs.Name())
		b.runs = nil
	}
}

// A sampleRun reads one run of the temporary file.
type sampleRun struct {
	r     *bufio.Reader
	k     int   // run number
	off   int64 // of the next record in the file
	left  int64 // records after the current
	label int
	s     Sample
}

func (c *sampleRun) next(labels, stacks int) (bool, error) {
	if c.left == 0 {
		return false, nil
	}
	var rec [SampleBytes]byte
	if _, err := io.ReadFull(c.r, rec[:]); err != nil {
		return false, fmt.Errorf("%w: run %d, offset %d: %v", ErrSpill, c.k, c.off, err)
	}
	l := binary.LittleEndian.Uint32(rec[0:])
	s := Sample{
		Stack:     int(binary.LittleEndian.Uint32(rec[4:])),
		Time:      int64(binary.LittleEndian.Uint64(rec[8:])),
		Goroutine: int64(binary.LittleEndian.Uint64(rec[16:])),
	}
	if uint64(l) >= uint64(labels) || uint64(s.Stack) >= uint64(stacks) {
		return false, fmt.Errorf("%w: run %d, offset %d: label %d of %d, stack %d of %d", ErrSpill, c.k, c.off, l, labels, s.Stack, stacks)
	}
	// What Read accepts, as the trace's samples are: a goroutine or -1,
	// a time within 2^62 ns of the base.
	if s.Goroutine < -1 || s.Goroutine >= 1<<62 || s.Time > 1<<62 {
		return false, fmt.Errorf("%w: run %d, offset %d: time %d or goroutine %d out of range", ErrSpill, c.k, c.off, s.Time, s.Goroutine)
	}
	// Runs are sorted by label, then time.
	if c.started() && (int(l) < c.label || int(l) == c.label && s.Time < c.s.Time) {
		return false, fmt.Errorf("%w: run %d, offset %d: label %d at %d after label %d at %d, out of order", ErrSpill, c.k, c.off, l, s.Time, c.label, c.s.Time)
	}
	c.label, c.s = int(l), s
	c.off += SampleBytes
	c.left--
	return true, nil
}

func (c *sampleRun) started() bool { return c.label >= 0 }

type sampleHeap []*sampleRun

func (h sampleHeap) Len() int { return len(h) }
func (h sampleHeap) Less(i, j int) bool {
	x, y := h[i], h[j]
	return cmp.Or(cmp.Compare(x.label, y.label), cmp.Compare(x.s.Time, y.s.Time), cmp.Compare(x.k, y.k)) < 0
}
func (h sampleHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sampleHeap) Push(x any)   { *h = append(*h, x.(*sampleRun)) }
func (h *sampleHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeRuns merges the runs into the index's samples section, label
// after label, by time, equal times in the order read. With w nil it
// returns the CRC-32C sum updated with the section's bytes; else it
// writes them to w. Each label must have the samples counted for it.
func (b *builder) mergeRuns(sum uint32, w io.Writer) (uint32, error) {
	h := make(sampleHeap, 0, len(b.bounds))
	bufSize := 4 << 10
	if b.opts.MemLimit > 0 {
		bufSize = int(min(max(b.opts.MemLimit/int64(max(len(b.bounds), 1)), 256), 64<<10))
	}
	lo := int64(0)
	for k, hi := range b.bounds {
		if hi < lo || (hi-lo)%SampleBytes != 0 {
			return 0, fmt.Errorf("%w: run %d: bytes [%d, %d)", ErrSpill, k, lo, hi)
		}
		c := &sampleRun{r: bufio.NewReaderSize(io.NewSectionReader(b.runs, lo, hi-lo), bufSize), k: k, off: lo, left: (hi - lo) / SampleBytes, label: -1}
		lo = hi
		ok, err := c.next(len(b.labels), len(b.stacks))
		if err != nil {
			return 0, err
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	var buf []byte
	flush := func() error {
		if w == nil {
			sum = crc32.Update(sum, castagnoli, buf)
		} else if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		buf = buf[:0]
		return nil
	}
	label, got := 0, int64(0)
	var prev int64
	// done checks that labels up to l have their counts.
	done := func(l int) error {
		for ; label < l; label, got, prev = label+1, 0, 0 {
			if got != b.spilled[label] {
				return fmt.Errorf("%w: label %d has %d samples, %d written", ErrSpill, label, got, b.spilled[label])
			}
		}
		return nil
	}
	for len(h) > 0 {
		c := h[0]
		if err := done(c.label); err != nil {
			return 0, err
		}
		buf = appendSample(buf, c.s, &prev)
		got++
		if len(buf) >= 64<<10 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
		ok, err := c.next(len(b.labels), len(b.stacks))
		if err != nil {
			return 0, err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	if err := done(len(b.labels)); err != nil {
		return 0, err
	}
	return sum, flush()
}
