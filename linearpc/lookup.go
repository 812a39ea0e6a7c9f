package linearpc

import (
	"encoding/binary"
	"math/bits"
)

// SWAR constants: the low and high bit of every byte of a uint64.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// Lookup returns the value at pc of the spec-encoded table at the start of
// data, which covers textLen PC-quantum units (pc and textLen are in
// PC-quantum units).
//
// Lookup trusts its input: pc must be below textLen and data must start with
// an encoding produced by [Encode] for a table of length textLen (other
// bytes may follow). Lookup never reads outside data, so on malformed input
// it may panic with an index error or return a wrong value, but it reads
// nothing else. Use [LookupChecked] for untrusted data, and [Set.Lookup] for
// the fastest path.
//
// If data is at least 1024 bytes long (as when it runs to the end of the
// encodings of a whole binary), Lookup takes the same mostly branch-free
// path as [Set.Lookup], reading only within the first 1024 bytes.
func Lookup(data []byte, textLen, pc uint32) int32 {
	if len(data) >= window {
		// The fast path reads at most window bytes.
		return lookupFast(data, 0, textLen, pc)
	}
	return lookupBounded(data, textLen, pc)
}

// lookupBounded is Lookup for any data: it checks where its word loads
// would read past data, and reads bytes there.
func lookupBounded(data []byte, textLen, pc uint32) int32 {
	p := chunkOffset(data, 0, textLen, pc)
	n := int(data[p])
	lo := byte(pc)
	var i int
	if q := p + 1; q+8 <= len(data) {
		// The usual case: one word holds the first 8 PCs (or the
		// chunk's later bytes, masked off).
		x := binary.LittleEndian.Uint64(data[q:])
		loLow := uint64(lo&0x7f) * lsb
		loHigh := uint64(lo>>7) * msb
		cmp := (loLow | msb) - (x &^ msb)
		ok := ((cmp &^ x) | (loHigh &^ x) | (loHigh & cmp)) & msb
		ok &= ^uint64(0) >> (64 - 8*min(uint(n), 8))
		i = bits.OnesCount64(ok)
		if i == 8 && n > 8 {
			i = countLE(data, q, n, lo)
		}
	} else {
		for i < n && data[q+i] <= lo {
			i++
		}
	}
	vl := p + 1 + n
	vals := vl + (n+4)>>2
	v0 := readVal(data, vals, data[vl]&3)
	if i == 0 {
		return v0
	}
	var off int
	var c byte
	if i < 32 && vl+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[vl:])
		m := w & (1<<(2*uint(i)) - 1)
		off = bits.OnesCount64(m) + bits.OnesCount64(m&hi2) + bits.OnesCount64(m&(m>>1)&lo2)
		c = byte(w>>(2*uint(i))) & 3
	} else {
		off, c = valOffset(data, vl, i)
	}
	return v0 + readVal(data, vals+off, c)
}

// chunkOffset returns the offset in data of the chunk holding pc, for the
// spec-encoded table at data[base:].
func chunkOffset(data []byte, base int, textLen, pc uint32) int {
	if textLen <= ChunkUnits {
		return base
	}
	nidx := int(textLen-1) >> 8 // number of stored offsets
	c := int(pc >> 8)
	switch data[base] {
	case 0xfe:
		p := base + 1 + 2*nidx
		if c > 0 {
			p += int(binary.LittleEndian.Uint16(data[base+2*c-1:]))
		}
		return p
	case 0xff:
		p := base + 1 + 4*nidx
		if c > 0 {
			p += int(binary.LittleEndian.Uint32(data[base+4*c-3:]))
		}
		return p
	}
	p := base + nidx
	if c > 0 {
		p += int(data[base+c-1])
	}
	return p
}

// countLE returns how many of the n ascending bytes at data[q:] are <= lo.
// It reads whole 8-byte words and requires q+8 <= len(data); bytes past
// the n counted ones are ignored.
func countLE(data []byte, q, n int, lo byte) int {
	// For each byte x, cmp has its high bit set iff x&0x7f <= lo&0x7f
	// (the subtraction never borrows across bytes). Combining with the
	// high bits of x and lo gives x <= lo.
	loLow := uint64(lo&0x7f) * lsb
	var loHigh uint64
	if lo&0x80 != 0 {
		loHigh = msb
	}
	i := 0
	for {
		if q+i+8 > len(data) {
			for i < n && data[q+i] <= lo {
				i++
			}
			return i
		}
		x := binary.LittleEndian.Uint64(data[q+i:])
		cmp := (loLow | msb) - (x &^ msb)
		ok := ((cmp &^ x) | (loHigh &^ x) | (loHigh & cmp)) & msb
		if rem := n - i; rem < 8 {
			ok &= 1<<(8*uint(rem)) - 1
			return i + bits.OnesCount64(ok)
		}
		k := bits.OnesCount64(ok)
		i += k
		if k < 8 || i == n {
			return i
		}
	}
}

// vlenSum[b] is the total byte length of the four values whose 2-bit
// codes are packed in b (code 0 counts as 0).
var vlenSum = func() (t [256]uint8) {
	for b := range t {
		for k := 0; k < 4; k++ {
			t[b] += uint8(codeLen(byte(b>>(2*k)) & 3))
		}
	}
	return t
}()

// valOffset returns the byte offset of value i (i >= 1) from vals[0], and
// its width code, for the vlen array at data[vl:].
func valOffset(data []byte, vl, i int) (off int, code byte) {
	for j := 0; j < i>>2; j++ {
		off += int(vlenSum[data[vl+j]])
	}
	b := data[vl+i>>2]
	sh := uint(i&3) * 2
	off += int(vlenSum[b&(1<<sh-1)])
	return off, (b >> sh) & 3
}

// readVal reads the little-endian value of width code c at data[off].
func readVal(data []byte, off int, c byte) int32 {
	switch c {
	case 1:
		return int32(int8(data[off]))
	case 2:
		return int32(int16(binary.LittleEndian.Uint16(data[off:])))
	}
	return int32(binary.LittleEndian.Uint32(data[off:]))
}
