package linearpc

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Leaf lookups.
//
// A Go function that calls another, even on a path it rarely takes or to
// panic on a failed bounds check, gets a stack frame and a stack-bound check
// on every call, and each call level costs the caller its live registers
// (Go's ABI saves none across a call). [Set.TryLookup] and
// [Set.TryLookupBranchy] are the common paths of [Set.Lookup] and
// [Set.LookupBranchy] written as leaf functions: they make no calls, so
// they have no frame. They read the set's bytes through unsafe pointers
// after range checks that keep every load inside the set's data, and
// report false for everything they leave to the general lookups (long
// tables, 4-byte indexes, chunks with many changes, other variants, offsets
// outside the set). A caller that wants the speed writes the fallback
// itself:
//
//	v, ok := s.TryLookup(off, textLen, pc)
//	if !ok {
//		v = s.Lookup(off, textLen, pc)
//	}
//
// (A method that did this would be a call with a frame again: Go's inliner
// does not inline a function that makes two calls.) The safe equivalents
// are lookupFast, lookupCFFast and LookupBranchy, with which the tests
// compare them at every PC; lookupbench's linear kernels call them this
// way (docs/lookup-speed.md, "The leaf lookups", for what it saves).

// TryLookup is [Set.Lookup]'s common path for a set of the spec or the
// compact-fast variant, as a leaf function: it returns the value and true,
// or false when the lookup needs [Set.Lookup]. It trusts its input as
// Lookup does, and reads only within the set's data.
func (s *Set) TryLookup(off32, textLen, pc uint32) (int32, bool) {
	d, off := s.data, uint(off32)
	if uint64(off)+window > uint64(len(d)) || textLen > fastMaxLen {
		return 0, false
	}
	w := (*[window]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(d)), off))
	nidx := uint(textLen-1) >> 8 // number of index entries
	c := uint(pc >> 8)
	var p uint
	if w[0] >= 0xfe && nidx != 0 {
		// The 2-byte index form (long functions: 269 of lookupbench's
		// 1,024 pc4096 samples of the go command); the 4-byte one is
		// left to Lookup. Entry c-1 is at 2c-1 (c <= nidx <= 256), and
		// the window moves to the chunk.
		if w[0] != 0xfe {
			return 0, false
		}
		q := 1 + 2*nidx
		if c > 0 {
			q += uint(le16(w, (2*c-1)&511))
		}
		if uint64(off)+uint64(q)+window > uint64(len(d)) {
			return 0, false
		}
		w = (*[window]byte)(unsafe.Add(unsafe.Pointer(w), q))
	} else {
		// Index entry c-1, or offset 0 for chunk 0 (see lookupFast).
		e := uint(w[(c-1)&(window-1)]) & uint(int(0-c)>>(bits.UintSize-1))
		p = nidx + e
	}
	p &= 511 // no-op: nidx <= 256 and e <= 255
	b, l := gtConsts(byte(pc))
	if s.spec {
		n := uint(w[p])
		le := (gtBits(binary.LittleEndian.Uint64(w[p+1:p+9]), b, l) ^ msb) & firstPCs[n]
		if le == msb && n >= 8 {
			return 0, false
		}
		vl := p + 1 + n
		vw := binary.LittleEndian.Uint64(w[vl : vl+8])
		vals := vl + (n+4)>>2
		lens := uint64(vlenBytes[vw&0xff]) | uint64(vlenBytes[vw>>8&0xff])<<32
		before := le<<1 - le>>7
		voff := uint((lens&before)*lsb>>56) & 63
		li := uint((lens&(before<<8&^before))*lsb>>56) & 7
		l0 := uint(lens) & 7
		x0 := binary.LittleEndian.Uint32(w[vals:vals+4]) & sxMask[l0]
		xi := binary.LittleEndian.Uint32(w[vals+voff:vals+voff+4]) & sxMask[li]
		return int32(x0^sxSign[l0]) - int32(sxSign[l0]) + int32(xi^sxSign[li]) - int32(sxSign[li]), true
	}
	if !s.cf {
		return 0, false
	}
	// The compact-fast chunk (see lookupCFFast).
	h := uint(w[p])
	le := (gtBits(binary.LittleEndian.Uint64(w[p+1:p+9]), b, l) ^ msb) & firstPCs[h>>4]
	if le == msb && h >= 8<<4 {
		return 0, false
	}
	n, nesc, esc := h>>4, uint(w[p+9]), uint(0)
	if n == cfEsc {
		n, esc = nesc, 1
	}
	w0 := h >> 2 & 3
	qs := (p + 1 + esc + n) & 1023
	v0 := int32(le32(w, qs)&cfMask[w0]) - cfBias0[w0] // qs <= 511+1+1+255
	mode := h & 3
	qd := qs + cfLens[w0]
	i := uint((le>>7)*lsb>>56) & 7 // the PCs at or below pc; not bits.OnesCount64, a call unless GOAMD64 >= v2
	im := uint(int(0-i) >> (bits.UintSize - 1))
	bit := ((i - 1) & 7) * cfBits[mode]
	x := le32(w, qd+bit>>3) >> (bit & 4) & cfDMask[mode] // <= 768+4+28
	return v0 + (int32(x)-int32(cfDSign[mode]))&int32(im), true
}

// HasTryLookup reports whether [Set.TryLookup] serves s's variant (the spec
// and compact-fast); for other variants it always reports false.
func (s *Set) HasTryLookup() bool { return s.spec || s.cf }

// TryLookupBranchy is [Set.LookupBranchy]'s common path for a set of the
// spec variant, as a leaf function: it returns the value and true, or false
// when the lookup needs LookupBranchy (other variants, 4-byte indexes,
// chunks with more than branchyMaxN changes). It trusts its input
// as LookupBranchy does, and reads only within the set's data.
func (s *Set) TryLookupBranchy(off32, textLen, pc uint32) (int32, bool) {
	d, off := s.data, uint(off32)
	c := uint(pc >> 8)
	if !s.spec || uint64(off)+uint64(c) >= uint64(len(d)) {
		return 0, false
	}
	base := unsafe.Pointer(unsafe.SliceData(d))
	p := off
	if textLen > ChunkUnits {
		nidx := uint(textLen-1) >> 8
		switch f := *(*byte)(unsafe.Add(base, off)); {
		case f < 0xfe:
			p += nidx
			if c > 0 {
				p += uint(*(*byte)(unsafe.Add(base, off+c-1)))
			}
		case f == 0xfe: // 2-byte index entries, entry c-1 at 2c-1
			p += 1 + 2*nidx
			if c > 0 {
				if uint64(off)+2*uint64(c)+1 > uint64(len(d)) {
					return 0, false
				}
				p += uint(binary.LittleEndian.Uint16((*[2]byte)(unsafe.Add(base, off+2*c-1))[:]))
			}
		default:
			return 0, false
		}
	}
	if uint64(p)+window > uint64(len(d)) {
		return 0, false
	}
	w := (*[window]byte)(unsafe.Add(base, p))
	n := uint(w[0])
	if n > branchyMaxN {
		return 0, false
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
		return v0, true
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
	q := (vals + voff) & (window/2 - 1)
	return v0 + int32(binary.LittleEndian.Uint32(w[q:q+4])<<shi)>>shi, true
}

// le32 reads the little-endian uint32 at w[i:i+4]; i must be at most
// window-4, which the callers' bounds (in comments) guarantee.
func le32(w *[window]byte, i uint) uint32 {
	return binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(unsafe.Pointer(w), i))[:])
}

// le16 reads the little-endian uint16 at w[i:i+2]; i must be at most
// window-2.
func le16(w *[window]byte, i uint) uint16 {
	return binary.LittleEndian.Uint16((*[2]byte)(unsafe.Add(unsafe.Pointer(w), i))[:])
}
