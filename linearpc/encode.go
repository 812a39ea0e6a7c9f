package linearpc

import (
	"encoding/binary"
	"math"

	"github.com/pctab/pctab/pcvalue"
)

// change is a PC at which a table's value differs from the value at the
// previous PC (or PC 0), with the new value.
type change struct {
	pc  uint32
	val int32
}

// changes returns the canonical form of t as a list of changes: the first
// element is at PC 0, runs of length zero are dropped, adjacent runs with
// equal values are merged, and runs that start at or beyond t.Len are
// dropped. It appends to buf.
func changes(buf []change, t pcvalue.Table) []change {
	for i, r := range t.Runs {
		if r.PC >= t.Len {
			break
		}
		if i+1 < len(t.Runs) && t.Runs[i+1].PC <= r.PC {
			continue // zero-length run: the next one wins
		}
		if len(buf) > 0 && buf[len(buf)-1].val == r.Value {
			continue
		}
		pc := r.PC
		if len(buf) == 0 {
			pc = 0
		}
		buf = append(buf, change{pc, r.Value})
	}
	return buf
}

// Canonical returns the canonical form of t: runs of length zero dropped,
// adjacent runs with equal values merged, runs at or past t.Len dropped.
// Two tables of the same length answer every lookup alike exactly when
// their canonical forms are equal, and the linear decoders return
// canonical tables.
func Canonical(t pcvalue.Table) pcvalue.Table {
	chs := changes(nil, t)
	out := pcvalue.Table{Len: t.Len}
	if len(chs) > 0 {
		out.Runs = make([]pcvalue.Run, len(chs))
		for i, c := range chs {
			out.Runs[i] = pcvalue.Run{PC: c.pc, Value: c.val}
		}
	}
	return out
}

// widthCode returns the vlen code (1, 2 or 3 for 1, 2 or 4 bytes) of the
// smallest of int8, int16 and int32 that holds v.
func widthCode(v int32) byte {
	switch {
	case v == int32(int8(v)):
		return 1
	case v == int32(int16(v)):
		return 2
	}
	return 3
}

// codeLen is the byte length of a value with vlen code c: 0, 1, 2 or 4 for
// c = 0, 1, 2, 3.
func codeLen(c byte) int {
	return int(c + (c>>1)&c&1)
}

// appendVal appends v in the width given by code c, little-endian.
func appendVal(dst []byte, v int32, c byte) []byte {
	switch c {
	case 0:
		return dst
	case 1:
		return append(dst, byte(v))
	case 2:
		return binary.LittleEndian.AppendUint16(dst, uint16(v))
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(v))
}

// Encode returns the spec encoding of t (see the package documentation).
// A table of length 0 encodes to nothing.
func Encode(t pcvalue.Table) []byte {
	return AppendEncode(nil, t)
}

// AppendEncode appends the spec encoding of t to dst and returns the
// extended slice. The encoding covers PCs 0..t.Len-1; t must be valid
// ([pcvalue.Table.Validate]). Zero-length runs and adjacent runs with equal
// values do not change the encoding.
func AppendEncode(dst []byte, t pcvalue.Table) []byte {
	var e encoder
	return e.appendTable(dst, t, Spec(), nil)
}

// encoder holds scratch space reused across tables.
type encoder struct {
	chs     []change
	body    []byte
	offs    []int64 // chunk offsets relative to the end of the index
	ends    []int   // end of each locally encoded chunk in body (-1: a reference)
	consts  []constChunk
	constAt map[int32]uint32 // value -> offset, once consts is long
	// Scratch space of appendPooled and buildPooled.
	alt, best, pooled     []byte
	pooledLocal           [][2]int
	found, target, newOff []int64
	poolOffs              []int64
}

// constChunk remembers the offset of a constant chunk for deduplication.
type constChunk struct {
	val int32
	off uint32
}

// appendTable appends the encoding of t in variant v to dst. With a
// non-nil pool (pool variants in a Set), chunks may refer to chunks in the
// pool instead of being stored.
func (e *encoder) appendTable(dst []byte, t pcvalue.Table, v Variant, pool *chunkPool) []byte {
	if t.Len == 0 {
		return dst
	}
	e.chs = changes(e.chs[:0], t)
	return e.appendChanges(dst, e.chs, t.Len, v, pool)
}

// appendChanges is appendTable for a table of length tlen (not 0) given as
// its canonical changes, which callers encoding one table in several
// variants compute once.
func (e *encoder) appendChanges(dst []byte, chs []change, tlen uint32, v Variant, pool *chunkPool) []byte {
	size := uint32(1) << v.shift
	nc := v.chunks(tlen)
	e.body = e.body[:0]
	e.offs = e.offs[:0]
	e.ends = e.ends[:0]
	e.consts = e.consts[:0]
	clear(e.constAt)
	j := 0 // next change to place
	var cur, first int32
	for c := range nc {
		start := uint32(c) << v.shift
		// The value at the chunk's first PC: the last change at or
		// before it.
		for j < len(chs) && chs[j].pc <= start {
			cur = chs[j].val
			j++
		}
		if c == 0 {
			first = cur
		}
		k := j
		for k < len(chs) && uint64(chs[k].pc) < uint64(start)+uint64(size) {
			k++
		}
		// Constant chunks are shared within the table. A compact chunk 0
		// stores its start value relative to -1 and the others relative
		// to chunk 0's, so chunk 0 is not shared there (compact-fast
		// chunks all store theirs relative to -1).
		if k == j && (c > 0 || v.kind != kindCompact) {
			if off, ok := e.findConst(cur); ok {
				e.offs = append(e.offs, int64(off))
				e.ends = append(e.ends, -1)
				continue
			}
			e.addConst(cur, uint32(len(e.body)))
		}
		e.offs = append(e.offs, int64(len(e.body)))
		switch v.kind {
		case kindCompact:
			ref := int32(-1)
			if c > 0 {
				ref = first
			}
			e.body = appendCompactChunk(e.body, cur, ref, chs[j:k], start)
		case kindCompactFast:
			e.body = appendCFChunk(e.body, cur, chs[j:k], start)
		case kindCompactPalette:
			e.body = appendCPChunk(e.body, cur, chs[j:k], start, v.offs, rareMinSave(v.rare, min(size, tlen-start), tlen))
		default:
			e.body = appendSpecChunk(e.body, cur, chs[j:k], start, v.shift)
		}
		e.ends = append(e.ends, len(e.body))
		if k > j {
			cur = chs[k-1].val
		}
		j = k
	}
	if pool == nil {
		start := len(dst)
		dst = appendIndex(dst, e.offs, v.pool)
		if v.kind != kindCompactPalette || nc < 2 {
			return append(dst, e.body...)
		}
		if dst[start] == cpShort {
			// The marker of a short table: use the 2-byte index form.
			dst = dst[:start]
			dst = append(dst, 0xfe)
			for _, o := range e.offs[1:] {
				dst = binary.LittleEndian.AppendUint16(dst, uint16(o))
			}
		}
		dst = append(dst, e.body...)
		if short, ok := appendCPShort(e.alt[:0], chs, tlen); ok && v.short {
			e.alt = short
			if len(short)+max(1, int(v.rare)) <= len(dst)-start {
				dst = append(dst[:start], short...)
			}
		}
		return dst
	}
	return e.appendPooled(dst, pool)
}

// findConst returns the offset of an earlier constant chunk with value v.
func (e *encoder) findConst(v int32) (uint32, bool) {
	if len(e.consts) <= 16 {
		for _, c := range e.consts {
			if c.val == v {
				return c.off, true
			}
		}
		return 0, false
	}
	if e.constAt == nil {
		e.constAt = map[int32]uint32{}
	}
	if len(e.constAt) == 0 {
		for _, c := range e.consts {
			if _, ok := e.constAt[c.val]; !ok {
				e.constAt[c.val] = c.off
			}
		}
	}
	off, ok := e.constAt[v]
	return off, ok
}

// addConst records a constant chunk with value v at offset off.
func (e *encoder) addConst(v int32, off uint32) {
	e.consts = append(e.consts, constChunk{v, off})
	if len(e.constAt) > 0 {
		if _, ok := e.constAt[v]; !ok {
			e.constAt[v] = off
		}
	}
}

// appendSpecChunk appends the spec encoding of one chunk that starts at
// table PC start with value v0 and has the changes chs strictly inside it
// (PCs relative to the table). For chunks of 512 units (shift 9) the count
// is a uint16 followed by a byte holding how many PCs lie in the first 256
// units, and each PC is stored as its low byte; otherwise the count is one
// byte.
func appendSpecChunk(dst []byte, v0 int32, chs []change, start uint32, shift uint8) []byte {
	n := len(chs)
	if shift > 8 {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(n))
		k := 0
		for k < n && chs[k].pc-start < 256 {
			k++
		}
		dst = append(dst, byte(k))
	} else {
		dst = append(dst, byte(n))
	}
	for _, c := range chs {
		dst = append(dst, byte(c.pc-start))
	}
	vstart := len(dst)
	for range (n + 4) / 4 {
		dst = append(dst, 0)
	}
	code := widthCode(v0)
	dst[vstart] |= code
	dst = appendVal(dst, v0, code)
	for i, c := range chs {
		d := c.val - v0
		code := widthCode(d)
		k := i + 1
		dst[vstart+k/4] |= code << (uint(k%4) * 2)
		dst = appendVal(dst, d, code)
	}
	return dst
}

// appendIndex appends the chunk index for chunk offsets offs (offs[0] is
// always 0 and is not stored). With signed set, the 2- and 4-byte forms
// hold signed offsets (pool variants); the spec's are unsigned.
func appendIndex(dst []byte, offs []int64, signed bool) []byte {
	if len(offs) <= 1 {
		return dst
	}
	rest := offs[1:]
	lo, hi := rest[0], rest[0]
	for _, o := range rest {
		lo, hi = min(lo, o), max(hi, o)
	}
	switch {
	case lo >= 0 && hi <= 0xff && rest[0] < 0xfe:
		for _, o := range rest {
			dst = append(dst, byte(o))
		}
	case !signed && hi <= 0xffff, signed && lo >= math.MinInt16 && hi <= math.MaxInt16:
		dst = append(dst, 0xfe)
		for _, o := range rest {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(o))
		}
	default:
		dst = append(dst, 0xff)
		for _, o := range rest {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(o))
		}
	}
	return dst
}

// indexLen returns the length of the index appendIndex would write.
func indexLen(offs []int64, signed bool) int {
	if len(offs) <= 1 {
		return 0
	}
	rest := offs[1:]
	lo, hi := rest[0], rest[0]
	for _, o := range rest {
		lo, hi = min(lo, o), max(hi, o)
	}
	switch {
	case lo >= 0 && hi <= 0xff && rest[0] < 0xfe:
		return len(rest)
	case !signed && hi <= 0xffff, signed && lo >= math.MinInt16 && hi <= math.MaxInt16:
		return 1 + 2*len(rest)
	}
	return 1 + 4*len(rest)
}

// chunks returns the number of chunks of v a table of length tlen has.
func (v Variant) chunks(tlen uint32) int {
	return int((uint64(tlen) + uint64(1)<<v.shift - 1) >> v.shift)
}
