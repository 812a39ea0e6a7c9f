package linearpc

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"

	"github.com/pctab/pctab/pcvalue"
)

// SetPad is the number of zero bytes a [Set] keeps after its last
// encoding, so that its lookups can load whole words without bounds
// concerns. The spec lookup reads through a fixed-size window of this many
// bytes from the start of the table (or of the chunk), which lets the
// compiler drop the bounds checks inside it. The padding is kept once per
// set, not per table, and is not counted by [Set.Size].
const SetPad = window

// A Set holds the encodings of many tables in one byte slice, the way a
// binary's pctab holds all varint tables: identical encodings are stored
// once, and each table is addressed by its offset in the set. The set is
// followed by [SetPad] bytes of padding, which lets [Set.Lookup] use wide
// loads that may extend past the last table.
//
// The zero Set is not usable; call [NewSet].
type Set struct {
	v    Variant
	data []byte // encodings, then SetPad zero bytes
	// byHash finds stored encodings by a hash of their standalone bytes,
	// without keeping a second copy of them as map keys; a hit is confirmed
	// by comparing bytes, and the rare colliding encodings go to collide.
	byHash  hashIndex // hash -> index in stored
	stored  []stored
	collide map[string]uint32
	std     []byte // standalone encodings that differ from the stored bytes
	seed    maphash.Seed
	n       int
	enc     encoder
	buf     []byte
	pool    chunkPool
	spec    bool // v.IsSpec()
	cf      bool // v is compact-fast
	cp      bool // v is compact-palette
}

// NewSet returns an empty set of encodings in variant v ([Spec] for the
// spec format).
func NewSet(v Variant) *Set {
	return NewSetSize(v, 0, 0)
}

// NewSetSize is [NewSet] for a set expected to hold about tables distinct
// tables in about bytes bytes of encodings: it allocates for that much at
// once, which saves the copies and the garbage of growing. The set grows
// past the hint as needed.
func NewSetSize(v Variant, bytes, tables int) *Set {
	s := &Set{v: v, data: make([]byte, SetPad, max(0, bytes)+SetPad), byHash: newHashIndex(tables), stored: make([]stored, 0, max(0, tables)), seed: maphash.MakeSeed(), spec: v.IsSpec(), cf: v.kind == kindCompactFast, cp: v.kind == kindCompactPalette}
	if v.pool {
		// Tables average a few chunks, but most chunks are shared.
		s.pool.at = newHashIndex(tables)
		s.pool.data = &s.data
	}
	return s
}

// NewSetOf returns a set of variant v whose data is a copy of enc, the
// bytes of a set written elsewhere (the [Set.Bytes] of another set, a
// rewritten binary's pctab, a file of lookupbench's -pairs), so that the
// set's lookups serve the offsets of that layout. The set does not know
// where enc's tables start: [Set.Len] counts only the tables added later,
// and Add does not find its tables equal to enc's (it appends them).
func NewSetOf(v Variant, enc []byte) *Set {
	s := NewSetSize(v, len(enc), 0)
	s.data = append(append(s.data[:0], enc...), make([]byte, SetPad)...)
	return s
}

// stored locates one standalone encoding in a Set: n bytes at offset off
// of its data or, when the stored bytes differ from the standalone
// encoding (a pooled variant's table that refers to pooled chunks), at
// offset std-1 of its std.
type stored struct {
	off, n, std uint32
}

// find returns the offset of a stored encoding equal to enc.
func (s *Set) find(h uint64, enc []byte) (uint32, bool) {
	if i, ok := s.byHash.get(h); ok {
		st := s.stored[i]
		have := s.data[st.off : st.off+st.n]
		if st.std != 0 {
			have = s.std[st.std-1 : st.std-1+st.n]
		}
		if bytes.Equal(have, enc) {
			return st.off, true
		}
		off, ok := s.collide[string(enc)]
		return off, ok
	}
	return 0, false
}

// remember records that the table whose standalone encoding is enc is
// stored at off, the last encoding in data.
func (s *Set) remember(h uint64, enc []byte, off uint32) {
	if _, taken := s.byHash.get(h); taken {
		if s.collide == nil {
			s.collide = map[string]uint32{}
		}
		s.collide[string(enc)] = off
		return
	}
	st := stored{off: off, n: uint32(len(enc))}
	if !bytes.Equal(s.data[off:], enc) {
		st.std = uint32(len(s.std)) + 1
		s.std = append(s.std, enc...)
	}
	s.byHash.add(h, uint32(len(s.stored)))
	s.stored = append(s.stored, st)
}

// Variant returns the variant the set encodes with.
func (s *Set) Variant() Variant { return s.v }

// Add encodes t, stores the encoding unless an identical one is already in
// the set, and returns the offset of the encoding in the set. For a pooled
// variant, tables are identical when their standalone encodings are, and a
// new table's chunks may refer to identical chunks stored earlier in the
// set. A table of length 0 has an empty encoding; its offset is
// meaningless.
func (s *Set) Add(t pcvalue.Table) uint32 {
	size := s.Size()
	s.buf = s.enc.appendTable(s.buf[:0], t, s.v, nil)
	h := maphash.Bytes(s.seed, s.buf)
	if off, ok := s.find(h, s.buf); ok {
		return off
	}
	off := uint32(size)
	s.n++
	if s.v.pool && len(s.buf) > 0 {
		// The standalone encoding left its chunks in s.enc: pool them.
		s.pool.base = off
		s.data = s.enc.appendPooled(s.data[:size], &s.pool)
	} else {
		s.data = append(s.data[:size], s.buf...)
	}
	s.remember(h, s.buf, off)
	var pad [SetPad]byte
	s.data = append(s.data, pad[:]...)
	if s.v.pool {
		for _, c := range s.pool.local {
			s.pool.add(size+c[0], size+c[1])
		}
		s.pool.local = s.pool.local[:0]
	}
	return off
}

// Size returns the number of bytes of encodings in the set, without the
// padding: the sum of the lengths of the distinct encodings.
func (s *Set) Size() int { return len(s.data) - SetPad }

// Len returns the number of distinct encodings in the set.
func (s *Set) Len() int { return s.n }

// Bytes returns the set's encodings, without the padding. The slice
// aliases the set's storage until the next Add.
func (s *Set) Bytes() []byte { return s.data[:s.Size()] }

// Lookup returns the value at pc of the table whose encoding starts at
// offset off of the set and covers textLen PC-quantum units. Like [Lookup]
// it trusts its input: off must come from [Set.Add] of a table of length
// textLen, and pc must be below textLen.
//
// For the spec variant this is the fastest lookup in the package: it
// loads whole words without data-dependent branches in the common case,
// and the padding keeps its loads inside the set.
func (s *Set) Lookup(off, textLen, pc uint32) int32 {
	if s.spec {
		return lookupFast(s.data, uint(off), textLen, pc)
	}
	if s.cf {
		return lookupCFFast(s.data, uint(off), textLen, pc)
	}
	if s.cp {
		return lookupCPFast(s.data, uint(off), textLen, pc)
	}
	return s.lookupVariant(off, textLen, pc)
}

// LookupIn is [Set.Lookup] behind the range check a runtime makes first,
// since the format does not encode a table's length: it reports false,
// "not covered", for pc >= textLen, where Lookup's result is undefined.
func (s *Set) LookupIn(off, textLen, pc uint32) (int32, bool) {
	if pc >= textLen {
		return -1, false
	}
	return s.Lookup(off, textLen, pc), true
}

// lookupVariant is Lookup for the variants other than the spec.
func (s *Set) lookupVariant(off, textLen, pc uint32) int32 {
	if s.v.kind == kindCompact {
		return lookupCompactPadded(s.data, off, textLen, pc)
	}
	return s.v.lookupAt(s.data, off, textLen, pc)
}

// 2-bit field masks: the low and high bit of every 2-bit field.
const (
	lo2 = 0x5555555555555555
	hi2 = 0xaaaaaaaaaaaaaaaa
)

// readValWide reads the value of width code c at d[off] with one 4-byte
// load, which may extend past the value (into the padding at worst).
func readValWide(d []byte, off uint, c byte) int32 {
	x := binary.LittleEndian.Uint32(d[off:])
	sh := 32 - 8*uint(codeLen(c))
	return int32(x<<sh) >> sh
}

// chunkPosPadded returns the offset of the chunk holding pc in the table
// at d[p:], which has the spec's index.
func chunkPosPadded(d []byte, p uint, textLen, pc uint32) uint {
	if textLen > ChunkUnits {
		// The index entry of chunk c (c >= 1) is at entry c-1; for
		// chunk 0 an in-bounds byte is read and its offset forced to 0,
		// which avoids a hard-to-predict branch.
		nidx := uint(textLen-1) >> 8
		c := uint(pc >> 8)
		e := max(c, 1) - 1
		switch d[p] {
		case 0xfe:
			o := uint(binary.LittleEndian.Uint16(d[p+1+2*e:]))
			if c == 0 {
				o = 0
			}
			return p + 1 + 2*nidx + o
		case 0xff:
			o := uint(binary.LittleEndian.Uint32(d[p+1+4*e:]))
			if c == 0 {
				o = 0
			}
			return p + 1 + 4*nidx + o
		}
		o := uint(d[p+e])
		if c == 0 {
			o = 0
		}
		return p + nidx + o
	}
	return p
}

// countFirst8 counts the PCs <= lo among the n ascending bytes at d[q:],
// loading one word (which the padding keeps in bounds) for the first 8.
func countFirst8(d []byte, q, n uint, lo byte) uint {
	x := binary.LittleEndian.Uint64(d[q:])
	loLow := uint64(lo&0x7f) * lsb
	loHigh := uint64(lo>>7) * msb
	cmp := (loLow | msb) - (x &^ msb)
	ok := ((cmp &^ x) | (loHigh &^ x) | (loHigh & cmp)) & msb
	ok &= ^uint64(0) >> (64 - 8*min(n, 8))
	i := uint(bits.OnesCount64(ok))
	if i == 8 && n > 8 {
		i = uint(countLE(d, int(q), int(n), lo))
	}
	return i
}

// lookupCompactPadded is the compact variant's lookup over a padded set.
func lookupCompactPadded(d []byte, off, textLen, pc uint32) int32 {
	base := uint(off)
	p := chunkPosPadded(d, base, textLen, pc)
	ref := int32(-1)
	if pc >= ChunkUnits {
		// The reference is chunk 0's start value.
		p0 := chunkPosPadded(d, base, textLen, 0)
		h0 := compactHdrs[d[p0]]
		ref += readValWide(d, p0+1+uint(h0.esc), h0.w0)
	}
	h := compactHdrs[d[p]]
	q := p + 1
	n := uint(h.n)
	if h.esc != 0 {
		n = uint(d[q])
		q++
	}
	v0 := ref + readValWide(d, q, h.w0)
	q += uint(codeLen(h.w0))
	i := countFirst8(d, q, n, byte(pc))
	if i == 0 {
		return v0
	}
	q += n
	switch h.mode {
	case modeNibble:
		b := d[q+(i-1)>>1]
		sh := ((i - 1) & 1) * 4
		return v0 + int32(int8(b>>sh<<4))>>4
	case modeMixed:
		o, c := valOffset(d, int(q), int(i-1))
		return v0 + readValWide(d, q+(n+3)>>2+uint(o), c)
	}
	return v0 + readValWide(d, q+(i-1)*uint(codeLen(h.mode)), h.mode)
}
