package linearpc

import (
	"encoding/binary"
	"math/bits"
)

// The compact-fast variant.
//
// Its chunks are
//
//	h      uint8    n<<4 | w0<<2 | mode: n = 0..14 changes, or 15 for an
//	                escaped count; w0 the start value's width code (0, 1,
//	                2, 4 bytes); mode the width of every delta: 0 = signed
//	                nibble, 1, 2, 3 = 1, 2, 4 bytes
//	pcs    [n]byte  as in the spec, except that an escaped count (more
//	                than 14 changes) is a byte between pcs[7] and pcs[8]
//	start  0-4 B    start value plus 1 (width 0: the value is -1)
//	deltas          value after each change minus the start value, all in
//	                the width of mode (nibbles two per byte, low first)
//
// Values are stored in excess-K form: the sign bit of their width is
// flipped, so that x&mask - K decodes them without a separate
// sign-extension step.
//
// The index and constant-chunk sharing are the spec's. Unlike compact,
// start values do not depend on chunk 0's (so a lookup reads one chunk),
// and there is no mixed-width delta form, so the header needs no table
// and delta j is at bit j*4<<mode of the deltas.
//
// lookupCFFast uses fast.go's techniques: a fixed window from the table
// start, the index entry masked to 0 for chunk 0, the first 8 PCs
// compared at once, values sign-extended from one 4-byte load by mask
// tables, and the delta masked to 0 when the target precedes the first
// change. Its data-dependent branches are the spec's (long tables, wide
// indexes, 8 or more PCs at or below the target) plus one for escaped
// counts.

// cfLens, cfMask and cfSign give the byte length of a value with width code
// c, and the mask and sign bit that sign-extend it from a 4-byte load; code
// 0 yields 0.
var (
	cfLens = [4]uint{0, 1, 2, 4}
	cfMask = [4]uint32{0, 0xff, 0xffff, 0xffffffff}
	cfSign = [4]uint32{0, 0x80, 0x8000, 0x80000000}
	// cfBias0[c] decodes a start value: v0 = x&cfMask[c] - cfBias0[c].
	cfBias0 = [4]int32{1, 0x81, 0x8001, -0x7fffffff}
)

// cfBits, cfDMask and cfDSign give the bit width of a delta in mode m,
// and the mask and sign bit that sign-extend it.
var (
	cfBits  = [4]uint{4, 8, 16, 32}
	cfDMask = [4]uint32{0xf, 0xff, 0xffff, 0xffffffff}
	cfDSign = [4]uint32{0x8, 0x80, 0x8000, 0x80000000}
)

// cfEsc is the header count that says the count is in the byte after
// pcs[7].
const cfEsc = 15

// appendCFChunk appends the compact-fast encoding of a chunk that starts
// at table PC start with value v0 and has the changes chs inside it.
func appendCFChunk(dst []byte, v0 int32, chs []change, start uint32) []byte {
	n := len(chs)
	sv := v0 + 1
	w0 := width0(sv)
	mode := byte(0)
	for _, c := range chs {
		if d := c.val - v0; d < -8 || d > 7 {
			mode = max(mode, widthCode(d))
		}
	}
	nn := min(n, cfEsc)
	dst = append(dst, byte(nn)<<4|w0<<2|mode)
	for i, c := range chs {
		if i == 8 && nn == cfEsc {
			dst = append(dst, byte(n))
		}
		dst = append(dst, byte(c.pc-start))
	}
	dst = appendVal(dst, sv^int32(cfSign[w0]), w0)
	if mode == 0 {
		for i := 0; i < n; i += 2 {
			b := byte(chs[i].val-v0)&0xf ^ 8
			if i+1 < n {
				b |= (byte(chs[i+1].val-v0)&0xf ^ 8) << 4
			}
			dst = append(dst, b)
		}
		return dst
	}
	for _, c := range chs {
		dst = appendVal(dst, (c.val-v0)^int32(cfSign[mode]), mode)
	}
	return dst
}

// cfHead decodes the compact-fast chunk header at d[p:]: the number of
// changes, whether it is escaped, the start value and the delta mode. It
// reads only the chunk's bytes.
func cfHead(d []byte, p int) (n, esc int, sv int32, mode uint) {
	h := d[p]
	n = int(h >> 4)
	if n == cfEsc {
		n = int(d[p+9])
		esc = 1
	}
	w0 := (h >> 2) & 3
	sv = -1
	if w0 != 0 {
		sv += readVal(d, p+1+esc+n, w0) ^ -int32(cfSign[w0])
	}
	return n, esc, sv, uint(h & 3)
}

// cfDelta returns delta j of the chunk whose deltas start at d[q:], in
// mode mode, reading only its bytes.
func cfDelta(d []byte, q, j int, mode uint) int32 {
	if mode == 0 {
		b := d[q+j>>1]
		sh := uint(j&1) * 4
		return int32(int8(b>>sh<<4))>>4 ^ -8
	}
	return readVal(d, q+j*codeLen(byte(mode)), byte(mode)) ^ -int32(cfSign[mode])
}

// lookupCF is the compact-fast lookup for any data: it reads only the
// table's bytes.
func lookupCF(d []byte, base int, textLen, pc uint32) int32 {
	p := chunkOffset(d, base, textLen, pc)
	n, esc, v0, mode := cfHead(d, p)
	var i int
	if esc == 1 {
		i = countPCs(d, p+1, 8, byte(pc))
		if i == 8 {
			i += countPCs(d, p+10, n-8, byte(pc))
		}
	} else {
		i = countPCs(d, p+1, n, byte(pc))
	}
	if i == 0 {
		return v0
	}
	h := d[p]
	return v0 + cfDelta(d, p+1+esc+n+codeLen(h>>2&3), i-1, mode)
}

// lookupCFFast is the compact-fast lookup of pc in the table at d[off:],
// which must have at least window bytes (a Set's padding ensures it).
func lookupCFFast(d []byte, off uint, textLen, pc uint32) int32 {
	w := (*[window]byte)(d[off:])
	nidx := uint(textLen-1) >> 8 // number of index entries
	if textLen > fastMaxLen || w[0] >= 0xfe && nidx != 0 {
		return lookupCFFar(d, off, textLen, pc)
	}
	// Index entry c-1, or offset 0 for chunk 0.
	c := uint(pc >> 8)
	e := uint(w[(c-1)&(window-1)]) & uint(int(0-c)>>(bits.UintSize-1))
	p := (nidx + e) & 511 // no-op: nidx <= 256 and e <= 255

	// The first 8 PCs are at p+1 whether or not the count is escaped (an
	// escaped count follows them), so they load in parallel with the
	// header. An escaped count is above 14, so the header's 15 has the
	// same firstPCs mask.
	h := uint(w[p])
	b, l := gtConsts(byte(pc))
	le := (gtBits(binary.LittleEndian.Uint64(w[p+1:p+9]), b, l) ^ msb) & firstPCs[h>>4]

	if le == msb && h >= 8<<4 {
		return cfTail(d, off+p, byte(pc))
	}
	// An escaped count. The compiler makes this a branch, not a
	// conditional move; it measured faster than selecting with masks
	// although 4-6% of the benchmark samples take it (44 of the 1,024
	// random ones).
	n, nesc, esc := h>>4, uint(w[p+9]), uint(0)
	if n == cfEsc {
		n, esc = nesc, 1
	}
	w0 := h >> 2 & 3
	qs := (p + 1 + esc + n) & 1023 // the start value, <= 768
	v0 := int32(binary.LittleEndian.Uint32(w[qs:qs+4])&cfMask[w0]) - cfBias0[w0]
	mode := h & 3
	qd := qs + cfLens[w0] // the deltas, <= 772
	// i = number of PCs <= the target (0..7); delta i-1 is at bit
	// (i-1)*4<<mode, masked to 0 if i == 0.
	i := uint(bits.OnesCount64(le)) & 7
	im := uint(int(0-i) >> (bits.UintSize - 1))
	bit := ((i - 1) & 7) * cfBits[mode] // < 8*32
	x := binary.LittleEndian.Uint32(w[(qd+bit>>3)&(window-1):]) >> (bit & 4) & cfDMask[mode]
	return v0 + (int32(x)-int32(cfDSign[mode]))&int32(im)
}

// lookupCFFar is lookupCFFast for the tables whose chunks the window from
// the table's start may not reach.
//
//go:noinline
func lookupCFFar(d []byte, off uint, textLen, pc uint32) int32 {
	return lookupCF(d, int(off), textLen, pc)
}

// cfTail returns the value at the PC whose low byte is lo in the chunk at
// d[p:], which has 8 or more PCs, the first 8 of them <= lo. It may read
// past the chunk, into a Set's padding at worst.
//
//go:noinline
func cfTail(d []byte, p uint, lo byte) int32 {
	n, esc, v0, mode := cfHead(d, int(p))
	var i int
	if esc == 1 {
		i = 8 + countLE(d, int(p+10), n-8, lo)
	} else {
		i = countLE(d, int(p+1), n, lo)
	}
	qd := uint(int(p) + 1 + esc + n + codeLen(d[p]>>2&3))
	bit := uint(i-1) * cfBits[mode]
	x := binary.LittleEndian.Uint32(d[qd+bit>>3:]) >> (bit & 4) & cfDMask[mode]
	return v0 + int32(x) - int32(cfDSign[mode])
}
