package diskmap

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// NewSpillBuilder returns an empty Builder that holds about limit bytes of
// keys and pages in memory (at least one key's). Beyond it, the Builder
// writes what it holds to a temporary file in dir as a run, sorted by
// hash, and starts again empty; WriteTo and WriteChecked then merge the
// runs from the file through further temporary files, holding about limit
// bytes again, besides 8 bytes a bucket (a byte a key). The map they write
// is byte for byte the one NewBuilder's Builder writes for the same keys
// and pages. Close removes the file.
//
// An error writing the file makes the Builder drop what it holds; WriteTo
// and WriteChecked then return the error.
func NewSpillBuilder(dir string, limit int64) *Builder {
	return &Builder{pages: make(map[uint32][]uint32), spill: spill{dir: dir, limit: max(limit, 1)}}
}

// keyBytes is what a Builder counts for a key in memory, besides its
// pages: a map entry of a hash and a slice, with the map's slack.
const keyBytes = 64

// A spill is a spilling Builder's state.
//
// The runs file holds the runs one after the other. A run is records
// sorted by hash, distinct hashes, each its hash, its number of pages and
// the pages, sorted and distinct, all little-endian uint32s:
//
//	[hash][n][page 0] ... [page n-1]
type spill struct {
	dir    string
	limit  int64 // 0: no spilling
	held   int64 // bytes counted for the keys and pages in memory
	runs   *os.File
	runW   *bufio.Writer
	bounds []int64 // run k is bytes [bounds[k-1], bounds[k]) of runs (bounds[-1] = 0)
	err    error
}

// Close removes the Builder's temporary file. A Builder from NewBuilder
// has none.
func (b *Builder) Close() error {
	if b.runs == nil {
		return nil
	}
	name := b.runs.Name()
	err := b.runs.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	b.runs, b.runW, b.bounds = nil, nil, nil
	return err
}

// Spilled returns the number of runs the Builder has written to its
// temporary file.
func (b *Builder) Spilled() int { return len(b.bounds) }

// spillRun writes the keys and pages held as a run and drops them.
func (b *Builder) spillRun() {
	if b.err == nil {
		b.err = b.writeRun()
	}
	b.pages, b.held = make(map[uint32][]uint32), 0
}

func (b *Builder) writeRun() error {
	if len(b.pages) == 0 {
		return nil
	}
	if b.runs == nil {
		f, err := os.CreateTemp(b.dir, "diskmap-*.tmp")
		if err != nil {
			return fmt.Errorf("diskmap: %w", err)
		}
		b.runs, b.runW = f, bufio.NewWriterSize(f, 64<<10)
	}
	hs := make([]uint32, 0, len(b.pages))
	for h := range b.pages {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	end := int64(0)
	if len(b.bounds) > 0 {
		end = b.bounds[len(b.bounds)-1]
	}
	var rec [8]byte
	for _, h := range hs {
		p := b.pages[h]
		slices.Sort(p)
		p = slices.Compact(p)
		binary.LittleEndian.PutUint32(rec[:], h)
		binary.LittleEndian.PutUint32(rec[4:], uint32(len(p)))
		b.runW.Write(rec[:])
		for _, x := range p {
			binary.LittleEndian.PutUint32(rec[:], x)
			b.runW.Write(rec[:4])
		}
		end += 8 + 4*int64(len(p))
	}
	if err := b.runW.Flush(); err != nil {
		return fmt.Errorf("diskmap: writing a run: %w", err)
	}
	b.bounds = append(b.bounds, end)
	return nil
}

// ErrSpill is wrapped by the errors of a Builder whose temporary files do
// not read back as it wrote them (truncated or changed on disk).
var ErrSpill = errors.New("diskmap: spill file corrupt")

// A runReader reads the records of one run, in increasing order of key.
type runReader struct {
	r     *bufio.Reader
	name  string // for errors: which file and run
	off   int64  // offset of the next record in the run
	left  int64  // bytes of the run after off
	key   func(h uint32) uint64
	first bool
	h     uint32
	pages []uint32
	raw   []byte
}

func newRunReader(f io.ReaderAt, lo, hi int64, bufSize int, name string, key func(uint32) uint64) *runReader {
	return &runReader{r: bufio.NewReaderSize(io.NewSectionReader(f, lo, hi-lo), bufSize), name: name, left: hi - lo, key: key, first: true}
}

// next reads the run's next record into h and pages; false at the run's
// end.
func (c *runReader) next() (bool, error) {
	if c.left == 0 {
		return false, nil
	}
	fail := func(format string, args ...any) (bool, error) {
		return false, fmt.Errorf("%w: %s, offset %d: %s", ErrSpill, c.name, c.off, fmt.Sprintf(format, args...))
	}
	if c.left < 12 {
		return fail("%d bytes left, short of a record", c.left)
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return fail("%v", err)
	}
	h, n := binary.LittleEndian.Uint32(hdr[:]), binary.LittleEndian.Uint32(hdr[4:])
	if !c.first && c.key(h) <= c.key(c.h) {
		return fail("hash %#x after %#x, out of order", h, c.h)
	}
	if n == 0 || uint64(n) > uint64(c.left-8)/4 {
		return fail("%d pages in %d bytes", n, c.left-8)
	}
	if cap(c.raw) < int(4*n) {
		c.raw = make([]byte, 4*n)
	}
	c.raw = c.raw[:4*n]
	if _, err := io.ReadFull(c.r, c.raw); err != nil {
		return fail("%v", err)
	}
	c.pages = c.pages[:0]
	for i := range n {
		p := binary.LittleEndian.Uint32(c.raw[4*i:])
		if i > 0 && p <= c.pages[i-1] {
			return fail("page %d after %d, out of order", p, c.pages[i-1])
		}
		c.pages = append(c.pages, p)
	}
	c.first, c.h = false, h
	c.off += 8 + 4*int64(n)
	c.left -= 8 + 4*int64(n)
	return true, nil
}

// runHeap orders run readers by their current key, then by run.
type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	return h[i].key(h[i].h) < h[j].key(h[j].h)
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// A merger reads the runs of a file in increasing order of key, the
// pages of a key found in several runs united (sorted, distinct).
type merger struct {
	h   runHeap
	acc []uint32
}

// newMerger returns a merger of the runs of f that bounds delimits. Their
// readers share half of limit for their buffers.
func newMerger(f io.ReaderAt, bounds []int64, limit int64, what string, key func(uint32) uint64) (*merger, error) {
	bufSize := int(min(max(limit/2/int64(max(len(bounds), 1)), 256), 64<<10))
	m := &merger{h: make(runHeap, 0, len(bounds))}
	lo := int64(0)
	for k, hi := range bounds {
		if hi < lo {
			return nil, fmt.Errorf("%w: %s: run %d ends at %d, before it starts at %d", ErrSpill, what, k, hi, lo)
		}
		c := newRunReader(f, lo, hi, bufSize, fmt.Sprintf("%s run %d", what, k), key)
		lo = hi
		ok, err := c.next()
		if err != nil {
			return nil, err
		}
		if ok {
			m.h = append(m.h, c)
		}
	}
	heap.Init(&m.h)
	return m, nil
}

// next returns the next key and its pages, valid until the next call;
// ok is false at the end.
func (m *merger) next() (h uint32, pages []uint32, ok bool, err error) {
	if len(m.h) == 0 {
		return 0, nil, false, nil
	}
	h = m.h[0].h
	m.acc = m.acc[:0]
	n := 0
	for len(m.h) > 0 && m.h[0].h == h {
		c := m.h[0]
		m.acc = append(m.acc, c.pages...)
		n++
		more, err := c.next()
		if err != nil {
			return 0, nil, false, err
		}
		if more {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
	}
	if n > 1 {
		slices.Sort(m.acc)
		m.acc = slices.Compact(m.acc)
	}
	return h, m.acc, true, nil
}

// writeSpilled writes the map of a Builder that has spilled: the runs are
// merged by hash into a temporary file (counting the keys, and so the
// buckets), which is cut into runs in bucket order that fit the limit,
// and those are merged as emit writes the buckets.
func (b *Builder) writeSpilled(w io.Writer, checked bool) (int64, error) {
	if err := b.writeRun(); err != nil {
		b.err = err
		return 0, err
	}
	b.pages, b.held = make(map[uint32][]uint32), 0
	byHash := func(h uint32) uint64 { return uint64(h) }
	temp := func() (*os.File, *bufio.Writer, func(), error) {
		f, err := os.CreateTemp(b.dir, "diskmap-*.tmp")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("diskmap: %w", err)
		}
		return f, bufio.NewWriterSize(f, 64<<10), func() { f.Close(); os.Remove(f.Name()) }, nil
	}
	merged, mw, done, err := temp()
	if err != nil {
		return 0, err
	}
	defer done()
	var keys, size int64
	var rec [8]byte
	put := func(w *bufio.Writer, h uint32, pages []uint32) {
		binary.LittleEndian.PutUint32(rec[:], h)
		binary.LittleEndian.PutUint32(rec[4:], uint32(len(pages)))
		w.Write(rec[:])
		for _, x := range pages {
			binary.LittleEndian.PutUint32(rec[:], x)
			w.Write(rec[:4])
		}
	}
	m, err := newMerger(b.runs, b.bounds, b.limit, "diskmap runs", byHash)
	if err != nil {
		return 0, err
	}
	for {
		h, pages, ok, err := m.next()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		keys++
		if size += 8 + 4*int64(len(pages)); size >= 1<<32 {
			return 0, &SizeError{Size: size}
		}
		put(mw, h, pages)
	}
	m = nil
	if err := mw.Flush(); err != nil {
		return 0, fmt.Errorf("diskmap: writing merged runs: %w", err)
	}
	// size fits in 32 bits: keys < 2^29 and so does nb.
	nb := uint32(buckets(int(keys)))
	byBucket := func(h uint32) uint64 { return uint64(h%nb)<<32 | uint64(h) }
	sizes := make([]uint32, nb)
	// The merged records, cut into runs of the limit's half, each
	// sorted by bucket: an arena of records and their positions.
	sorted, sw, done2, err := temp()
	if err != nil {
		return 0, err
	}
	defer done2()
	type ent struct {
		key uint64
		off int
	}
	var arena []byte
	var ents []ent
	var bounds []int64
	var end int64
	cut := func() {
		slices.SortFunc(ents, func(x, y ent) int { return cmp.Compare(x.key, y.key) })
		for _, e := range ents {
			n := binary.LittleEndian.Uint32(arena[e.off+4:])
			sw.Write(arena[e.off : e.off+8+4*int(n)])
			end += 8 + 4*int64(n)
		}
		bounds = append(bounds, end)
		arena, ents = arena[:0], ents[:0]
	}
	if m, err = newMerger(merged, []int64{size}, b.limit, "diskmap merged runs", byHash); err != nil {
		return 0, err
	}
	for {
		h, pages, ok, err := m.next()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		if len(ents) > 0 && int64(len(arena))+int64(len(ents))*16+8+4*int64(len(pages)) > b.limit/2 {
			cut()
		}
		sizes[h%nb] += 8 + 4*uint32(len(pages))
		ents = append(ents, ent{key: byBucket(h), off: len(arena)})
		arena = binary.LittleEndian.AppendUint32(arena, h)
		arena = binary.LittleEndian.AppendUint32(arena, uint32(len(pages)))
		for _, x := range pages {
			arena = binary.LittleEndian.AppendUint32(arena, x)
		}
	}
	if len(bounds) == 0 {
		// One run: emitted from memory.
		slices.SortFunc(ents, func(x, y ent) int { return cmp.Compare(x.key, y.key) })
		k := 0
		var pages []uint32
		return emit(w, sizes, func() (uint32, []uint32, bool, error) {
			if k == len(ents) {
				return 0, nil, false, nil
			}
			e := ents[k]
			k++
			n := binary.LittleEndian.Uint32(arena[e.off+4:])
			pages = pages[:0]
			for i := range int(n) {
				pages = append(pages, binary.LittleEndian.Uint32(arena[e.off+8+4*i:]))
			}
			return binary.LittleEndian.Uint32(arena[e.off:]), pages, true, nil
		}, checked)
	}
	if len(ents) > 0 {
		cut()
	}
	arena, ents = nil, nil
	if err := sw.Flush(); err != nil {
		return 0, fmt.Errorf("diskmap: writing sorted runs: %w", err)
	}
	// The sorted runs, merged into the map as emit pulls them.
	if m, err = newMerger(sorted, bounds, b.limit, "diskmap sorted runs", byBucket); err != nil {
		return 0, err
	}
	return emit(w, sizes, m.next, checked)
}
