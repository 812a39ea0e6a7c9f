package tracestore

import (
	"bytes"
	"fmt"
	"math/bits"
	"sort"
	"sync"

	"github.com/pctab/pctab/forest"
)

// Verify checks the whole store, as Build does before it renames a store
// into place: every file against its size and CRC-32C, every block of
// spans and every forest value against the spans, every chunk of span
// attributes. It reads every byte of the timeline, in memory that grows
// with the largest lane's blocks (its forest, 48 bytes a block), not with
// the store's spans. A store that passes gives the answers it was
// built with; Open alone checks only the metadata (see Open).
func (s *Store) Verify() error {
	var err error
	if gerr := s.Guard(func() { err = s.verify() }); gerr != nil {
		err = gerr
	}
	return err
}

func (s *Store) verify() error {
	// The files are read once: their pages are dropped from the
	// process's resident set every dropBytes read (the kernel keeps them
	// cached), so that Build's check costs no RSS in proportion to the
	// store.
	names := []string{fileLanes, fileLaneIdx, fileSpans, fileBlocks, fileForest, fileAttrs, fileAttrIdx}
	if s.coarse != nil {
		names = append(names, fileCoarse)
	}
	for _, name := range names {
		b, err := s.mapped(name)
		if err != nil {
			return err
		}
		h := crc32New()
		for o := 0; o < len(b); o += dropBytes {
			h.Write(b[o:min(o+dropBytes, len(b))])
			dropPages(b[o:min(o+dropBytes, len(b))])
		}
		if h.Sum32() != s.sums[name].CRC32 {
			return fmt.Errorf("tracestore: %s: checksum mismatch", name)
		}
	}
	ab := int64(s.w.aggBytes())
	var blk []Span
	var read int64 // spans.bin's bytes read since the pages were dropped
	var enc coarseEncoder
	err := s.eachLane(func(i int, l *Lane, _ int64) error {
		f := forest.New(combine, noAgg)
		// A lane's coarse levels must be the ones its spans make.
		c := s.coarse.find(i)
		if c != nil {
			_, _, first := s.blockAt(l.blockOff)
			enc.reset(first, uint(c.lo), int(c.levels), s.m.TimeQuantum)
		}
		for k := range blocks(l.Spans) {
			var err error
			if blk, err = s.checkBlock(i, l, k, blk[:0]); err != nil {
				return err
			}
			if c != nil {
				for _, sp := range blk {
					enc.add(sp)
				}
			}
			if len(blk) == BlockSpans {
				f.Append(blockAgg(blk, k))
			}
			if read += BlockSpans; read > dropBytes {
				dropPages(s.spans)
				dropPages(s.blockIdx)
				dropPages(s.forest)
				read = 0
			}
		}
		for j, v := range f.Values() {
			o := (l.forestOff + int64(j)) * ab
			if got := s.w.getAgg(s.forest[o:]); got != v {
				return fmt.Errorf("tracestore: %s: lane %d, value %d (offset %#x): %+v, its spans make %+v", fileForest, i, j, o, got, v)
			}
		}
		if c != nil {
			sec := s.coarse.data[c.off : c.off+c.size]
			if !bytes.Equal(sec, enc.finish()) || crc(sec) != c.crc {
				return fmt.Errorf("tracestore: %s: lane %d (offset %#x): the levels are not the ones its spans make", fileCoarse, i, c.off)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var c pageCodec
	var raw []byte
	for k := range (s.m.Spans + AttrChunk - 1) / AttrChunk {
		if raw, err = s.attrChunkRecords(k, &c, raw, nil); err != nil {
			return err
		}
		if k%dropChunks == 0 {
			dropPages(s.attrs)
		}
	}
	dropPages(s.attrs)
	return nil
}

// How often Verify drops the pages it read: every dropBytes of a file
// read whole and every dropBytes spans' worth of blocks (a few bytes a
// span), every dropChunks chunks of span attributes.
const (
	dropBytes  = 8 << 20
	dropChunks = 1 << 8
)

// blockAgg returns the aggregate of blk, block k of its lane.
func blockAgg(blk []Span, k int64) Agg {
	a := noAgg
	for j, sp := range blk {
		a = combine(a, Agg{Longest: sp.Dur, Index: k*BlockSpans + int64(j), Busy: sp.Dur})
	}
	return a
}

// checkBlock decodes block k of lane l, ln, into blk and checks it (see
// the package comment).
func (s *Store) checkBlock(l int, ln *Lane, k int64, blk []Span) ([]Span, error) {
	bi := ln.blockOff + k
	bib := int64(s.w.blockIndexBytes())
	n := int(min(BlockSpans, ln.Spans-k*BlockSpans))
	lo, hi, start := s.blockAt(bi)
	if lo < 0 || lo > hi || hi > int64(len(s.spans)) || bi == 0 && lo != 0 {
		return blk, fmt.Errorf("tracestore: %s: block %d (offset %#x): bytes [%d, %d) out of order or past %d", fileBlocks, bi, bi*bib, lo, hi, len(s.spans))
	}
	if start < 0 || start > s.m.Duration {
		return blk, fmt.Errorf("tracestore: %s: lane %d, block %d (offset %#x): starts at %d, before 0 or after the trace", fileBlocks, l, k, bi*bib, start)
	}
	blk, err := decodeBlock(blk[:0], s.spans[lo:hi], start, n, s.m.TimeQuantum)
	if err != nil {
		return blk, fmt.Errorf("tracestore: %s: lane %d, block %d (offset %#x): %w", fileSpans, l, k, lo, err)
	}
	// decodeBlock accepts only the one form appendBlock writes, and
	// the bytes it decoded fill the block: re-encoding it would give
	// the same bytes.
	end, limit := blk[len(blk)-1].End(), s.m.Duration
	if k+1 < blocks(ln.Spans) {
		_, _, next := s.blockAt(bi + 1)
		limit = min(limit, next)
	}
	if end > limit {
		return blk, fmt.Errorf("tracestore: %s: lane %d, block %d (offset %#x): spans end at %d, after the next block's start or the trace's end (%d)", fileSpans, l, k, lo, end, limit)
	}
	if n == BlockSpans {
		o := (ln.forestOff + 2*k) * int64(s.w.aggBytes())
		if got, want := s.w.getAgg(s.forest[o:]), blockAgg(blk, k); got != want {
			return blk, fmt.Errorf("tracestore: %s: lane %d, leaf %d (offset %#x): %+v, its spans make %+v", fileForest, l, k, o, got, want)
		}
	}
	return blk, nil
}

// blockOK reports whether block k of lane l, whose record is ln, is
// good, checking it the first time (see Open). It is false for every
// block of a lane found corrupt.
func (s *Store) blockOK(l int, ln *Lane, k int64) bool {
	if s.laneBad(l) {
		return false
	}
	bi := ln.blockOff + k
	word, bit := &s.checked[bi/64], uint64(1)<<(bi%64)
	if word.Load()&bit != 0 {
		return true
	}
	var buf [BlockSpans]Span
	if _, err := s.checkBlock(l, ln, k, buf[:0]); err != nil {
		if _, loaded := s.badErr.LoadOrStore(l, err); !loaded {
			s.nbad.Add(1)
		}
		return false
	}
	word.Or(bit)
	return true
}

// HasSpans reports whether a span of lane l overlaps [t0, t1), as
// Query(l, t0, t1).Count > 0 does. When a block of the lane starts in the
// range, the block index answers alone, without reading a span.
func (s *Store) HasSpans(l int, t0, t1 int64) bool {
	ln := s.lane(l)
	if ln.Spans == 0 || t1 <= t0 || s.laneBad(l) {
		return false
	}
	nb := int(blocks(ln.Spans))
	k := sort.Search(nb, func(k int) bool { return s.blockStart(ln.blockOff+int64(k)) >= t0 })
	if k < nb && s.blockStart(ln.blockOff+int64(k)) < t1 {
		return true
	}
	return s.Query(l, t0, t1).Count > 0
}

// blockStart returns the first start of block bi, as blocks.idx says.
func (s *Store) blockStart(bi int64) int64 {
	bib := int64(s.w.blockIndexBytes())
	return int64(getN(s.blockIdx[bi*bib+int64(s.w.o):], s.w.t))
}

// LaneError returns why lane l answers as if it had no spans: the
// corruption its group's record in lanes.tab has, or the first one a
// query found in its blocks, or nil.
func (s *Store) LaneError(l int) error {
	if l < 0 || l >= s.m.Lanes {
		return nil
	}
	if grp := s.laneGroup(int64(l) / LaneGroup); grp.err != nil {
		return grp.err
	}
	if err, ok := s.badErr.Load(l); ok {
		return err.(error)
	}
	return nil
}

// laneBad reports whether a query found a corrupt block in lane l.
func (s *Store) laneBad(l int) bool {
	if s.nbad.Load() == 0 {
		return false
	}
	_, ok := s.badErr.Load(l)
	return ok
}

// leaf returns the forest leaf of whole block k of the lane whose record
// is ln.
func (s *Store) leaf(ln *Lane, k int64) Agg {
	ab := int64(s.w.aggBytes())
	return s.w.getAgg(s.forest[(ln.forestOff+2*k)*ab:])
}

// forestQuery combines the forest leaves of whole blocks [lo, hi) of the
// lane whose record is ln, reading forest.bin in place (the implicit in-order forest of package
// forest: leaf i at value 2i, the node over leaves [i, i+2^k) at value
// 2i+2^k-1). 0 <= lo <= hi <= the lane's whole blocks.
func (s *Store) forestQuery(ln *Lane, lo, hi int64) Agg {
	ab := int64(s.w.aggBytes())
	vals := s.forest[ln.forestOff*ab:]
	acc := noAgg
	for i := lo; i < hi; {
		k := int64(bits.Len64(uint64(hi-i)) - 1)
		if i != 0 {
			k = min(k, int64(bits.TrailingZeros64(uint64(i))))
		}
		acc = combine(acc, s.w.getAgg(vals[(2*i+1<<k-1)*ab:]))
		i += 1 << k
	}
	return acc
}

// An attrCache keeps the kinds and names of the chunks of spanattr.bin
// that queries decoded, at most attrCacheBytes of them; when full, it
// drops chunks at random (a frame's rows read their lanes' chunks in
// turn, a cycle that would miss every time under LRU).
type attrCache struct {
	mu    sync.Mutex
	s     *Store
	m     map[int64]*kindChunk
	bytes int
	codec pageCodec
	raw   []byte
}

// A kindChunk is the kinds and names (packKindName) of a chunk's
// spans: as indexes into a dictionary of its distinct values, packed in
// 0, 1, 2, 4 or 8 bits as the dictionary's size needs, when there are at
// most 256 of them; as they are otherwise. A nil *kindChunk is a corrupt
// chunk.
type kindChunk struct {
	dict   []kindName
	bits   uint     // bits per span in packed
	packed []uint64 // while set builds it, idx instead
	idx    []byte
	all    []kindName
}

func (c *kindChunk) at(j int64) kindName {
	if c.all != nil {
		return c.all[j]
	}
	if c.bits == 0 {
		return c.dict[0]
	}
	bit := uint64(j) * uint64(c.bits)
	return c.dict[c.packed[bit/64]>>(bit%64)&(1<<c.bits-1)]
}

// set sets the value of span j, the spans before it being set.
func (c *kindChunk) set(j int, v kindName) {
	if c.all != nil {
		c.all[j] = v
		return
	}
	d := 0
	if j > 0 && c.dict[c.idx[j-1]] == v { // runs are common
		d = int(c.idx[j-1])
	} else {
		for d < len(c.dict) && c.dict[d] != v {
			d++
		}
	}
	if d == len(c.dict) {
		if d == 256 { // too many: every value as it is
			c.all = make([]kindName, len(c.idx))
			for i := range j {
				c.all[i] = c.dict[c.idx[i]]
			}
			c.all[j], c.dict, c.idx = v, nil, nil
			return
		}
		c.dict = append(c.dict, v)
	}
	c.idx[j] = byte(d)
}

// pack packs the indexes set filled in, once every span is set.
func (c *kindChunk) pack() {
	if c.all != nil {
		return
	}
	for c.bits = 0; len(c.dict) > 1<<c.bits; {
		c.bits = max(1, 2*c.bits)
	}
	if c.bits > 0 {
		c.packed = make([]uint64, (uint64(len(c.idx))*uint64(c.bits)+63)/64)
		for j, d := range c.idx {
			bit := uint64(j) * uint64(c.bits)
			c.packed[bit/64] |= uint64(d) << (bit % 64)
		}
	}
	c.idx = nil
}

func (c *kindChunk) size() int {
	return 96 + 8*len(c.dict) + 8*len(c.packed) + len(c.idx) + 8*len(c.all)
}

// attrCacheBytes bounds the memory of an attrCache: some 16,000 chunks
// of 4,096 spans of 4 bits each and a small dictionary, more of fewer
// bits. (A whole-trace frame of the 64 busiest lanes of a 10^8-event
// trace needs more than 16 MiB.)
const attrCacheBytes = 32 << 20

func (c *attrCache) init(s *Store) { c.s, c.m = s, map[int64]*kindChunk{} }

// chunk returns the kinds and names of chunk k, or nil if it is corrupt.
func (c *attrCache) chunk(k int64) *kindChunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kc, ok := c.m[k]; ok {
		return kc
	}
	n := min(AttrChunk, c.s.m.Spans-k*AttrChunk)
	kc := &kindChunk{idx: make([]byte, n)}
	var err error
	c.raw, err = c.s.attrChunkRecords(k, &c.codec, c.raw, func(j int, kind SpanKind, name, _ uint32) {
		kc.set(j, packKindName(kind, name))
	})
	if err != nil {
		kc = nil
	} else {
		kc.pack()
	}
	size := 64
	if kc != nil {
		size = kc.size()
	}
	for c.bytes+size > attrCacheBytes && len(c.m) > 0 {
		for old, oc := range c.m {
			delete(c.m, old)
			if oc != nil {
				c.bytes -= oc.size()
			} else {
				c.bytes -= 64
			}
			break
		}
	}
	c.m[k] = kc
	c.bytes += size
	return kc
}

// kindName returns the kind and name of span g (of all the spans, lane
// after lane), ok false if its chunk is corrupt.
func (s *Store) kindName(g int64) (kn kindName, ok bool) {
	c := s.kinds.chunk(g / AttrChunk)
	if c == nil {
		return 0, false
	}
	return c.at(g % AttrChunk), true
}

// attrChunkRecords inflates chunk k of spanattr.bin into raw (grown as
// needed) and decodes its records, calling visit (if not nil) with each.
func (s *Store) attrChunkRecords(k int64, c *pageCodec, raw []byte, visit func(j int, kind SpanKind, name, stack uint32)) ([]byte, error) {
	n := int(min(AttrChunk, s.m.Spans-k*AttrChunk))
	lo, hi, rawLen, codec, err := s.attrChunk(k)
	if err == nil && (rawLen < n || rawLen > n*maxAttrBytes) {
		err = fmt.Errorf("%d record bytes for %d spans", rawLen, n)
	}
	if err == nil {
		if cap(raw) < rawLen {
			raw = make([]byte, rawLen)
		}
		raw = raw[:rawLen]
		if err = c.inflate(raw, s.attrs[lo:hi], codec); err == nil {
			if visit == nil {
				visit = func(int, SpanKind, uint32, uint32) {}
			}
			err = decodeAttrs(raw, n, visit)
		}
	}
	if err != nil {
		return raw, fmt.Errorf("tracestore: %s: chunk %d (offset %#x): %w", fileAttrs, k, lo, err)
	}
	return raw, nil
}
