package linearpc

import "encoding/binary"

// The branchy spec lookup.
//
// Set.LookupBranchy is the spec lookup for a predictor that has learned the
// lookups: the same pairs looked up in the same order, over and over (the
// golang/go#61984 benchmark's pattern, lookupbench's "hot"). There, a
// branch whose outcome is predicted costs almost nothing, while every
// value computed from loaded data lengthens the chain of dependent loads
// that each lookup waits on. So LookupBranchy turns data into control
// wherever it can:
//
//   - it finds the chunk with a test for one-chunk tables and for chunk 0,
//     and leaves 2- and 4-byte indexes to a separate function;
//   - it counts the PCs at or below the target with a loop that stops at
//     the first one above it: the count comes from predicted branches, not
//     from the compared bytes, so the loads that follow do not wait for
//     the comparisons;
//   - it returns vals[0] early when the target precedes the first change;
//   - it reads the chunk through a fixed window of [window] bytes (which a
//     Set's padding guarantees), so one bounds check covers every load,
//     and takes the byte lengths before value i, and the shift that
//     sign-extends it, from one table (partLen) indexed by the vlen byte
//     and i&3;
//   - every value is one 4-byte load, sign-extended by shifts the compiler
//     knows are below 32.
//
// Chunks with 64 or more changes go to lookupPlain, which reads the chunk
// through bounds-checked slices. Measured against the #61984 reference decoder on the
// same pairs (docs/lookup-speed.md), it is faster in order; when the
// order changes (hot-shuffled, cold) the branches are mispredicted and
// [Set.Lookup] is faster: see the package documentation.

// LookupBranchy returns the same value as [Set.Lookup] for a set of the
// spec variant, with the branchy lookup (see the package documentation);
// for other variants it is [Set.Lookup]. It trusts its input as
// [Set.Lookup] does and reads only within the set and its padding.
//
// The lookup is written in the method itself: a call to a separate
// function would add a measurable share to every hot lookup.
// The set's data must extend at least [window] bytes past the start of
// every chunk, as a Set's padding guarantees.
func (s *Set) LookupBranchy(off32, textLen, pc uint32) int32 {
	if !s.spec {
		return s.Lookup(off32, textLen, pc)
	}
	d, off := s.data, uint(off32)
	p := off
	if textLen > ChunkUnits {
		if d[off] >= 0xfe {
			return lookupPlain(d, off, textLen, pc)
		}
		p += uint(textLen-1) >> 8
		if c := uint(pc >> 8); c > 0 {
			p += uint(d[off+c-1])
		}
	}
	w := (*[window]byte)(d[p:])
	n := uint(w[0])
	if n > branchyMaxN {
		return lookupPlain(d, off, textLen, pc)
	}
	lo := byte(pc)
	i := uint(0)
	for i < n && w[1+i] <= lo {
		i++
	}
	vl := 1 + n
	vals := vl + (n+4)>>2
	sh0 := sxShift[w[vl]&3] & 31
	v0 := int32(binary.LittleEndian.Uint32(w[vals:vals+4])<<sh0) >> sh0
	if i == 0 {
		return v0
	}
	var voff uint
	j := vl
	for k := i >> 2; k > 0; k-- {
		voff += uint(vlenSum[w[j&(window-1)]])
		j++
	}
	t := partLen[uint(w[j&(window-1)])<<2|i&3]
	voff += uint(t & 0xff)
	shi := uint8(t>>8) & 31
	q := (vals + voff) & (window - 1)
	return v0 + int32(binary.LittleEndian.Uint32(w[q:q+4])<<shi)>>shi
}

// branchyMaxN is the largest change count LookupBranchy reads through its
// window: the count, 63 PCs, 16 vlen bytes and values up to 4*63 bytes
// past them, plus a 4-byte load, stay within 1+63+16+252+4 = 336 bytes of
// the chunk's start.
const branchyMaxN = 63

// sxShift[c] is the shift that sign-extends a value of width code c (1, 2
// or 4 bytes) read as a little-endian uint32: int32(x<<s)>>s. Code 0 (no
// value) is never read.
var sxShift = [4]uint8{0, 24, 16, 0}

// partLen[b<<2|k] holds, in its low byte, the total byte length of the
// first k values whose width codes are packed in the vlen byte b, and in
// its high byte the sxShift of value k's code.
var partLen = func() (t [1024]uint16) {
	for b := range 256 {
		for k := range 4 {
			t[b<<2|k] = uint16(vlenSum[b&(1<<(2*k)-1)]) | uint16(sxShift[(b>>(2*k))&3])<<8
		}
	}
	return t
}()

// lookupPlain is the spec lookup written the plain way, for what
// LookupBranchy leaves: 2- and 4-byte indexes and chunks with more than
// branchyMaxN changes. It reads the chunk with bounds-checked slices and
// loads each value with 4 bytes, so d must extend 3 bytes past the chunk's
// last value (a Set's padding).
//
//go:noinline
func lookupPlain(d []byte, off uint, textLen, pc uint32) int32 {
	p := off
	if textLen > ChunkUnits {
		nidx := uint(textLen-1) >> 8
		c := uint(pc >> 8)
		switch d[off] {
		case 0xfe:
			p = off + 1 + 2*nidx
			if c > 0 {
				p += uint(binary.LittleEndian.Uint16(d[off+2*c-1:]))
			}
		case 0xff:
			p = off + 1 + 4*nidx
			if c > 0 {
				p += uint(binary.LittleEndian.Uint32(d[off+4*c-3:]))
			}
		default:
			p = off + nidx
			if c > 0 {
				p += uint(d[off+c-1])
			}
		}
	}
	n := uint(d[p])
	lo := byte(pc)
	pcs := d[p+1 : p+1+n]
	i := n
	for k, x := range pcs {
		if x > lo {
			i = uint(k)
			break
		}
	}
	vl := p + 1 + n
	vals := vl + (n+4)>>2
	v0 := readValWide(d, vals, d[vl]&3)
	if i == 0 {
		return v0
	}
	var voff uint
	for _, b := range d[vl : vl+i>>2] {
		voff += uint(vlenSum[b])
	}
	b := d[vl+i>>2]
	sh := (i & 3) * 2
	voff += uint(vlenSum[b&(1<<sh-1)])
	return v0 + readValWide(d, vals+voff, (b>>sh)&3)
}
