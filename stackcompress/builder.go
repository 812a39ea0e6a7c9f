package stackcompress

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Options configure a Builder. The zero value selects LayoutPacked, pages
// of DefaultPageNodes nodes and the coherency cache.
type Options struct {
	// Layout is the page encoding. The zero Layout means LayoutPacked.
	Layout Layout

	// PageNodes is the number of nodes per page, a power of two from 1 to
	// MaxPageNodes; 0 means DefaultPageNodes.
	PageNodes int

	// NoCache disables the per-thread coherency cache, so that every frame
	// of every inserted stack costs a map lookup.
	NoCache bool

	// MaxThreads bounds the threads whose last stack the coherency cache
	// remembers; when a new thread would exceed it, the least recently
	// used half are forgotten. 0 means DefaultMaxThreads.
	MaxThreads int
}

// DefaultMaxThreads is the default bound on cached threads. Traces key
// stacks by goroutine, and a long trace sees many short-lived goroutines:
// 19,192 in the net/http test trace, whose caches would hold 89 B per DAG
// node if none were forgotten. With 256, the cache saves 63.6% of the
// lookups there instead of 64.3%, and the whole builder holds 15.9 B per
// node instead of 89.
const DefaultMaxThreads = 256

// Page size limits.
const (
	// DefaultPageNodes is 4096 nodes. Superluminal uses 65536; on the
	// net/http test trace, 4096-node pages make the bit-packed layouts 3 to
	// 23% smaller (a page's frame range is narrower) and give the reader's
	// memory budget a finer grain, while the byte-width layouts change by
	// less than 0.1%.
	DefaultPageNodes = 1 << 12
	// MaxPageNodes bounds the work and memory that one page can demand.
	MaxPageNodes = 1 << 24
)

const initialSlots = 256

// A Builder builds a stack DAG by inserting stacks one at a time.
//
// Every distinct (frame, parent) pair is one node; node 0 is the root and a
// stack's ID is the index of its leaf node. Nodes are appended to pages that
// are sealed into the Layout's encoding once full, so that while building
// the DAG costs its encoded size plus one open page. The node map that
// finds a (frame, parent) pair's node is an open-addressing table of node
// indices only: it reads the keys back from the pages, stays at most half
// full, and is rebuilt from the pages when it grows.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	enc    pageEncoding
	shift  uint
	mask   uint64
	pages  []page   // sealed pages
	open   []uint64 // the open page: frames in [0, P), parents in [P, 2P)
	nopen  uint64   // nodes in the open page
	n      uint64   // nodes, the root included
	nodes  slots    // node map
	dict   []uint64 // dictionary: index -> frame
	dslots slots    // dictionary map: frame -> index+1
	wideAt uint64   // values from which a map needs 64-bit slots
	hash   hasher   // the maps' keyed hash
	cache  bool     // coherency cache enabled
	caches map[uint64]*threadCache
	maxThr int            // bound on len(caches)
	clock  uint64         // Insert calls, for least-recently-used eviction
	spare  []*threadCache // evicted caches, for reuse
	stats  Stats
}

// threadCache remembers the last stack one thread inserted, root first,
// with the node of each frame.
type threadCache struct {
	entries []cacheEntry
	used    uint64 // clock of the last use
}

type cacheEntry struct{ frame, node uint64 }

// Stats counts a Builder's work.
type Stats struct {
	Stacks     uint64 // stacks inserted with Insert
	Frames     uint64 // frames in those stacks
	CacheHits  uint64 // frames the coherency cache resolved without a map lookup
	Lookups    uint64 // node map lookups (GetOrInsert calls)
	Probes     uint64 // node map slots inspected by those lookups
	Nodes      uint64 // nodes in the DAG, the root included
	Threads    uint64 // thread keys the coherency cache remembers now
	Forgotten  uint64 // threads the coherency cache forgot to stay within MaxThreads
	MapSlots   uint64 // current node map slots
	MapPeak    uint64 // largest node map, in bytes
	Rehashes   uint64 // node map rebuilds
	DictFrames uint64 // distinct frames in the dictionary
	DictPeak   uint64 // largest dictionary map, in bytes
	DictProbes uint64 // dictionary map slots inspected
	DictLooks  uint64 // dictionary map lookups
}

// MeanProbe returns the mean number of node map slots inspected per lookup.
func (s Stats) MeanProbe() float64 {
	if s.Lookups == 0 {
		return 0
	}
	return float64(s.Probes) / float64(s.Lookups)
}

// CacheSaved returns the share of the frames of inserted stacks for which
// the coherency cache saved a map lookup.
func (s Stats) CacheSaved() float64 {
	if s.Frames == 0 {
		return 0
	}
	return float64(s.CacheHits) / float64(s.Frames)
}

// NewBuilder returns a Builder holding only the root. It returns an error
// if the options are invalid.
func NewBuilder(opts Options) (*Builder, error) {
	l := opts.Layout
	if l == (Layout{}) {
		l = LayoutPacked()
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	pn := opts.PageNodes
	if pn == 0 {
		pn = DefaultPageNodes
	}
	if opts.MaxThreads < 0 {
		return nil, fmt.Errorf("stackcompress: negative MaxThreads %d", opts.MaxThreads)
	}
	if pn < 1 || pn > MaxPageNodes || pn&(pn-1) != 0 {
		return nil, fmt.Errorf("stackcompress: page size %d is not a power of two from 1 to %d", pn, MaxPageNodes)
	}
	shift := uint(bits.TrailingZeros(uint(pn)))
	b := &Builder{
		enc:    pageEncoding{layout: l, pageShift: shift},
		shift:  shift,
		mask:   uint64(pn) - 1,
		open:   make([]uint64, 2*pn),
		nodes:  newSlots(initialSlots, false),
		wideAt: 1 << 32,
		hash:   newHasher(),
		cache:  !opts.NoCache,
		caches: make(map[uint64]*threadCache),
		maxThr: opts.MaxThreads,
	}
	if b.maxThr == 0 {
		b.maxThr = DefaultMaxThreads
	}
	if l.Dictionary {
		b.dslots = newSlots(initialSlots, false)
	}
	b.stats.MapPeak = b.nodes.bytes()
	b.stats.DictPeak = b.dslots.bytes()
	b.appendNode(0, 0) // the root
	return b, nil
}

// Layout returns the builder's page layout.
func (b *Builder) Layout() Layout { return b.enc.layout }

// PageNodes returns the number of nodes per page.
func (b *Builder) PageNodes() int { return 1 << b.shift }

// Len returns the number of nodes, the root included.
func (b *Builder) Len() uint64 { return b.n }

// Stats returns the builder's counters.
func (b *Builder) Stats() Stats {
	s := b.stats
	s.Nodes = b.n
	s.Threads = uint64(len(b.caches))
	s.MapSlots = b.nodes.len()
	s.DictFrames = uint64(len(b.dict))
	return s
}

// MemBytes returns the bytes the builder holds in its own arrays: sealed
// pages, the open page, the node and dictionary maps, the dictionary and
// the coherency caches. It leaves out the Go map that finds a thread's
// cache (a few dozen bytes per thread).
func (b *Builder) MemBytes() uint64 {
	n := 8*uint64(len(b.open)) + b.nodes.bytes() + b.dslots.bytes() + 8*uint64(cap(b.dict))
	for i := range b.pages {
		n += uint64(len(b.pages[i].data))
	}
	for _, c := range b.caches {
		n += 16 * uint64(cap(c.entries))
	}
	for _, c := range b.spare {
		n += 16 * uint64(cap(c.entries))
	}
	return n
}

// ErrFrameRange reports a frame that does not fit the layout's frame width.
var ErrFrameRange = errors.New("stackcompress: frame does not fit the layout's frame width")

// GetOrInsert returns the index of the node holding frame under the node
// parentIndex, adding the node if it is new. It fails if parentIndex is
// not a node or if frame does not fit the layout's frame width.
func (b *Builder) GetOrInsert(frame, parentIndex uint64) (uint64, error) {
	if parentIndex >= b.n {
		return 0, fmt.Errorf("stackcompress: parent index %d is not a node (the DAG has %d)", parentIndex, b.n)
	}
	stored := frame
	if b.enc.layout.Dictionary {
		var err error
		if stored, err = b.intern(frame); err != nil {
			return 0, err
		}
	}
	if fb := b.enc.layout.FrameBits; fb != 0 && fb < 64 && stored>>fb != 0 {
		if b.enc.layout.Dictionary {
			return 0, fmt.Errorf("%w: dictionary index %d of frame %#x needs %d bits, the layout stores %d", ErrFrameRange, stored, frame, bitLen(stored), fb)
		}
		return 0, fmt.Errorf("%w: %#x needs %d bits, the layout stores %d", ErrFrameRange, frame, bitLen(frame), fb)
	}
	return b.getOrInsert(stored, parentIndex)
}

// getOrInsert is GetOrInsert for a stored frame and a valid parent.
func (b *Builder) getOrInsert(stored, parent uint64) (uint64, error) {
	b.stats.Lookups++
	h := b.hash.hash2(stored, parent)
	tag := b.nodes.tag(h)
	i := h & b.nodes.mask
	probes := uint64(1)
	for {
		e := b.nodes.get(i)
		if e == 0 {
			break
		}
		if e&^b.nodes.idxMask == tag {
			v := e & b.nodes.idxMask
			if f, p := b.key(v); f == stored && p == parent {
				b.stats.Probes += probes
				return v, nil
			}
		}
		i = (i + 1) & b.nodes.mask
		probes++
	}
	b.stats.Probes += probes
	v := b.n
	if v == ^uint64(0) {
		return 0, errors.New("stackcompress: the DAG is full")
	}
	if v*2 > b.nodes.len() || (v >= b.wideAt && b.nodes.s64 == nil) {
		// v entries after this one; keep the load factor at most 1/2.
		b.appendNode(stored, parent)
		b.rehashNodes()
		return v, nil
	}
	b.appendNode(stored, parent)
	b.nodes.set(i, v|tag)
	return v, nil
}

// key returns the stored frame and the parent of node v.
func (b *Builder) key(v uint64) (frame, parent uint64) {
	pg, off := v>>b.shift, v&b.mask
	if pg == uint64(len(b.pages)) {
		return b.open[off], b.open[b.mask+1+off]
	}
	p := &b.pages[pg]
	return p.frame(off), p.parent(off)
}

// appendNode adds a node to the open page, sealing it when full.
func (b *Builder) appendNode(stored, parent uint64) {
	pn := b.mask + 1
	b.open[b.nopen] = stored
	b.open[pn+b.nopen] = parent
	b.nopen++
	b.n++
	if b.nopen == pn {
		first := uint64(len(b.pages)) << b.shift
		data := b.enc.encode(first, b.open[:pn], b.open[pn:])
		p, err := parsePage(data, -1, first, pn, false, 0, false)
		if err != nil {
			panic("stackcompress: internal error: sealed page does not parse: " + err.Error())
		}
		b.pages = append(b.pages, p)
		b.nopen = 0
	}
}

// rehashNodes rebuilds the node map at a size that keeps its load factor
// at most 1/2, from the pages. The old table is dropped before the new one
// is filled, so the two never need to be live together.
func (b *Builder) rehashNodes() {
	entries := b.n - 1
	size := b.nodes.len()
	for entries*2 > size {
		size *= 2
	}
	wide := b.n-1 >= b.wideAt
	b.nodes = slots{}
	b.nodes = newSlots(size, wide)
	b.stats.Rehashes++
	b.stats.MapPeak = max(b.stats.MapPeak, b.nodes.bytes())
	for v := uint64(1); v < b.n; v++ {
		f, p := b.key(v)
		b.nodes.insertNew(b.hash.hash2(f, p), v)
	}
}

// intern returns the dictionary index of frame, adding it if new.
func (b *Builder) intern(frame uint64) (uint64, error) {
	b.stats.DictLooks++
	h := b.hash.hash1(frame)
	tag := b.dslots.tag(h)
	i := h & b.dslots.mask
	for {
		b.stats.DictProbes++
		e := b.dslots.get(i)
		if e == 0 {
			break
		}
		if e&^b.dslots.idxMask == tag {
			if v := e & b.dslots.idxMask; b.dict[v-1] == frame {
				return v - 1, nil
			}
		}
		i = (i + 1) & b.dslots.mask
	}
	id := uint64(len(b.dict))
	if id == ^uint64(0)-1 {
		return 0, errors.New("stackcompress: the dictionary is full")
	}
	b.dict = append(b.dict, frame)
	if (id+1)*2 > b.dslots.len() || (id+1 >= b.wideAt && b.dslots.s64 == nil) {
		size := b.dslots.len()
		for (id+1)*2 > size {
			size *= 2
		}
		b.dslots = slots{}
		b.dslots = newSlots(size, id+1 >= b.wideAt)
		b.stats.DictPeak = max(b.stats.DictPeak, b.dslots.bytes())
		for k, f := range b.dict {
			b.dslots.insertNew(b.hash.hash1(f), uint64(k)+1)
		}
		return id, nil
	}
	b.dslots.set(i, (id+1)|tag)
	return id, nil
}

// Insert adds a stack, given leaf first as runtime.Callers, execution traces
// and pprof order frames, and returns its ID. thread keys the coherency
// cache: the frames that the stack shares, from the root, with the last
// stack inserted for the same thread are resolved without map lookups.
// The empty stack has ID 0.
func (b *Builder) Insert(thread uint64, stack []uint64) (uint64, error) {
	b.stats.Stacks++
	b.stats.Frames += uint64(len(stack))
	var c *threadCache
	if b.cache {
		b.clock++
		c = b.caches[thread]
		if c == nil {
			c = b.newThreadCache()
			b.caches[thread] = c
		}
		c.used = b.clock
	}
	parent := uint64(0)
	j := 0 // frames matched, counted from the root
	if c != nil {
		n := min(len(stack), len(c.entries))
		for j < n && stack[len(stack)-1-j] == c.entries[j].frame {
			parent = c.entries[j].node
			j++
		}
		b.stats.CacheHits += uint64(j)
		c.entries = c.entries[:j]
	}
	for ; j < len(stack); j++ {
		f := stack[len(stack)-1-j]
		id, err := b.GetOrInsert(f, parent)
		if err != nil {
			return 0, fmt.Errorf("stackcompress: inserting frame %d from the leaf of a %d-frame stack: %w", len(stack)-1-j, len(stack), err)
		}
		if c != nil {
			c.entries = append(c.entries, cacheEntry{f, id})
		}
		parent = id
	}
	return parent, nil
}

// newThreadCache returns an empty cache for a new thread, first forgetting
// the least recently used half of the threads if the cache is full.
func (b *Builder) newThreadCache() *threadCache {
	if len(b.caches) >= b.maxThr {
		used := make([]uint64, 0, len(b.caches))
		for _, c := range b.caches {
			used = append(used, c.used)
		}
		slices.Sort(used)
		cut := used[len(used)/2] // forget threads used before the median
		for k, c := range b.caches {
			if c.used < cut || (b.maxThr == 1 && c.used <= cut) {
				delete(b.caches, k)
				c.entries = c.entries[:0]
				b.spare = append(b.spare, c)
				b.stats.Forgotten++
			}
		}
	}
	if n := len(b.spare); n > 0 {
		c := b.spare[n-1]
		b.spare = b.spare[:n-1]
		return c
	}
	return new(threadCache)
}

// Stack appends the frames of stack id to dst, leaf first, and returns the
// extended slice: exactly the frames that were inserted.
func (b *Builder) Stack(id uint64, dst []uint64) ([]uint64, error) {
	if id >= b.n {
		return dst, fmt.Errorf("stackcompress: stack ID %d is not a node (the DAG has %d)", id, b.n)
	}
	for id != 0 {
		f, p := b.key(id)
		if b.enc.layout.Dictionary {
			f = b.dict[f]
		}
		dst = append(dst, f)
		id = p
	}
	return dst, nil
}
