package linearpc

import (
	"encoding/binary"
	"math/bits"
)

// The fast spec lookup.
//
// A lookup over random tables and PCs is dominated by branches that a
// predictor cannot learn (how many chunks, which index form, chunk 0 or
// not, how many PCs are below the target, which value widths), so
// lookupFast computes the common case without data-dependent branches:
//
//   - It reads through a window of [window] bytes from the start of the
//     table, a fixed-size array: after one bounds check, every load in it
//     is provably in bounds. The window holds the whole index and the
//     chunk when the table is at most fastMaxLen units long and uses the
//     1-byte index form. Other tables move the window to the chunk, which
//     they find with branches: 9 of the 1,024 random samples of the go
//     command (and 269 of the pc4096 ones) have a 2-byte index.
//   - The index entry of chunk c is loaded at c-1 (masked into the window)
//     and masked to 0 for chunk 0; a one-chunk table has no entries and
//     c = 0, so the same arithmetic gives its chunk at offset 0.
//   - It compares the first 8 PCs of the chunk with the target at once
//     (SWAR) and masks off those past n. Since the PCs ascend, the ones at
//     or below the target are bytes 0..i-1. Only when all 8 are (so that
//     i may be 8 or more) does it take a slow path: 46 of the 1,024
//     random samples.
//   - A table spreads the byte lengths of values 0..7 into the bytes of a
//     word. Masks made from the comparison keep bytes 0..i-1 of it, whose
//     sum (by a multiplication) is the offset of vals[i], and byte i, its
//     length. For i == 0 the second mask is empty, so the length is 0.
//   - Both values are read with one 4-byte load each, then masked and
//     sign-extended by table (sxMask, sxSign), indexed by length; length
//     0 yields 0, so that i == 0 needs no branch.

const (
	// window is the number of bytes the fast lookup may read from the
	// start of a table. A Set keeps this much padding after its last
	// table ([SetPad]); [Lookup] takes the fast path only if data is at
	// least this long.
	window = 1024
	// fastMaxLen is the longest table the fast path handles: its index
	// has at most 256 entries, so with the 1-byte form the chunk starts
	// within 256+255 bytes of the table, and what the fast path reads of
	// the chunk (count, 8 PCs, vlen word, values 0 and i <= 7) lies
	// within 1+255+64+7*4+4 = 352 bytes of the chunk's start.
	fastMaxLen = 257 * ChunkUnits
)

// sxMask and sxSign mask and sign-extend a value of 1, 2 or 4 bytes read
// as a little-endian uint32: v = int32(x&mask^sign) - int32(sign), at the
// index of the value's length. At index 0 both are 0, which yields 0.
var (
	sxMask = [8]uint32{1: 0xff, 2: 0xffff, 4: 0xffffffff}
	sxSign = [8]uint32{1: 0x80, 2: 0x8000, 4: 0x80000000}
)

// lookupFast is the spec lookup of pc in the table at d[off:], which must
// have at least window bytes.
func lookupFast(d []byte, off uint, textLen, pc uint32) int32 {
	w := (*[window]byte)(d[off:])
	nidx := uint(textLen-1) >> 8 // number of index entries
	if textLen > fastMaxLen || w[0] >= 0xfe && nidx != 0 {
		return lookupFar(d, off, textLen, pc)
	}
	// Index entry c-1, or offset 0 for chunk 0.
	c := uint(pc >> 8)
	e := uint(w[(c-1)&(window-1)]) & uint(int(0-c)>>(bits.UintSize-1))
	p := (nidx + e) & 511 // no-op: nidx <= 256 and e <= 255
	n := uint(w[p])

	// le has the high bit of each of the first min(n, 8) PCs that are
	// <= pc&0xff: since the PCs ascend, the bytes 0..i-1.
	b, l := gtConsts(byte(pc))
	gt := gtBits(binary.LittleEndian.Uint64(w[p+1:p+9]), b, l)
	le := (gt ^ msb) & firstPCs[n]
	if le == msb && n >= 8 {
		return lookupChunk(d, off+p, n, byte(pc))
	}

	// The value: vals[0] plus, if i > 0, vals[i]. Spread the byte lengths
	// of values 0..7 into the bytes of lens. Then bytes 0..i-1 of lens
	// add up to the offset of vals[i], byte i is its length, and byte 0
	// that of vals[0]; a multiplication adds up the bytes a mask keeps.
	vl := p + 1 + n
	vw := binary.LittleEndian.Uint64(w[vl : vl+8])
	vals := vl + (n+4)>>2
	lens := uint64(vlenBytes[vw&0xff]) | uint64(vlenBytes[vw>>8&0xff])<<32
	before := le<<1 - le>>7 // 0xff in bytes 0..i-1
	voff := uint((lens&before)*lsb>>56) & 63
	li := uint((lens&(before<<8&^before))*lsb>>56) & 7 // 0 if i == 0
	l0 := uint(lens) & 7
	x0 := binary.LittleEndian.Uint32(w[vals:vals+4]) & sxMask[l0]
	xi := binary.LittleEndian.Uint32(w[vals+voff:vals+voff+4]) & sxMask[li]
	return int32(x0^sxSign[l0]) - int32(sxSign[l0]) + int32(xi^sxSign[li]) - int32(sxSign[li])
}

// lookupFar is lookupFast for the tables whose chunk the window from the
// table's start may not reach: long tables and 2- and 4-byte indexes. It
// finds the chunk with branches, then looks it up as a one-chunk table
// through a window from the chunk, if d extends that far.
//
//go:noinline
func lookupFar(d []byte, off uint, textLen, pc uint32) int32 {
	p := uint(chunkOffset(d, int(off), textLen, pc))
	if uint(len(d))-p < window {
		return lookupBounded(d[off:], textLen, pc)
	}
	return lookupFast(d, p, ChunkUnits, pc&(ChunkUnits-1))
}

// firstPCs[n] has the high bits of the first min(n, 8) bytes.
var firstPCs = func() (t [256]uint64) {
	for n := range t {
		t[n] = msb >> (64 - 8*min(n, 8))
	}
	return t
}()

// vlenBytes[b] holds the byte lengths of the four values whose width
// codes are packed in b, one per byte.
var vlenBytes = func() (t [256]uint32) {
	for b := range t {
		for k := 0; k < 4; k++ {
			t[b] |= uint32(codeLen(byte(b>>(2*k))&3)) << (8 * k)
		}
	}
	return t
}()

// lookupChunk returns the value at the PC whose low byte is lo in the
// spec chunk at d[p:], which has n >= 8 PCs, the first 8 of them <= lo. It
// reads only inside the chunk.
//
//go:noinline
func lookupChunk(d []byte, p, n uint, lo byte) int32 {
	i := countLE(d, int(p+1), int(n), lo) // >= 8
	vl := int(p + 1 + n)
	vals := vl + int(n+4)>>2
	off, c := valOffset(d, vl, i)
	return readVal(d, vals, d[vl]&3) + readVal(d, vals+off, c)
}

// gtConsts returns the constants with which gtBits compares bytes with
// lo: 255-lo in every byte, and the same without the high bits.
func gtConsts(lo byte) (b, l uint64) {
	b = complements[lo]
	return b, b &^ msb
}

// complements[lo] has 255-lo in every byte.
var complements = func() (t [256]uint64) {
	for lo := range t {
		t[lo] = uint64(255-lo) * lsb
	}
	return t
}()

// gtBits returns the high bits of the bytes of x above lo. b and l come
// from gtConsts(lo).
func gtBits(x, b, l uint64) uint64 {
	// A byte is above lo iff adding 255-lo to it carries out of it. The
	// carry out of bit 7 is the majority of the two bit 7s and of the
	// carry into bit 7, which the sum of the low 7 bits holds; those
	// sums do not carry across bytes.
	s7 := x&^msb + l
	return (x&b | (x|b)&s7) & msb
}
