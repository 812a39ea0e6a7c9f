package tracestore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"
	"sync/atomic"
)

// Coarse levels (coarse.bin) answer a zoomed-out frame without decoding a
// block: for the lanes with enough spans, and for each level 2^k of a
// few powers of two, the lane's state at every multiple of 2^k (its time
// buckets' boundaries) and each bucket's longest span. A frame whose
// column boundaries are multiples of 2^k (Store.Snap, SnapColumns) reads
// one record per bucket of each column and no span: the cells are exactly
// those the sweep over the spans gives for the same boundaries.
//
// At a boundary B of a lane (spans in order, none overlapping the next),
// r(B) is the number of spans starting before B, s(B) whether span
// r(B)-1 ends after B, and C(B) the spans' covered time before B. A
// column [B0, B1) holds spans [r(B0)-s(B0), r(B1)), covers C(B1)-C(B0),
// and its longest span is the longest of its buckets' (a bucket's spans
// are those that start in it and the one straddling its start).
//
// The file is: the magic, the lanes' sections one after the other, a
// directory of coarseDirBytes per lane with levels (lanes in order), the
// number of directory entries (uint32) and the magic again. A directory
// entry is: lane (uint32), the finest level's shift, the number of levels
// (a byte each, levels at every coarseStep-th shift), two zero bytes, the
// section's offset and size (uint64 each), its CRC-32C (uint32) and four
// zero bytes. A section holds each level, finest first: varints b0 (the
// first bucket: the lane's first start >> shift), nb (buckets), the lane's
// covered time and the size of the records, then an entry per
// coarseGroup buckets (the offset of the group's first record in the
// records (uint32), r<<1|s and C at the group's first boundary (uint64
// each)), then the records. A bucket's record is varints: its spans that
// start in it << 3 | s at its end << 2 | whether its longest span is the
// previous record's (never at a group's start) << 1 | whether its spans
// leave some of it uncovered; if they do, 2^shift less its covered time;
// then, if it has spans and its longest is not the previous
// record's, the longest's duration and, if it has more than one span,
// the longest's index less its first span's. Times (the uncovered time
// and the duration) are in the store's time quantum q: t/q << 1 | 1 if t
// is not a multiple of q, then t%q if it is not.

const (
	fileCoarse     = "coarse.bin"
	coarseMagic    = "TSC1"
	coarseDirBytes = 32
	coarseGroup    = 64
	coarseGroupB   = 20
	// coarseStep is the shifts between a lane's levels: a column of a
	// level's 2^shift reads fewer than 2^coarseStep buckets of the next
	// finer one.
	coarseStep = 2
	// CoarseMinShift is the finest level: 2^10 ns.
	coarseMinShift = 10
	// coarseMaxShift bounds a level so that a bucket boundary, (b0+nb)
	// << shift, stays below maxTime.
	coarseMaxShift = 56
	// coarseMinSpans is the fewest spans a lane with levels has.
	coarseMinSpans = 256
	// coarseMinBuckets: a lane's finest level has at least this many
	// buckets over its spans.
	coarseMinBuckets = 64
	// coarseMaxBuckets: a lane gets coarser levels while its coarsest
	// has more buckets than this. A frame reads at most a level's
	// buckets in view; up to this many cost less than sweeping a column.
	coarseMaxBuckets = 8192
	// coarseRecordBytes is what a bucket is reckoned to take when the
	// levels are chosen (its record and its share of a group entry).
	coarseRecordBytes = 4
)

// A coarseLevel is one level of a lane's section, checked.
type coarseLevel struct {
	shift uint
	b0    int64 // the first bucket (its start is b0 << shift)
	nb    int64 // buckets
	cEnd  int64 // the lane's covered time
	q     int64 // the store's time quantum
	gidx  []byte
	rec   []byte
}

// coarseLane is a lane's entry in coarse.bin's directory.
type coarseLane struct {
	lane        uint32
	lo, levels  uint8
	off, size   int64
	crc         uint32
	state       atomic.Pointer[[]coarseLevel] // its levels, once checked
	checkFailed atomic.Bool
}

// coarseFile is coarse.bin as Open reads it: its directory.
type coarseFile struct {
	data  []byte
	lanes []coarseLane
	minLo uint // the finest level of any lane
}

// parseCoarse reads coarse.bin's directory, checking it against the
// file's size and the store's lanes; the sections are checked when a
// lane's levels are first used (coarseLevels).
func parseCoarse(b []byte, lanes int) (*coarseFile, error) {
	const trailer = 8
	if len(b) < len(coarseMagic)+trailer || string(b[:4]) != coarseMagic || string(b[len(b)-4:]) != coarseMagic {
		return nil, fmt.Errorf("tracestore: %s: %d bytes, no magic at both ends", fileCoarse, len(b))
	}
	n := int64(binary.LittleEndian.Uint32(b[len(b)-trailer:]))
	room := int64(len(b)-len(coarseMagic)-trailer) / coarseDirBytes
	if n > room || n > int64(lanes) {
		return nil, fmt.Errorf("tracestore: %s: %d directory entries do not fit in %d bytes or the %d lanes", fileCoarse, n, len(b), lanes)
	}
	dir := int64(len(b)-trailer) - n*coarseDirBytes
	f := &coarseFile{data: b, lanes: make([]coarseLane, n), minLo: math.MaxUint}
	next := int64(len(coarseMagic))
	for i := range n {
		e := b[dir+i*coarseDirBytes:]
		c := &f.lanes[i]
		c.lane, c.lo, c.levels = binary.LittleEndian.Uint32(e), e[4], e[5]
		off, size := binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
		c.crc = binary.LittleEndian.Uint32(e[24:])
		if i > 0 && c.lane <= f.lanes[i-1].lane || int64(c.lane) >= int64(lanes) ||
			c.lo < coarseMinShift || c.levels == 0 || int(c.lo)+coarseStep*(int(c.levels)-1) > coarseMaxShift ||
			off != uint64(next) || size > uint64(dir-next) || e[6]|e[7]|e[28]|e[29]|e[30]|e[31] != 0 {
			return nil, fmt.Errorf("tracestore: %s: directory entry %d (offset %#x): lane %d, levels %d+%d, bytes [%d, +%d) out of order or range", fileCoarse, i, dir+i*coarseDirBytes, c.lane, c.lo, c.levels, off, size)
		}
		c.off, c.size = int64(off), int64(size)
		next += c.size
		f.minLo = min(f.minLo, uint(c.lo))
	}
	if next != dir {
		return nil, fmt.Errorf("tracestore: %s: sections end at %d, the directory starts at %d", fileCoarse, next, dir)
	}
	return f, nil
}

// find returns lane l's directory entry, or nil.
func (f *coarseFile) find(l int) *coarseLane {
	if f == nil {
		return nil
	}
	i := sort.Search(len(f.lanes), func(i int) bool { return int64(f.lanes[i].lane) >= int64(l) })
	if i < len(f.lanes) && int64(f.lanes[i].lane) == int64(l) {
		return &f.lanes[i]
	}
	return nil
}

// levels returns the lane's levels, checking its section the first time
// (its CRC, then every record: checkCoarseSection), nil if it fails.
func (c *coarseLane) levelsOf(data []byte, spans, q int64) []coarseLevel {
	if p := c.state.Load(); p != nil {
		return *p
	}
	if c.checkFailed.Load() {
		return nil
	}
	sec := data[c.off : c.off+c.size]
	lv, err := parseCoarseSection(sec, uint(c.lo), int(c.levels), spans, q)
	if err == nil && crc(sec) != c.crc {
		err = errors.New("checksum mismatch")
	}
	if err != nil {
		c.checkFailed.Store(true)
		return nil
	}
	c.state.Store(&lv)
	return lv
}

// parseCoarseSection reads and checks a lane's section of levels shifts
// lo, lo+coarseStep, ... for a lane of n spans and a store of time quantum
// q: every group entry and record, so that a query over it never reads
// past a record or counts past the lane's spans.
func parseCoarseSection(b []byte, lo uint, levels int, n, q int64) ([]coarseLevel, error) {
	if q < 1 || q > MaxTimeQuantum {
		return nil, fmt.Errorf("time quantum %d", q)
	}
	out := make([]coarseLevel, 0, levels)
	for i := range levels {
		lv := coarseLevel{shift: lo + coarseStep*uint(i), q: q}
		var v [4]uint64
		for j := range v {
			x, m := binary.Uvarint(b)
			if m <= 0 {
				return nil, fmt.Errorf("level %d: bad header", i)
			}
			v[j], b = x, b[m:]
		}
		// A record takes a byte at least.
		if v[0] > maxTime>>lv.shift || v[1] == 0 || v[1] > uint64(len(b)) || v[2] > maxTime || v[3] > uint64(len(b)) {
			return nil, fmt.Errorf("level %d: header out of range", i)
		}
		lv.b0, lv.nb, lv.cEnd = int64(v[0]), int64(v[1]), int64(v[2])
		if lv.b0+lv.nb > maxTime>>lv.shift {
			return nil, fmt.Errorf("level %d: buckets past the end of time", i)
		}
		ng := (lv.nb + coarseGroup - 1) / coarseGroup
		if ng > int64(len(b))/coarseGroupB || ng*coarseGroupB+int64(v[3]) > int64(len(b)) {
			return nil, fmt.Errorf("level %d: %d groups and %d bytes of records do not fit", i, ng, v[3])
		}
		lv.gidx, lv.rec = b[:ng*coarseGroupB], b[ng*coarseGroupB:ng*coarseGroupB+int64(v[3])]
		b = b[ng*coarseGroupB+int64(v[3]):]
		if err := lv.check(n); err != nil {
			return nil, fmt.Errorf("level %d: %w", i, err)
		}
		out = append(out, lv)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes after the levels", len(b))
	}
	return out, nil
}

// check decodes every record of the level, checking each against the
// lane's n spans, the group entries and the level's header.
func (lv *coarseLevel) check(n int64) error {
	var c coarseCursor
	c.init(lv, n)
	for j := int64(0); j < lv.nb; j++ {
		if j%coarseGroup == 0 {
			e := lv.gidx[j/coarseGroup*coarseGroupB:]
			rs := binary.LittleEndian.Uint64(e[4:])
			if int64(binary.LittleEndian.Uint32(e)) != int64(c.pos) || rs != uint64(c.r)<<1|b2u(c.s) || int64(binary.LittleEndian.Uint64(e[12:])) != c.c {
				return fmt.Errorf("group %d: entry does not match its records", j/coarseGroup)
			}
		}
		if !c.step() {
			return fmt.Errorf("bucket %d (record offset %#x): bad record", j, c.pos)
		}
	}
	if c.pos != len(lv.rec) || c.r != n || c.s || c.c != lv.cEnd {
		return fmt.Errorf("the records end at %d of %d bytes, with %d spans of %d, covering %d of %d", c.pos, len(lv.rec), c.r, n, c.c, lv.cEnd)
	}
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// A coarseCursor reads a level's records in order: it is at boundary j
// (record j is next), with that boundary's r, s and C, and the longest
// span of the last record read.
type coarseCursor struct {
	lv      *coarseLevel
	n       int64 // the lane's spans
	j       int64
	pos     int
	r       int64
	s       bool
	c       int64
	lng     int64 // the last record's longest span: its duration and index (-1 none)
	lngIdx  int64
	bktLng  int64 // the longest span of the last record read (-1 none)
	bktIdx  int64
	bktFull int64 // 2^shift
}

func (c *coarseCursor) init(lv *coarseLevel, n int64) {
	*c = coarseCursor{lv: lv, n: n, lng: -1, lngIdx: -1, bktFull: 1 << lv.shift}
}

// uv decodes a varint at c.pos, ok false past the records.
func (c *coarseCursor) uv() (uint64, bool) {
	b, p := c.lv.rec, c.pos
	// Most values are one or two bytes.
	if p+1 < len(b) {
		if x := b[p]; x < 0x80 {
			c.pos = p + 1
			return uint64(x), true
		} else if y := b[p+1]; y < 0x80 {
			c.pos = p + 2
			return uint64(x&0x7f) | uint64(y)<<7, true
		}
	}
	if p >= len(b) {
		return 0, false
	}
	v, m := binary.Uvarint(b[p:])
	if m <= 0 {
		return 0, false
	}
	c.pos += m
	return v, true
}

// time decodes a time in the quantum: ok false if it is not one the
// writer could have written, or past maxTime.
func (c *coarseCursor) time() (int64, bool) {
	v, ok := c.uv()
	if !ok || v>>1 > maxTime/uint64(c.lv.q) {
		return 0, false
	}
	t := int64(v>>1) * c.lv.q
	if v&1 != 0 {
		r, ok := c.uv()
		if !ok || r == 0 || r >= uint64(c.lv.q) {
			return 0, false
		}
		t += int64(r)
	}
	return t, t <= maxTime
}

// step reads record c.j, moving to the next boundary; false if the record
// is not one the writer could have written for a lane of c.n spans.
func (c *coarseCursor) step() bool {
	if c.j >= c.lv.nb {
		return false
	}
	first := c.j%coarseGroup == 0
	v1, ok1 := c.uv()
	gap, ok2 := int64(0), true
	if v1&1 != 0 {
		gap, ok2 = c.time()
		ok2 = ok2 && gap > 0
	}
	if !ok1 || !ok2 {
		return false
	}
	dr := v1 >> 3
	s1 := v1&4 != 0
	same := v1&2 != 0
	i0 := c.r - int64(b2u(c.s))
	if dr > uint64(c.n-c.r) || gap > c.bktFull || s1 && c.r+int64(dr) == 0 {
		return false
	}
	r1 := c.r + int64(dr)
	count := r1 - i0
	c.bktLng, c.bktIdx = -1, -1
	switch {
	case same:
		if first || count == 0 || c.lngIdx < i0 || c.lngIdx >= r1 {
			return false
		}
		c.bktLng, c.bktIdx = c.lng, c.lngIdx
	case count > 0:
		d, ok := c.time()
		if !ok {
			return false
		}
		var o uint64
		if count > 1 {
			if o, ok = c.uv(); !ok || o >= uint64(count) {
				return false
			}
		}
		c.bktLng, c.bktIdx = int64(d), i0+int64(o)
	}
	c.c += c.bktFull - gap
	if c.c > c.lv.cEnd {
		return false
	}
	c.r, c.s = r1, s1
	c.lng, c.lngIdx = c.bktLng, c.bktIdx
	c.j++
	return true
}

// seek moves the cursor forward to boundary j (0 <= j <= nb), through the
// group index when that skips records; ok false on a bad record (the
// file changed since it was checked).
func (c *coarseCursor) seek(j int64) bool {
	if g := j / coarseGroup; g > c.j/coarseGroup && j < c.lv.nb {
		e := c.lv.gidx[g*coarseGroupB:]
		rs := binary.LittleEndian.Uint64(e[4:])
		c.j, c.pos = g*coarseGroup, int(binary.LittleEndian.Uint32(e))
		c.r, c.s, c.c = int64(min(rs>>1, uint64(c.n))), rs&1 != 0, int64(min(binary.LittleEndian.Uint64(e[12:]), maxTime))
		c.lng, c.lngIdx = -1, -1
	}
	for c.j < j {
		if !c.step() {
			return false
		}
	}
	return true
}

// at returns boundary j's rank, straddle and covered time, moving the
// cursor there if it is one of the level's: before the level's first
// bucket nothing has started, after its last every span has ended. ok is
// false on a bad record.
func (c *coarseCursor) at(j int64) (r int64, s bool, cov int64, ok bool) {
	switch {
	case j <= 0:
		return 0, false, 0, true
	case j >= c.lv.nb:
		return c.n, false, c.lv.cEnd, true
	}
	if c.j != j && !c.seek(j) {
		return 0, false, 0, false
	}
	return c.r, c.s, c.c, true
}

// queryCoarse fills cells of lane l (record ln) for columns [bounds[p], bounds[p+1]), every
// bound a multiple of 2^lv.shift, from the level: false if a record is
// bad (the caller then sweeps the spans).
func (s *Store) queryCoarse(l int, ln *Lane, lv *coarseLevel, bounds []int64, cells []Cell) bool {
	n := ln.Spans
	var c coarseCursor
	c.init(lv, n)
	sh := lv.shift
	r := rowSweep{s: s, l: l, ln: ln, knChunk: -1}
	ja := (bounds[0] >> sh) - lv.b0
	ra, sa, ca, ok := c.at(ja)
	if !ok {
		return false
	}
	for p := range cells {
		jb := (bounds[p+1] >> sh) - lv.b0
		if jb == ja {
			continue
		}
		// The longest span of buckets [ja, jb) that have records.
		lng, idx := int64(-1), int64(-1)
		if ja < lv.nb && jb > 0 {
			if j := max(ja, 0); c.j != j && !c.seek(j) {
				return false
			}
			for c.j < min(jb, lv.nb) {
				if !c.step() {
					return false
				}
				if c.bktLng > lng {
					lng, idx = c.bktLng, c.bktIdx
				}
			}
		}
		rb, sb, cb, ok := c.at(jb)
		if !ok {
			return false
		}
		i0, i1 := ra-int64(b2u(sa)), rb
		if i1 > i0 {
			cell := &cells[p]
			cell.Count = uint16(min(i1-i0, 65535))
			cell.Busy = share(cb-ca, uint64(bounds[p+1])-uint64(bounds[p]))
			if idx >= i0 && idx < i1 {
				if kn, ok := r.kindName(idx); ok {
					cell.Kind, cell.Name, cell.Span = kn.kind(), kn.name(), idx
				}
			}
		}
		ja, ra, sa, ca = jb, rb, sb, cb
	}
	return true
}

// Snap returns the shift of the power of two that a frame of [t0, t1) in
// px columns snaps its column boundaries to (SnapColumns): the largest
// power of two no wider than a column, when some lane has a coarse level
// that fine or finer; 0 (no snapping) otherwise, and for a store without
// coarse levels.
func (s *Store) Snap(t0, t1 int64, px int) uint {
	if s.coarse == nil || len(s.coarse.lanes) == 0 || px <= 0 || t1 <= t0 {
		return 0
	}
	w := (uint64(t1) - uint64(t0)) / uint64(px)
	if w == 0 {
		return 0
	}
	u := uint(bits.Len64(w) - 1)
	if u < s.coarse.minLo {
		return 0
	}
	return min(u, coarseMaxShift)
}

// SnapColumns returns, in dst[:0], the px+1 boundaries of the columns of
// a frame of [t0, t1) snapped to 2^shift: PixelStart(t0, t1, px, p)
// rounded up to a multiple of 2^shift (shift 0: not rounded). A snapped
// column is within one 2^shift of the pixel it draws; with Store.Snap's
// shift, within one column's width.
func SnapColumns(t0, t1 int64, px int, shift uint, dst []int64) []int64 {
	dst = dst[:0]
	if px <= 0 || t1 <= t0 {
		return dst
	}
	shift = min(shift, 62)
	m := int64(1)<<shift - 1
	w := uint64(t1) - uint64(t0)
	qs, rs := w/uint64(px), w%uint64(px)
	var q, rem uint64
	for p := 0; p <= px; p++ {
		b := int64(uint64(t0) + q)
		if b <= math.MaxInt64-m {
			b = (b + m) &^ m
		} else {
			b &^= m
		}
		dst = append(dst, b)
		q += qs
		if rem += rs; rem >= uint64(px) {
			q++
			rem -= uint64(px)
		}
	}
	return dst
}

// coarseEncoder builds one lane's section from its spans in order.
type coarseEncoder struct {
	lvs    []levelEncoder
	n      int64 // spans added
	busy   int64 // their durations
	prev   Span  // the last span added
	q      int64
	secBuf []byte
}

// appendTime appends t in the quantum e.q (see the file's format).
func (e *coarseEncoder) appendTime(b []byte, t int64) []byte {
	r := t % e.q
	b = binary.AppendUvarint(b, uint64(t/e.q)<<1|b2u(r != 0))
	if r != 0 {
		b = binary.AppendUvarint(b, uint64(r))
	}
	return b
}

// levelEncoder builds one level: the records of the buckets closed, and
// the open bucket's state at its start and its longest span so far.
type levelEncoder struct {
	shift       uint
	b0, nb      int64
	next        int64 // the open bucket's end
	r0          int64
	s0          bool
	c0          int64
	lng, lngIdx int64
	prevIdx     int64 // the longest span of the previous record, -1 if none or at a group's start
	gidx, rec   []byte
}

// reset starts a lane whose first span starts at first, with levels
// shifts lo, lo+coarseStep, ..., in a store of time quantum q.
func (e *coarseEncoder) reset(first int64, lo uint, levels int, q int64) {
	e.q = q
	e.n, e.busy, e.prev = 0, 0, Span{}
	if cap(e.lvs) < levels {
		e.lvs = append(e.lvs[:cap(e.lvs)], make([]levelEncoder, levels-cap(e.lvs))...)
	}
	e.lvs = e.lvs[:levels]
	for i := range e.lvs {
		v := &e.lvs[i]
		sh := lo + coarseStep*uint(i)
		*v = levelEncoder{shift: sh, b0: first >> sh, next: (first>>sh + 1) << sh, lng: -1, lngIdx: -1, prevIdx: -1, gidx: v.gidx[:0], rec: v.rec[:0]}
	}
}

// add adds the lane's next span.
func (e *coarseEncoder) add(sp Span) {
	for i := range e.lvs {
		v := &e.lvs[i]
		for sp.Start >= v.next {
			e.close(v)
		}
		if sp.Dur > v.lng {
			v.lng, v.lngIdx = sp.Dur, e.n
		}
	}
	e.n++
	e.busy += sp.Dur
	e.prev = sp
}

// close writes the open bucket's record and opens the next.
func (e *coarseEncoder) close(v *levelEncoder) {
	b := v.next
	s1 := e.n > 0 && e.prev.End() > b
	c1 := e.busy
	if s1 {
		c1 -= e.prev.End() - b
	}
	if v.nb%coarseGroup == 0 {
		v.gidx = binary.LittleEndian.AppendUint32(v.gidx, uint32(len(v.rec)))
		v.gidx = binary.LittleEndian.AppendUint64(v.gidx, uint64(v.r0)<<1|b2u(v.s0))
		v.gidx = binary.LittleEndian.AppendUint64(v.gidx, uint64(v.c0))
		v.prevIdx = -1
	}
	dr := e.n - v.r0
	i0 := v.r0 - int64(b2u(v.s0))
	count := e.n - i0
	same := count > 0 && v.lngIdx == v.prevIdx
	gap := int64(1)<<v.shift - (c1 - v.c0)
	v.rec = binary.AppendUvarint(v.rec, uint64(dr)<<3|b2u(s1)<<2|b2u(same)<<1|b2u(gap != 0))
	if gap != 0 {
		v.rec = e.appendTime(v.rec, gap)
	}
	if count > 0 && !same {
		v.rec = e.appendTime(v.rec, v.lng)
		if count > 1 {
			v.rec = binary.AppendUvarint(v.rec, uint64(v.lngIdx-i0))
		}
	}
	v.prevIdx = v.lngIdx
	v.nb++
	v.r0, v.s0, v.c0 = e.n, s1, c1
	v.lng, v.lngIdx = -1, -1
	if s1 {
		v.lng, v.lngIdx = e.prev.Dur, e.n-1
	}
	v.next = b + 1<<v.shift
}

// finish closes the buckets up to the one the last span ends in and
// returns the section.
func (e *coarseEncoder) finish() []byte {
	sec := e.secBuf[:0]
	end := e.prev.End()
	for i := range e.lvs {
		v := &e.lvs[i]
		e.close(v) // the bucket of the last start
		for v.next-1<<v.shift < end {
			e.close(v)
		}
		sec = binary.AppendUvarint(sec, uint64(v.b0))
		sec = binary.AppendUvarint(sec, uint64(v.nb))
		sec = binary.AppendUvarint(sec, uint64(e.busy))
		sec = binary.AppendUvarint(sec, uint64(len(v.rec)))
		sec = append(sec, v.gidx...)
		sec = append(sec, v.rec...)
	}
	e.secBuf = sec
	return sec
}

// coarseChoice says which levels a lane gets: at least theta spans a
// bucket on average over the lane's extent at its finest level, and at
// least coarseMinBuckets buckets; coarser ones while the last has more
// than coarseMaxBuckets. levels 0: none.
func coarseChoice(spans, extent int64, theta float64) (lo uint, levels int) {
	if spans < coarseMinSpans || extent <= 0 || !(theta >= 1) {
		return 0, 0
	}
	// The finest: the smallest shift with extent >> shift <= spans/theta.
	per := int64(float64(spans) / theta)
	if per < coarseMinBuckets {
		return 0, 0
	}
	lo = coarseMinShift
	for lo < coarseMaxShift && extent>>lo > per {
		lo++
	}
	if extent>>lo < coarseMinBuckets {
		return 0, 0
	}
	levels = 1
	for lo+coarseStep*uint(levels) <= coarseMaxShift && extent>>(lo+coarseStep*uint(levels-1)) > coarseMaxBuckets {
		levels++
	}
	return lo, levels
}

// coarseEstimate is the bytes a lane's levels are reckoned to take.
func coarseEstimate(extent int64, lo uint, levels int) int64 {
	var n int64
	for i := range levels {
		n += (extent>>(lo+coarseStep*uint(i)) + 2) * coarseRecordBytes
	}
	return n + coarseDirBytes + 16*int64(levels)
}

// coarseBudget is what coarse.bin may take of a store whose other files
// take rest bytes, of a trace of traceBytes: enough to keep the store at
// 0.99 times the trace, and at most an eighth of the trace.
func coarseBudget(traceBytes, rest int64) int64 {
	return max(0, min(traceBytes/100*99-rest, traceBytes/8))
}

// writeCoarse writes coarse.bin into the built store in dir (its other
// files written and checked by Open's checks) in at most budget bytes:
// the levels of the lanes that the smallest spans-per-bucket threshold
// (a power of two, 2 or more) lets fit. It returns the file's size.
func writeCoarse(dir string, budget int64) (int64, error) {
	s, err := open(dir, true)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	var size int64
	err = s.Guard(func() { size, err = s.writeCoarse(budget) })
	return size, err
}

func (s *Store) writeCoarse(budget int64) (int64, error) {
	var buf [BlockSpans]Span
	extent := func(i int, l *Lane) (first, end int64, err error) {
		_, _, first = s.blockAt(l.blockOff)
		blk, err := s.checkBlock(i, l, blocks(l.Spans)-1, buf[:0])
		if err != nil {
			return 0, 0, err
		}
		return first, blk[len(blk)-1].End(), nil
	}
	// theta: spans a bucket, 2^(e/4) for e in [4, thetas).
	const thetas = 120
	thetaOf := func(e int) float64 { return math.Pow(2, float64(e)/4) }
	var totals [thetas]int64
	err := s.eachLane(func(i int, l *Lane, _ int64) error {
		if l.Spans < coarseMinSpans {
			return nil
		}
		first, end, err := extent(i, l)
		if err != nil {
			return err
		}
		for e := 4; e < thetas; e++ {
			if lo, lv := coarseChoice(l.Spans, end-first, thetaOf(e)); lv > 0 {
				totals[e] += coarseEstimate(end-first, lo, lv)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	theta := 4
	for theta < thetas && totals[theta]+16 > budget {
		theta++
	}
	for {
		size, err := s.writeCoarseTheta(thetaOf(theta), extent)
		if err != nil || size <= budget || theta >= thetas {
			return size, err
		}
		theta++ // the estimate was short
	}
}

// writeCoarseTheta writes coarse.bin with the levels coarseChoice gives
// for theta.
func (s *Store) writeCoarseTheta(theta float64, extent func(int, *Lane) (int64, int64, error)) (int64, error) {
	f, err := os.Create(s.path(fileCoarse))
	if err != nil {
		return 0, fmt.Errorf("tracestore: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, ioBuffer)
	w.WriteString(coarseMagic)
	off := int64(len(coarseMagic))
	var dir []byte
	var enc coarseEncoder
	var blk []Span
	var read int64
	n := 0
	err = s.eachLane(func(i int, l *Lane, _ int64) error {
		if l.Spans < coarseMinSpans {
			return nil
		}
		first, end, err := extent(i, l)
		if err != nil {
			return err
		}
		lo, lv := coarseChoice(l.Spans, end-first, theta)
		if lv == 0 {
			return nil
		}
		enc.reset(first, lo, lv, s.m.TimeQuantum)
		for k := range blocks(l.Spans) {
			if blk, err = s.checkBlock(i, l, k, blk[:0]); err != nil {
				return err
			}
			for _, sp := range blk {
				enc.add(sp)
			}
			if read += BlockSpans; read > dropBytes {
				dropPages(s.spans)
				dropPages(s.blockIdx)
				dropPages(s.forest)
				read = 0
			}
		}
		sec := enc.finish()
		w.Write(sec)
		var e [coarseDirBytes]byte
		binary.LittleEndian.PutUint32(e[0:], uint32(i))
		e[4], e[5] = byte(lo), byte(lv)
		binary.LittleEndian.PutUint64(e[8:], uint64(off))
		binary.LittleEndian.PutUint64(e[16:], uint64(len(sec)))
		binary.LittleEndian.PutUint32(e[24:], crc(sec))
		dir = append(dir, e[:]...)
		off += int64(len(sec))
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	w.Write(dir)
	w.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
	w.WriteString(coarseMagic)
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("tracestore: writing %s: %w", fileCoarse, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("tracestore: writing %s: %w", fileCoarse, err)
	}
	return off + int64(len(dir)) + 8, nil
}
