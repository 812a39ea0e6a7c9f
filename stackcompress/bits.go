package stackcompress

import (
	"encoding/binary"
	"math/bits"
)

// Values are packed least-significant bit first into little-endian bytes, so
// bit k of an array lives in byte k/8 at bit position k%8. The same bytes
// decode to the same values on every host; loads go through encoding/binary,
// which compiles to plain loads on little-endian machines and to
// byte-reversed loads on big-endian ones.

// getBits returns the w-bit value at bit offset off of b, for 0 <= w <= 64.
//
// The caller guarantees that b extends at least 8 bytes past the last byte
// of the array the value belongs to (every page ends in tailPad zero bytes),
// so the 8-byte window at off/8 and, for a value that straddles it, the byte
// after the window are in bounds.
func getBits(b []byte, off uint64, w uint) uint64 {
	if w == 0 {
		return 0
	}
	i := off >> 3
	s := uint(off & 7)
	v := binary.LittleEndian.Uint64(b[i:]) >> s
	if s+w > 64 {
		v |= uint64(b[i+8]) << (64 - s)
	}
	return v & (uint64(1)<<w - 1) // for w == 64 the shift yields 0 and the mask all ones
}

// putBits stores the low w bits of v at bit offset off of b, whose bits
// there must be zero. Like getBits it may touch the 8 bytes after the array.
func putBits(b []byte, off uint64, w uint, v uint64) {
	if w == 0 {
		return
	}
	if w < 64 {
		v &= uint64(1)<<w - 1
	}
	i := off >> 3
	s := uint(off & 7)
	binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])|v<<s)
	if s+w > 64 {
		b[i+8] |= byte(v >> (64 - s))
	}
}

// bitLen returns the number of bits needed to represent v (0 for 0).
func bitLen(v uint64) uint { return uint(bits.Len64(v)) }

// byteWidth rounds a bit width up to 8, 16, 32 or 64.
func byteWidth(w uint) uint {
	switch {
	case w <= 8:
		return 8
	case w <= 16:
		return 16
	case w <= 32:
		return 32
	}
	return 64
}

// packedBytes returns the bytes that n values of w bits occupy, rounded up
// to a multiple of 8 so that every array in a page starts 8-byte aligned.
// The second result is false if the size does not fit in an int.
func packedBytes(n uint64, w uint) (int, bool) {
	hi, lo := bits.Mul64(n, uint64(w))
	if hi != 0 || lo > 1<<50 {
		return 0, false
	}
	return int((lo + 63) / 64 * 8), true
}
