package tracestore

import (
	"math"
	"math/bits"

	"github.com/pctab/pctab/internal/gallop"
)

// QueryRow fills cells with lane l over [t0, t1) cut into len(cells)
// equal pixel ranges (PixelStart): for each pixel, the longest span that
// overlaps it, how many do and which share of it they cover, as Query
// answers for the pixel's range. It is QueryColumns over the pixels'
// boundaries.
func (s *Store) QueryRow(l int, t0, t1 int64, cells []Cell) {
	var buf [2049]int64
	if t1 <= t0 {
		s.QueryColumns(l, nil, cells)
		return
	}
	s.QueryColumns(l, SnapColumns(t0, t1, len(cells), 0, buf[:0]), cells)
}

// QueryColumns fills cells[p] with lane l over [bounds[p], bounds[p+1]),
// as Query answers for that range: the longest span that overlaps it,
// how many do and which share of it they cover. bounds must hold
// len(cells)+1 times in order; with no bounds, every cell is empty.
//
// Where every bound is a multiple of 2^k and the lane has a coarse level
// of 2^k or finer (see Store.Snap), the cells come from the level, one
// record per bucket and no span decoded. Otherwise it sweeps the row
// once. Each boundary is located with a galloping search of the lane's
// block index from the previous boundary, and at most one block is
// decoded per boundary: the one it falls in, which also holds the spans
// that the columns on either side of the boundary fold one by one. The
// whole blocks between two boundaries come from the lane's forest.
func (s *Store) QueryColumns(l int, bounds []int64, cells []Cell) {
	px := int64(len(cells))
	if px == 0 {
		return
	}
	for i := range cells {
		cells[i] = Cell{Kind: NoSpan, Span: -1}
	}
	if len(bounds) == 0 {
		return
	}
	if int64(len(bounds)) != px+1 {
		panic("tracestore: QueryColumns: len(bounds) != len(cells)+1")
	}
	var or uint64
	for p, b := range bounds {
		if p > 0 && b < bounds[p-1] {
			panic("tracestore: QueryColumns: bounds out of order")
		}
		or |= uint64(b)
	}
	ln := s.lane(l)
	if ln.Spans == 0 || s.laneBad(l) {
		return
	}
	if c := s.coarse.find(l); c != nil && bits.TrailingZeros64(or) >= int(c.lo) {
		if lvs := c.levelsOf(s.coarse.data, ln.Spans, s.m.TimeQuantum); lvs != nil {
			k := min((bits.TrailingZeros64(or)-int(c.lo))/coarseStep, len(lvs)-1)
			if s.queryCoarse(l, ln, &lvs[k], bounds, cells) {
				return
			}
			for i := range cells {
				cells[i] = Cell{Kind: NoSpan, Span: -1}
			}
		}
	}
	s.sweep(l, ln, bounds, cells)
}

// sweep is QueryColumns over the spans of lane l, whose record is ln.
func (s *Store) sweep(l int, ln *Lane, bounds []int64, cells []Cell) {
	px := int64(len(cells))
	t0 := bounds[0]
	r := rowSweep{s: s, l: l, ln: ln, off: ln.blockOff, nb: blocks(ln.Spans), n: ln.Spans, knChunk: -1}
	r.bufs[0].k, r.bufs[1].k = -1, -1
	defer func() {
		if r.bad { // a corrupt block: the lane is empty
			for i := range cells {
				cells[i] = Cell{Kind: NoSpan, Span: -1}
			}
		}
	}()
	first := r.blockStart(0)
	last := r.span(ln.Spans - 1).End()
	a := t0
	ja := r.locate(a) // the first span starting at or after a
	endBefore, startAt := r.endBefore, r.startAt
	for p := int64(0); p < px; p++ {
		b := bounds[p+1]
		if b == a {
			continue // an empty pixel: the range is narrower than px
		}
		if a >= last {
			break
		}
		pa := a
		if b <= first {
			a, ja = b, r.locate(b)
			endBefore, startAt = r.endBefore, r.startAt
			continue
		}
		// Spans [i0, i1) overlap [pa, b): those that start before b,
		// from the one before ja if it ends after pa.
		i0, startI0 := ja, startAt
		if ja > 0 && endBefore > pa {
			i0, startI0 = ja-1, r.startBefore
		}
		// i0's block is the one decoded for pa (or i0 starts a block):
		// fold its spans up to the block's end before b's block
		// replaces it.
		// (A block-aligned i0's block is whole in the forest, or holds
		// i1-1 too.)
		k0 := i0 / BlockSpans
		// left: the pixel's first block's spans from i0 on (none if i0
		// starts it: that block is whole in the forest, or holds i1-1
		// too); later right: its last block's spans up to i1. Each
		// exactly, or as its busy time and a bound on its longest span
		// (see rowSweep.tail).
		left, leftExact := noAgg, true
		if i0%BlockSpans != 0 {
			left, leftExact = r.tail(i0)
		}
		i1 := r.locate(b)
		a, ja = b, i1
		endBefore, startAt = r.endBefore, r.startAt
		if i0 >= i1 {
			continue
		}
		var agg Agg
		if k1 := (i1 - 1) / BlockSpans; k1 == k0 {
			agg = r.fold(i0, i1)
		} else {
			mid := noAgg
			if lo, hi := (i0+BlockSpans-1)/BlockSpans, i1/BlockSpans; lo < hi {
				mid = s.forestQuery(ln, lo, hi)
			}
			right, rightExact := r.head(i1)
			// A part known only by a bound needs its spans folded only
			// if its longest could win: the left part's at a tie (its
			// spans come first), the right part's only if longer.
			ref := mid.Longest
			if leftExact {
				ref = max(ref, left.Longest)
			}
			if rightExact {
				ref = max(ref, right.Longest)
			}
			if !leftExact && left.Longest >= ref {
				left, leftExact = r.fold(i0, (k0+1)*BlockSpans), true
				ref = max(ref, left.Longest)
			}
			if !rightExact && right.Longest > ref {
				right, rightExact = r.fold(i1/BlockSpans*BlockSpans, i1), true
			}
			if !leftExact {
				left.Longest, left.Index = -1, -1
			}
			if !rightExact {
				right.Longest, right.Index = -1, -1
			}
			agg = combine(combine(left, mid), right)
		}
		if r.bad {
			return
		}
		busy := agg.Busy
		if startI0 < pa {
			busy -= pa - startI0
		}
		if e := r.endBefore; e > b { // the end of span i1-1
			busy -= e - b
		}
		c := &cells[p]
		c.Count = uint16(min(i1-i0, 65535))
		c.Busy = share(busy, uint64(b)-uint64(pa))
		if agg.Index >= i0 && agg.Index < i1 {
			if kn, ok := r.kindName(agg.Index); ok {
				c.Kind, c.Name, c.Span = kn.kind(), kn.name(), agg.Index
			}
		}
	}
}

// rowSweep reads one lane for QueryRow: the last two blocks it decoded
// (the blocks of the previous and the current pixel boundary), and what it
// found about the last time it located.
type rowSweep struct {
	s    *Store
	l    int
	ln   *Lane // the lane's record
	off  int64 // the lane's first block in blocks.idx
	nb   int64 // blocks
	n    int64 // spans
	hint int   // the block of the last time located
	bufs [2]decodedBlock
	next int // the buffer to decode into

	bad bool // a block was corrupt

	// The kinds and names of chunk knChunk of spanattr.bin.
	knChunk int64
	kn      *kindChunk

	// Of the last time t located, at span index j: the end of span j-1
	// and the start of span j-2 (when j > 0), and the start of span j
	// (when j < n).
	endBefore, startBefore, startAt int64
}

// A decodedBlock is block k of a lane, decoded as far as a sweep has
// needed: its first got spans' starts and durations (kind and name come
// from Store.kindName), and where decoding goes on.
type decodedBlock struct {
	k     int64
	n     int // spans in the block
	got   int // spans decoded
	rest  []byte
	prev  int64 // the end of span got-1 (the block's first start at first)
	q     uint64
	start [BlockSpans]int64
	dur   [BlockSpans]int64
	busy  [BlockSpans + 1]int64 // busy[j]: the durations of spans [0, j)
}

// blockStart returns the first start of the lane's block k.
func (r *rowSweep) blockStart(k int64) int64 {
	w := &r.s.w
	return int64(getN(r.s.blockIdx[(r.off+k)*int64(w.blockIndexBytes())+int64(w.o):], w.t))
}

// blk returns the lane's block k, decoded as far as it has been.
func (r *rowSweep) blk(k int64) *decodedBlock {
	if r.bufs[0].k == k {
		return &r.bufs[0]
	}
	if r.bufs[1].k == k {
		return &r.bufs[1]
	}
	d := &r.bufs[r.next]
	r.next ^= 1
	d.k = k
	if !r.s.blockOK(r.l, r.ln, k) {
		r.bad = true
		d.n, d.got, d.rest = 0, 0, nil
		return d
	}
	lo, hi, start := r.s.blockAt(r.off + k)
	d.n = int(min(BlockSpans, r.n-k*BlockSpans))
	d.got = 0
	d.rest = r.s.spans[lo:hi]
	d.prev = start
	d.q = uint64(r.s.m.TimeQuantum)
	return d
}

// ensure decodes the block's spans up to span j (an index in the block).
func (d *decodedBlock) ensure(j int) { d.decode(j, math.MaxInt64) }

// decode decodes the block's spans up to span j (an index in the block),
// stopping early after the first that starts at or after t. The block
// was checked before its first use (Store.blockOK); should its bytes have
// changed since, it decodes what they say, without panicking.
func (d *decodedBlock) decode(j int, t int64) {
	j = min(j, d.n-1, BlockSpans-1)
	g := d.got
	if g > j {
		return
	}
	b, prev, q := d.rest, d.prev, d.q
	busy := d.busy[g]
	for g <= j {
		// Most values are one or two bytes.
		var v uint64
		switch {
		case len(b) > 0 && b[0] < 0x80:
			v, b = uint64(b[0]), b[1:]
		case len(b) > 1 && b[1] < 0x80:
			v, b = uint64(b[0]&0x7f)|uint64(b[1])<<7, b[2:]
		default:
			var m int
			v, m = uvarint(b)
			b = b[m:]
		}
		dur := v >> 2 * q
		if v&3 != 0 {
			if v&2 != 0 {
				gv, m := uvarint(b)
				b = b[m:]
				gap := gv >> 1 * q
				if gv&1 != 0 {
					r, m := uvarint(b)
					b = b[m:]
					gap += r
				}
				prev += int64(gap)
			}
			if v&1 != 0 {
				r, m := uvarint(b)
				b = b[m:]
				dur += r
			}
		}
		d.start[g] = prev
		d.dur[g] = int64(dur)
		busy += int64(dur)
		d.busy[g+1] = busy
		start := prev
		prev += int64(dur)
		g++
		if start >= t {
			break
		}
	}
	d.got, d.rest, d.prev = g, b, prev
}

// uvarint decodes a varint from b: its value and length, at most len(b)
// (0 for an empty b).
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	var x uint64
	for i, c := range b {
		if i == 10 {
			return x, i
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return x, len(b)
}

func (r *rowSweep) span(i int64) Span {
	d := r.blk(i / BlockSpans)
	j := int(i % BlockSpans)
	d.ensure(j)
	return Span{Start: d.start[j], Dur: d.dur[j]}
}

// locate returns the index j of the first span of the lane that starts at
// or after t, which must not be before the last time located, and records
// endBefore, startBefore and startAt. It decodes one block at most, and
// that only as far as span j: the last block whose first span starts
// before t, which holds span j-1.
func (r *rowSweep) locate(t int64) int64 {
	k := int64(gallop.Search(int(r.nb), r.hint, func(k int) bool { return r.blockStart(int64(k)) >= t }))
	r.hint = max(0, int(k)-1)
	if k == 0 {
		r.startAt = r.blockStart(0)
		return 0
	}
	d := r.blk(k - 1)
	j := 1 // the block's first span starts before t
	for j < d.got && d.start[j] < t {
		j++
	}
	if j >= d.got && d.got < d.n {
		// Every span decoded starts before t: decode on, up to the
		// first that does not.
		d.decode(d.n-1, t)
		if j = d.got; d.start[j-1] >= t {
			j--
		}
	}
	r.endBefore = d.start[j-1] + d.dur[j-1]
	r.startBefore = d.start[j-1]
	switch {
	case j < d.n:
		r.startAt = d.start[j]
	case k < r.nb:
		r.startAt = r.blockStart(k)
	}
	return (k-1)*BlockSpans + int64(j)
}

// fold combines spans [i0, i1), which lie in one block.
func (r *rowSweep) fold(i0, i1 int64) Agg {
	a := noAgg
	if i0 >= i1 {
		return a
	}
	d := r.blk(i0 / BlockSpans)
	base := d.k * BlockSpans
	d.ensure(int(i1 - 1 - base))
	for i := i0; i < i1; i++ {
		dur := d.dur[i-base]
		if dur > a.Longest {
			a.Longest, a.Index = dur, i
		}
	}
	a.Busy = d.busy[i1-base] - d.busy[i0-base]
	return a
}

// tail combines the spans of a block from i0 to the block's end: the
// block's forest leaf less the busy time of the spans before i0. If the
// leaf's longest span is among those, the result has their busy time
// exactly, but its Longest is only a bound (the block's longest) and
// exact is false. A lane's last block, when it is not whole, is folded
// span by span.
func (r *rowSweep) tail(i0 int64) (a Agg, exact bool) {
	k := i0 / BlockSpans
	end := min((k+1)*BlockSpans, r.n)
	if end-k*BlockSpans < BlockSpans {
		return r.fold(i0, end), true
	}
	leaf := r.s.leaf(r.ln, k)
	d := r.blk(k) // checks the block, and the leaf with it
	j := int(i0 - k*BlockSpans)
	if j > 0 {
		d.ensure(j - 1)
	}
	exact = leaf.Index >= i0 && leaf.Index < end
	return Agg{Longest: leaf.Longest, Index: leaf.Index, Busy: leaf.Busy - d.busy[j]}, exact
}

// head combines the spans of the block of i1 from its start to i1 (not
// included), as tail does: their busy time from the block's running
// sums, and the leaf's longest span, exactly if it is among them, else as
// a bound.
func (r *rowSweep) head(i1 int64) (a Agg, exact bool) {
	k := i1 / BlockSpans
	lo := k * BlockSpans
	if lo == i1 {
		return noAgg, true
	}
	if min((k+1)*BlockSpans, r.n)-lo < BlockSpans {
		return r.fold(lo, i1), true
	}
	leaf := r.s.leaf(r.ln, k)
	d := r.blk(k)
	j := int(i1 - lo)
	d.ensure(j - 1)
	exact = leaf.Index >= lo && leaf.Index < i1
	return Agg{Longest: leaf.Longest, Index: leaf.Index, Busy: d.busy[j]}, exact
}

// kindName returns the kind and name of the lane's span i, ok false if
// its chunk of spanattr.bin is corrupt.
func (r *rowSweep) kindName(i int64) (kindName, bool) {
	g := r.ln.firstSpan + i
	if c := g / AttrChunk; c != r.knChunk {
		r.knChunk, r.kn = c, r.s.kinds.chunk(c)
	}
	if r.kn == nil {
		return 0, false
	}
	return r.kn.at(g % AttrChunk), true
}
