package stackcompress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync"
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// MemoryBudget bounds the bytes of pages, plus the dictionary, that the
	// reader holds in memory at any time. Least recently used pages are
	// evicted to stay within it. 0 means no bound. A budget smaller than the
	// dictionary plus the largest page is an error.
	MemoryBudget int64

	// NoMmap makes Open read pages with ReadAt even where it could map the
	// file.
	NoMmap bool

	// MaxDepth bounds the frames of a stack: Stack fails on a deeper one.
	// A chain of nodes costs a bit or two each in a packed page, so that a
	// file of some kilobytes can hold a stack of a million frames, 8 MB
	// of result: a reader that knows how deep its writer's stacks go
	// (an execution trace's are at most 128 frames) bounds what a
	// hostile file can make Stack allocate. 0 means no bound.
	MaxDepth int
}

// ReaderStats counts a Reader's page traffic.
type ReaderStats struct {
	Hits         uint64 `json:"hits"`                // page accesses that found the page loaded
	Loads        uint64 `json:"loads"`               // page loads, each verified against its checksum
	Evictions    uint64 `json:"evictions"`           // pages evicted to stay within the budget
	Resident     int64  `json:"resident_bytes"`      // bytes held now: loaded pages plus the dictionary
	PeakResident int64  `json:"peak_resident_bytes"` // the most bytes ever held
}

// A Reader reads stacks from a DAG file. Pages are loaded on first use,
// checked against their CRC-32C and validated node by node, and evicted
// least recently used first when a memory budget is set. A corrupt file
// yields an error, never a panic and never a wrong stack.
//
// A Reader is safe for concurrent use; its methods serialize.
type Reader struct {
	mu      sync.Mutex
	src     pageSource
	closer  io.Closer
	closed  bool
	mapped  bool
	size    int64
	shift   uint
	nodes   uint64
	layout  Layout
	dir     []dirEntry
	dict    []byte // dictionary entries, little-endian
	dictW   uint64 // dictionary entry width in bytes, 0 if none
	dictN   uint64
	budget  int64
	loaded  []page // loaded[i].data != nil if page i is loaded
	prev    []int32
	next    []int32
	head    int32 // most recently used loaded page, or -1
	tail    int32 // least recently used loaded page, or -1
	stats   ReaderStats
	minimum int64 // dictionary plus largest page
	depth   int   // ReaderOptions.MaxDepth
}

type dirEntry struct {
	off int64
	len int
	crc uint32
}

// pageSource supplies page bytes.
type pageSource interface {
	// load returns the n bytes at off, reusing spare if it is big enough.
	load(off int64, n int, spare []byte) ([]byte, error)
	// release tells the source that the bytes that load returned for off
	// are no longer used. It reports whether the caller may reuse them.
	release(off int64, data []byte) bool
}

// readerAtSource reads pages into buffers.
type readerAtSource struct{ r io.ReaderAt }

func (s readerAtSource) load(off int64, n int, spare []byte) ([]byte, error) {
	b := spare
	if cap(b) < n {
		b = make([]byte, n)
	}
	b = b[:n]
	if _, err := s.r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("stackcompress: reading %d bytes at offset %d: %w", n, off, err)
	}
	return b, nil
}

func (readerAtSource) release(int64, []byte) bool { return true }

// Open opens the DAG file at path. Where the platform allows, the file is
// memory-mapped and pages are used in place; evicting a page then tells the
// kernel that its memory is no longer needed. Elsewhere, or with
// opts.NoMmap, pages are read with ReadAt.
func Open(path string, opts ReaderOptions) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("stackcompress: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stackcompress: %w", err)
	}
	size := fi.Size()
	if !opts.NoMmap && size > 0 {
		if m, err := mmapFile(f, size); err == nil {
			f.Close()
			r, err := newReader(m, m, size, opts)
			if err != nil {
				m.Close()
				return nil, fmt.Errorf("%s: %w", path, err) // err says stackcompress
			}
			r.mapped = true
			return r, nil
		}
	}
	r, err := newReader(readerAtSource{f}, f, size, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err) // err says stackcompress
	}
	return r, nil
}

// NewReader returns a Reader for the size-byte DAG file that ra reads.
func NewReader(ra io.ReaderAt, size int64, opts ReaderOptions) (*Reader, error) {
	return newReader(readerAtSource{ra}, nil, size, opts)
}

func newReader(src pageSource, closer io.Closer, size int64, opts ReaderOptions) (*Reader, error) {
	if opts.MemoryBudget < 0 {
		return nil, fmt.Errorf("stackcompress: negative memory budget %d", opts.MemoryBudget)
	}
	if size < fileHeaderSize {
		return nil, corrupt(0, "file of %d bytes is shorter than the %d-byte header", size, fileHeaderSize)
	}
	h, err := src.load(0, fileHeaderSize, nil)
	if err != nil {
		return nil, err
	}
	h = append([]byte(nil), h...) // a mapping's bytes may be released
	if string(h[:8]) != fileMagic {
		return nil, corrupt(0, "bad magic %q", h[:8])
	}
	if got, want := binary.LittleEndian.Uint32(h[60:]), crc32.Checksum(h[:60], castagnoli); got != want {
		return nil, corrupt(60, "header checksum %#x, want %#x", got, want)
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != fileVersion {
		return nil, corrupt(8, "unsupported version %d", v)
	}
	if h[14] != 0 || h[15] != 0 || binary.LittleEndian.Uint32(h[52:]) != 0 || h[59] != 0 {
		return nil, corrupt(14, "reserved header bytes are not zero")
	}
	if opts.MaxDepth < 0 {
		return nil, fmt.Errorf("stackcompress: negative maximum depth %d", opts.MaxDepth)
	}
	r := &Reader{src: src, closer: closer, size: size, budget: opts.MemoryBudget, head: -1, tail: -1, depth: opts.MaxDepth}
	r.shift = uint(h[12])
	if r.shift > 24 {
		return nil, corrupt(12, "page size 1<<%d exceeds %d nodes", r.shift, MaxPageNodes)
	}
	r.nodes = binary.LittleEndian.Uint64(h[16:])
	npages := uint64(binary.LittleEndian.Uint32(h[24:]))
	if npages > 1<<31-1 {
		return nil, corrupt(24, "%d pages exceed the limit of 1<<31-1", npages)
	}
	if r.nodes == 0 {
		return nil, corrupt(16, "no nodes: even an empty DAG has its root")
	}
	if want := (r.nodes-1)>>r.shift + 1; npages != want {
		return nil, corrupt(24, "%d pages for %d nodes of 1<<%d per page, want %d", npages, r.nodes, r.shift, want)
	}
	r.layout = Layout{FrameBits: int(h[56]), Parents: ParentCoding(h[57]), Dictionary: h[58] == 1}
	if err := r.layout.validate(); err != nil || h[58] > 1 {
		return nil, corrupt(56, "bad layout bytes % x", h[56:59])
	}
	switch h[13] {
	case 0:
	case 32, 64:
		r.dictW = uint64(h[13]) / 8
	default:
		return nil, corrupt(13, "dictionary width %d is not 0, 32 or 64", h[13])
	}
	if (r.dictW != 0) != r.layout.Dictionary {
		return nil, corrupt(13, "dictionary width %d disagrees with the layout", h[13])
	}
	r.dictN = binary.LittleEndian.Uint64(h[32:])
	if r.dictW == 0 && r.dictN != 0 {
		return nil, corrupt(32, "%d dictionary entries without a dictionary", r.dictN)
	}
	dirEnd := fileHeaderSize + npages*dirEntrySize
	if dirEnd > uint64(size) {
		return nil, corrupt(24, "directory of %d pages runs past the end of the %d-byte file", npages, size)
	}
	if size > math.MaxInt {
		// Every part is then addressable with an int, even on 32-bit hosts.
		return nil, fmt.Errorf("stackcompress: file of %d bytes is too large for this host", size)
	}
	dictOff := binary.LittleEndian.Uint64(h[40:])
	if r.dictN > uint64(size) || dictOff != dirEnd {
		return nil, corrupt(40, "dictionary of %d entries at offset %d does not follow the directory at %d", r.dictN, dictOff, dirEnd)
	}
	dictLen := (r.dictN*r.dictW + 7) / 8 * 8
	if dictOff+dictLen > uint64(size) {
		return nil, corrupt(40, "dictionary of %d bytes at offset %d runs past the end of the %d-byte file", dictLen, dictOff, size)
	}
	if r.budget > 0 && int64(dictLen) > r.budget {
		return nil, fmt.Errorf("stackcompress: memory budget %d is smaller than the %d-byte dictionary", r.budget, dictLen)
	}
	dirBytes, err := src.load(fileHeaderSize, int(npages*dirEntrySize), nil)
	if err != nil {
		return nil, err
	}
	if got, want := crc32.Checksum(dirBytes, castagnoli), binary.LittleEndian.Uint32(h[28:]); got != want {
		return nil, corrupt(fileHeaderSize, "directory checksum %#x, want %#x", got, want)
	}
	r.dir = make([]dirEntry, npages)
	end := dictOff + dictLen
	maxPage := 0
	for i := range r.dir {
		e := dirBytes[i*dirEntrySize:]
		off := binary.LittleEndian.Uint64(e)
		n := uint64(binary.LittleEndian.Uint32(e[8:]))
		eoff := int64(fileHeaderSize + i*dirEntrySize)
		if off != end || n%8 != 0 || n > uint64(size)-off {
			return nil, corrupt(eoff, "page %d: %d bytes at offset %d do not follow the previous part at %d within the %d-byte file", i, n, off, end, size)
		}
		r.dir[i] = dirEntry{off: int64(off), len: int(n), crc: binary.LittleEndian.Uint32(e[12:])}
		end += n
		maxPage = max(maxPage, int(n))
	}
	src.release(fileHeaderSize, dirBytes)
	r.minimum = int64(dictLen) + int64(maxPage)
	if r.budget > 0 && int64(dictLen)+int64(maxPage) > r.budget {
		return nil, fmt.Errorf("stackcompress: memory budget %d is smaller than the dictionary (%d bytes) plus the largest page (%d bytes)", r.budget, dictLen, maxPage)
	}
	if dictLen > 0 {
		d, err := src.load(int64(dictOff), int(dictLen), nil)
		if err != nil {
			return nil, err
		}
		if got, want := crc32.Checksum(d, castagnoli), binary.LittleEndian.Uint32(h[48:]); got != want {
			return nil, corrupt(int64(dictOff), "dictionary checksum %#x, want %#x", got, want)
		}
		r.dict = d
		r.stats.Resident = int64(dictLen)
		r.stats.PeakResident = r.stats.Resident
	} else if binary.LittleEndian.Uint32(h[48:]) != 0 {
		return nil, corrupt(48, "checksum of an empty dictionary is not zero")
	}
	r.loaded = make([]page, npages)
	r.prev = make([]int32, npages)
	r.next = make([]int32, npages)
	return r, nil
}

// Nodes returns the number of nodes, the root included. Stack IDs are
// below it.
func (r *Reader) Nodes() uint64 { return r.nodes }

// PageNodes returns the number of nodes per page.
func (r *Reader) PageNodes() int { return 1 << r.shift }

// MinBudget returns the smallest memory budget the file allows: the
// dictionary plus the largest page.
func (r *Reader) MinBudget() int64 { return r.minimum }

// Mapped reports whether the reader uses a memory mapping of the file.
func (r *Reader) Mapped() bool { return r.mapped }

// Pages returns the number of pages.
func (r *Reader) Pages() int { return len(r.dir) }

// Layout returns the layout the file was written with, as its header
// records it.
func (r *Reader) Layout() Layout { return r.layout }

// Stats returns the reader's page counters.
func (r *Reader) Stats() ReaderStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// ErrClosed reports use of a closed Reader.
var ErrClosed = errors.New("stackcompress: reader is closed")

// Stack appends the frames of stack id to dst, leaf first, and returns the
// extended slice.
func (r *Reader) Stack(id uint64, dst []uint64) ([]uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return dst, ErrClosed
	}
	if id >= r.nodes {
		return dst, fmt.Errorf("stackcompress: stack ID %d is not a node (the DAG has %d)", id, r.nodes)
	}
	mask := uint64(1)<<r.shift - 1
	cur := ^uint64(0)
	var p *page
	start, leaf := len(dst), id
	for id != 0 {
		if r.depth > 0 && len(dst)-start == r.depth {
			return dst, corrupt(-1, "stack %d is deeper than the %d frames the reader allows", leaf, r.depth)
		}
		if pg := id >> r.shift; pg != cur {
			var err error
			if p, err = r.page(pg); err != nil {
				return dst, err
			}
			cur = pg
		}
		off := id & mask
		f, parent := p.frame(off), p.parent(off)
		// Pages are validated when loaded; these checks keep a walk finite
		// and in bounds even if a mapped file changes underneath.
		if parent >= id {
			return dst, corrupt(r.dir[cur].off, "node %d has parent %d, which is not below it", id, parent)
		}
		if r.dictW != 0 {
			if f >= r.dictN {
				return dst, corrupt(r.dir[cur].off, "node %d: frame index %d is outside the dictionary of %d", id, f, r.dictN)
			}
			if r.dictW == 4 {
				f = uint64(binary.LittleEndian.Uint32(r.dict[4*f:]))
			} else {
				f = binary.LittleEndian.Uint64(r.dict[8*f:])
			}
		}
		dst = append(dst, f)
		id = parent
	}
	return dst, nil
}

// page returns loaded page i, loading it and evicting others as needed.
func (r *Reader) page(i uint64) (*page, error) {
	p := &r.loaded[i]
	if p.data != nil {
		r.stats.Hits++
		r.unlink(int32(i))
		r.pushFront(int32(i))
		return p, nil
	}
	e := r.dir[i]
	var spare []byte
	for r.budget > 0 && r.stats.Resident+int64(e.len) > r.budget && r.tail >= 0 {
		t := r.tail
		r.unlink(t)
		old := r.loaded[t].data
		r.loaded[t] = page{}
		r.stats.Resident -= int64(len(old))
		r.stats.Evictions++
		if r.src.release(r.dir[t].off, old) && cap(old) > cap(spare) {
			spare = old
		}
	}
	data, err := r.src.load(e.off, e.len, spare)
	if err != nil {
		return nil, err
	}
	if got := crc32.Checksum(data, castagnoli); got != e.crc {
		r.src.release(e.off, data)
		return nil, corrupt(e.off, "page %d checksum %#x, want %#x", i, got, e.crc)
	}
	first := i << r.shift
	count := min(r.nodes-first, uint64(1)<<r.shift)
	np, err := parsePage(data, e.off, first, count, r.dictW != 0, r.dictN, true)
	if err != nil {
		r.src.release(e.off, data)
		return nil, err
	}
	*p = np
	r.pushFront(int32(i))
	r.stats.Loads++
	r.stats.Resident += int64(e.len)
	r.stats.PeakResident = max(r.stats.PeakResident, r.stats.Resident)
	return p, nil
}

func (r *Reader) unlink(i int32) {
	if r.prev[i] >= 0 {
		r.next[r.prev[i]] = r.next[i]
	} else {
		r.head = r.next[i]
	}
	if r.next[i] >= 0 {
		r.prev[r.next[i]] = r.prev[i]
	} else {
		r.tail = r.prev[i]
	}
}

func (r *Reader) pushFront(i int32) {
	r.prev[i] = -1
	r.next[i] = r.head
	if r.head >= 0 {
		r.prev[r.head] = i
	}
	r.head = i
	if r.tail < 0 {
		r.tail = i
	}
}

// Close releases the reader's file or mapping. Stack fails afterwards.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.loaded, r.dict = nil, nil
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}
