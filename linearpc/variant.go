package linearpc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/pctab/pctab/pcvalue"
)

// kind is the chunk layout of a variant.
type kind uint8

const (
	kindSpec           kind = iota // the spec's chunk layout
	kindCompact                    // the compact chunk layout (see the package doc)
	kindCompactFast                // the compact-fast chunk layout (see compactfast.go)
	kindCompactPalette             // compact-fast with palette chunks (see palette.go)
)

// A Variant is one way of encoding tables in the linear-index family: the
// spec format, or one of the experimental formats described in the package
// documentation. Every variant answers every lookup exactly like the spec
// encoding; they differ in size and speed. Variants are compared by Name.
type Variant struct {
	// Name identifies the variant in reports ("spec", "spec-128", ...).
	Name string
	// Doc is a one-line description. It changes whenever the variant's
	// encoding does, so that results cached with it can tell.
	Doc string

	kind  kind
	shift uint8 // a chunk covers 1<<shift PC-quantum units
	pool  bool  // chunks may refer to identical chunks of other tables in a Set
	short bool  // tables with few changes may be stored whole (kindCompactPalette)
	offs  bool  // palette chunks may add a byte to their entries (kindCompactPalette)
	rare  uint8 // bytes a rare form must save per lookup it takes (see rareMinSave)
}

// Spec returns the spec variant: the format exactly as specified, with
// 256-unit chunks. [Encode], [Lookup], [Decode] and [LookupChecked] use it.
func Spec() Variant {
	return Variant{Name: "spec", Doc: "the linear-index format as specified: 256-unit chunks", kind: kindSpec, shift: 8}
}

// Variants returns every variant, the spec first. The order is stable.
func Variants() []Variant {
	return []Variant{
		Spec(),
		{Name: "spec-128", Doc: "spec layout with 128-unit chunks", kind: kindSpec, shift: 7},
		{Name: "spec-512", Doc: "spec layout with 512-unit chunks: uint16 count, a byte counting the PCs in the first half, PCs stored as their low byte", kind: kindSpec, shift: 9},
		{Name: "spec-pool", Doc: "spec chunks; a Set stores each distinct chunk once and indexes may point into earlier tables (signed 2- and 4-byte index forms)", kind: kindSpec, shift: 8, pool: true},
		{Name: "compact", Doc: "compact chunks: one header byte for count and widths, start values relative to the table's first value, uniform nibble/byte widths or a delta vlen", kind: kindCompact, shift: 8},
		{Name: "compact-fast", Doc: "compact chunks with absolute start values and uniform delta widths only (no header table, no vlen, no chunk-0 reference), for a branch-free padded lookup", kind: kindCompactFast, shift: 8},
		{Name: "cf-palette", Doc: "compact-fast chunks, except that a chunk may store its distinct deltas once and a 1-8 bit palette index per change, when that is smaller", kind: kindCompactPalette, shift: 8},
		{Name: "cf-palette-short", Doc: "cf-palette, and a table of several chunks with at most 7 changes may be stored whole (16-bit PCs, no index), when that is smaller", kind: kindCompactPalette, shift: 8, short: true},
		{Name: "cfps-offset", Doc: "cf-palette-short, and a palette chunk may instead store the lowest delta of each cluster of deltas at most 255 apart, and per change a cluster index and a byte to add; each rare form (palette, short table) only where it saves 6 bytes per lookup it takes off the common path", kind: kindCompactPalette, shift: 8, short: true, offs: true, rare: cpRare},
	}
}

// VariantByName returns the variant named name ("" means the spec).
func VariantByName(name string) (Variant, error) {
	if name == "" {
		return Spec(), nil
	}
	var names []string
	for _, v := range Variants() {
		if v.Name == name {
			return v, nil
		}
		names = append(names, v.Name)
	}
	return Variant{}, fmt.Errorf("linearpc: unknown variant %q (have %s)", name, strings.Join(names, ", "))
}

// compact reports whether v has a compact chunk layout.
func (v Variant) compact() bool {
	return v.kind == kindCompact || v.kind == kindCompactFast || v.kind == kindCompactPalette
}

// IsSpec reports whether v is the spec variant.
func (v Variant) IsSpec() bool { return v.kind == kindSpec && v.shift == 8 && !v.pool }

// ChunkUnits returns the number of PC-quantum units one chunk of v covers.
func (v Variant) ChunkUnits() uint32 { return 1 << v.shift }

// Pooled reports whether v shares chunks between the tables of a [Set].
// Its standalone encodings ([Variant.Encode]) share nothing.
func (v Variant) Pooled() bool { return v.pool }

// Encode returns the standalone encoding of t in variant v.
func (v Variant) Encode(t pcvalue.Table) []byte {
	return v.AppendEncode(nil, t)
}

// AppendEncode appends the standalone encoding of t in variant v to dst.
func (v Variant) AppendEncode(dst []byte, t pcvalue.Table) []byte {
	var e encoder
	return e.appendTable(dst, t, v, nil)
}

// Lookup returns the value at pc of the standalone encoding in variant v
// at the start of data, for a table of length textLen. Like the package's
// [Lookup] it trusts its input and stays inside data.
func (v Variant) Lookup(data []byte, textLen, pc uint32) int32 {
	return v.lookupAt(data, 0, textLen, pc)
}

// LookupIn is [Variant.Lookup] behind the range check a runtime makes
// first: it reports false, "not covered", for pc >= textLen.
func (v Variant) LookupIn(data []byte, textLen, pc uint32) (int32, bool) {
	if pc >= textLen {
		return -1, false
	}
	return v.Lookup(data, textLen, pc), true
}

// lookupAt looks up pc in the table whose encoding starts at d[off].
func (v Variant) lookupAt(d []byte, off, textLen, pc uint32) int32 {
	switch {
	case v.kind == kindCompact:
		return lookupCompact(d, int(off), textLen, pc)
	case v.kind == kindCompactFast:
		return lookupCF(d, int(off), textLen, pc)
	case v.kind == kindCompactPalette:
		return lookupCP(d, int(off), textLen, pc)
	case v.IsSpec():
		return Lookup(d[off:], textLen, pc)
	}
	return lookupSpecGen(d, int(off), textLen, pc, v.shift, v.pool)
}

// chunkOffsetGen is chunkOffset for any chunk size, with signed 2- and
// 4-byte index forms when signed is set.
func chunkOffsetGen(d []byte, base int, textLen, pc uint32, shift uint8, signed bool) int {
	if textLen <= 1<<shift {
		return base
	}
	nidx := int((textLen - 1) >> shift)
	c := int(pc >> shift)
	switch d[base] {
	case 0xfe:
		p := base + 1 + 2*nidx
		if c > 0 {
			x := binary.LittleEndian.Uint16(d[base+2*c-1:])
			if signed {
				p += int(int16(x))
			} else {
				p += int(x)
			}
		}
		return p
	case 0xff:
		p := base + 1 + 4*nidx
		if c > 0 {
			x := binary.LittleEndian.Uint32(d[base+4*c-3:])
			if signed {
				p += int(int32(x))
			} else {
				p += int(x)
			}
		}
		return p
	}
	p := base + nidx
	if c > 0 {
		p += int(d[base+c-1])
	}
	return p
}

// countPCs returns how many of the n ascending bytes at d[q:] are <= lo,
// with word loads where they stay inside d.
func countPCs(d []byte, q, n int, lo byte) int {
	if q+8 <= len(d) {
		return countLE(d, q, n, lo)
	}
	i := 0
	for i < n && d[q+i] <= lo {
		i++
	}
	return i
}

// lookupSpecGen is the lookup for spec-layout variants of any chunk size.
func lookupSpecGen(d []byte, base int, textLen, pc uint32, shift uint8, signed bool) int32 {
	p := chunkOffsetGen(d, base, textLen, pc, shift, signed)
	lo := pc & (1<<shift - 1)
	var n, i, q int
	if shift > 8 {
		n = int(binary.LittleEndian.Uint16(d[p:]))
		k := int(d[p+2])
		q = p + 3
		if lo < 256 {
			i = countPCs(d, q, k, byte(lo))
		} else {
			i = k + countPCs(d, q+k, n-k, byte(lo))
		}
	} else {
		n = int(d[p])
		q = p + 1
		i = countPCs(d, q, n, byte(lo))
	}
	vl := q + n
	vals := vl + (n+4)>>2
	v0 := readVal(d, vals, d[vl]&3)
	if i == 0 {
		return v0
	}
	off, c := valOffset(d, vl, i)
	return v0 + readVal(d, vals+off, c)
}

// Compact chunk headers. The first byte h of a compact chunk selects:
//
//	h in [0, 4):     no changes; start value width code h
//	h in [4, 228):   n = 1 + (h-4)/16 changes (1..14); m = (h-4)%16:
//	                 start value width code m>>2, delta mode m&3
//	h in [228, 244): like the above with m = h-228, n in the next byte
//	h in [244, 248): start value width code h-244, delta mode "mixed",
//	                 n in the next byte
//	h in [248, 256): invalid
//
// Width codes 0..3 mean 0, 1, 2, 4 bytes (0: the start value equals the
// reference). Delta modes: 0 = every delta in a signed nibble, 1, 2, 3 =
// every delta in 1, 2, 4 bytes, 4 = mixed (a 2-bit width code per delta,
// packed like the spec's vlen).
const (
	compactInlineMax = 14
	compactUni       = 4
	compactUniEsc    = compactUni + 16*compactInlineMax // 228
	compactMixed     = compactUniEsc + 16               // 244
	compactInvalid   = compactMixed + 4                 // 248
	modeNibble       = 0
	modeMixed        = 4
)

// compactHdr is the decoded form of a compact chunk header byte.
type compactHdr struct {
	n    uint8 // number of changes, unless esc
	w0   uint8 // width code of the start value
	mode uint8 // delta mode
	esc  uint8 // 1 if n is in the next byte
}

var compactHdrs = func() (t [256]compactHdr) {
	for h := range t {
		switch {
		case h < compactUni:
			t[h] = compactHdr{w0: uint8(h)}
		case h < compactUniEsc:
			m := (h - compactUni) % 16
			t[h] = compactHdr{n: uint8(1 + (h-compactUni)/16), w0: uint8(m >> 2), mode: uint8(m & 3)}
		case h < compactMixed:
			m := h - compactUniEsc
			t[h] = compactHdr{w0: uint8(m >> 2), mode: uint8(m & 3), esc: 1}
		case h < compactInvalid:
			t[h] = compactHdr{w0: uint8(h - compactMixed), mode: modeMixed, esc: 1}
		default:
			t[h] = compactHdr{mode: 0xff}
		}
	}
	return t
}()

// width0 is the width code of a start value relative to its reference:
// 0 when it is equal.
func width0(sv int32) byte {
	if sv == 0 {
		return 0
	}
	return widthCode(sv)
}

// appendCompactChunk appends the compact encoding of a chunk that starts
// at table PC start with value v0 and has the changes chs inside it. ref is
// the reference the start value is stored relative to: -1 for chunk 0, the
// start value of chunk 0 for the others.
func appendCompactChunk(dst []byte, v0, ref int32, chs []change, start uint32) []byte {
	n := len(chs)
	sv := v0 - ref
	w0 := width0(sv)
	if n == 0 {
		dst = append(dst, w0)
		return appendVal(dst, sv, w0)
	}
	mode := byte(modeNibble)
	mixedVals := 0
	for _, c := range chs {
		d := c.val - v0
		code := widthCode(d)
		mixedVals += codeLen(code)
		if d < -8 || d > 7 {
			mode = max(mode, code)
		}
	}
	uniVals := (n + 1) / 2
	if mode != modeNibble {
		uniVals = n * codeLen(mode)
	}
	esc := 0
	if n > compactInlineMax {
		esc = 1
	}
	if 2+(n+3)/4+mixedVals < 1+esc+uniVals {
		mode = modeMixed
	}
	m := int(w0)<<2 | int(mode)
	switch {
	case mode == modeMixed:
		dst = append(dst, byte(compactMixed+int(w0)), byte(n))
	case esc == 1:
		dst = append(dst, byte(compactUniEsc+m), byte(n))
	default:
		dst = append(dst, byte(compactUni+16*(n-1)+m))
	}
	dst = appendVal(dst, sv, w0)
	for _, c := range chs {
		dst = append(dst, byte(c.pc-start))
	}
	switch mode {
	case modeNibble:
		for i := 0; i < n; i += 2 {
			b := byte(chs[i].val-v0) & 0xf
			if i+1 < n {
				b |= byte(chs[i+1].val-v0) << 4
			}
			dst = append(dst, b)
		}
	case modeMixed:
		vstart := len(dst)
		for range (n + 3) / 4 {
			dst = append(dst, 0)
		}
		for i, c := range chs {
			d := c.val - v0
			code := widthCode(d)
			dst[vstart+i/4] |= code << (uint(i%4) * 2)
			dst = appendVal(dst, d, code)
		}
	default:
		for _, c := range chs {
			dst = appendVal(dst, c.val-v0, mode)
		}
	}
	return dst
}

// readCode reads the value of width code c (0..3) at d[off]; code 0 is
// the value 0 and reads nothing.
func readCode(d []byte, off int, c uint8) int32 {
	if c == 0 {
		return 0
	}
	return readVal(d, off, c)
}

// lookupCompact is the lookup for the compact variant.
func lookupCompact(d []byte, base int, textLen, pc uint32) int32 {
	p := chunkOffset(d, base, textLen, pc)
	h := compactHdrs[d[p]]
	q := p + 1
	n := int(h.n)
	if h.esc != 0 {
		n = int(d[q])
		q++
	}
	v0 := readCode(d, q, h.w0)
	q += codeLen(h.w0)
	if pc >= ChunkUnits {
		// The reference is chunk 0's start value.
		p0 := chunkOffset(d, base, textLen, 0)
		h0 := compactHdrs[d[p0]]
		v0 += readCode(d, p0+1+int(h0.esc), h0.w0)
	}
	v0 += -1
	i := countPCs(d, q, n, byte(pc))
	if i == 0 {
		return v0
	}
	q += n
	switch h.mode {
	case modeNibble:
		b := d[q+(i-1)>>1]
		sh := uint((i-1)&1) * 4
		return v0 + int32(int8(b>>sh<<4))>>4
	case modeMixed:
		vals := q + (n+3)>>2
		off, c := valOffset(d, q, i-1)
		return v0 + readVal(d, vals+off, c)
	}
	return v0 + readVal(d, q+(i-1)*codeLen(h.mode), h.mode)
}

// chunkPool is the state of a pool variant's Set: where every distinct
// chunk encoding is, and where the next table will start.
type chunkPool struct {
	// at maps a hash of a chunk encoding to the chunk's offset in data, the
	// set's bytes; a hit is confirmed by comparing bytes, so the pool keeps no
	// copies of chunks. A chunk whose hash collides with a different stored
	// chunk is simply not pooled.
	at   hashIndex
	data *[]byte
	base uint32 // offset at which the table being encoded will start
	// local lists the chunks stored in the last encoding appendPooled
	// produced, as [start, end) offsets from the table start.
	local [][2]int
}

// find returns the offset of a stored chunk equal to chunk.
func (p *chunkPool) find(chunk []byte) (uint32, bool) {
	at, ok := p.at.get(fnv64(chunk))
	if !ok || uint64(at)+uint64(len(chunk)) > uint64(len(*p.data)) || !bytes.Equal((*p.data)[at:int(at)+len(chunk)], chunk) {
		return 0, false
	}
	return at, true
}

// add records that the chunk data[start:end] is stored there.
func (p *chunkPool) add(start, end int) {
	h := fnv64((*p.data)[start:end])
	p.at.add(h, uint32(start))
}

// fnv64 is the 64-bit FNV-1a hash: deterministic, so sizes are reproducible.
func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// appendPooled appends the encoding of the table in e (already split into
// local chunks by appendTable) choosing, among storing every chunk, referring
// to every pooled duplicate, and referring to the duplicates within reach
// of a 2-byte index, the shortest (the first of equally short ones, in that
// order). Candidates that cannot differ from an earlier one are not built:
// without pooled duplicates all three are the first, and without far ones
// the last two are the same.
func (e *encoder) appendPooled(dst []byte, pool *chunkPool) []byte {
	nc := len(e.offs)
	// Storing every chunk is the standalone encoding.
	e.alt = appendIndex(e.alt[:0], e.offs, true)
	L := len(e.alt)
	e.alt = append(e.alt, e.body...)
	pool.local = pool.local[:0]
	for c := range nc {
		if e.ends[c] >= 0 {
			pool.local = append(pool.local, [2]int{L + int(e.offs[c]), L + e.ends[c]})
		}
	}
	if nc == 1 {
		return append(dst, e.alt...) // chunk 0 is never pooled
	}
	// Where each chunk is pooled already (-1: nowhere).
	e.found = e.found[:0]
	near, far := false, false
	for c := range nc {
		at := int64(-1)
		if c > 0 && e.ends[c] >= 0 {
			if a, ok := pool.find(e.body[e.offs[c]:e.ends[c]]); ok {
				at = int64(a)
				if int64(pool.base)-at <= math.MaxInt16 {
					near = true
				} else {
					far = true
				}
			}
		}
		e.found = append(e.found, at)
	}
	best := e.alt
	for _, reach := range []int64{math.MaxInt16, math.MaxInt64} {
		if reach == math.MaxInt16 && !near || reach == math.MaxInt64 && !far {
			continue
		}
		e.pooled, e.pooledLocal = e.buildPooled(e.pooled[:0], e.pooledLocal[:0], pool, reach)
		if len(e.pooled) < len(best) {
			best = append(e.best[:0], e.pooled...)
			e.best = best
			pool.local = append(pool.local[:0], e.pooledLocal...)
		}
	}
	return append(dst, best...)
}

// buildPooled encodes the table in e, referring to the pooled chunks
// (e.found) whose distance back from the table start is at most reach. It
// appends the encoding to dst and the chunks it stores to local (as
// pool.local lists them).
func (e *encoder) buildPooled(dst []byte, local [][2]int, pool *chunkPool, reach int64) ([]byte, [][2]int) {
	nc := len(e.offs)
	// target[c] >= 0: absolute offset of a pooled chunk; -1: stored here.
	target := resize(e.target, nc)
	newOff := resize(e.newOff, nc)
	offs := resize(e.poolOffs, nc)
	e.target, e.newOff, e.poolOffs = target, newOff, offs
	bodyLen := int64(0)
	for c := range nc {
		target[c] = -1
		if e.ends[c] < 0 {
			continue
		}
		if at := e.found[c]; at >= 0 && int64(pool.base)-at <= reach {
			target[c] = at
			continue
		}
		newOff[c] = bodyLen
		bodyLen += int64(e.ends[c]) - e.offs[c]
	}
	// Duplicated constant chunks follow the chunk they duplicate, the
	// stored chunk at the same local offset (stored chunks' offsets
	// increase with c).
	for c := range nc {
		if e.ends[c] >= 0 {
			continue
		}
		o := e.owner(c)
		if target[o] < 0 {
			newOff[c] = newOff[o]
		} else {
			target[c] = target[o]
		}
	}
	for _, L := range []int64{int64(nc - 1), int64(1 + 2*(nc-1)), int64(1 + 4*(nc-1))} {
		for c := range nc {
			if target[c] >= 0 {
				offs[c] = target[c] - (int64(pool.base) + L)
			} else {
				offs[c] = newOff[c]
			}
		}
		if nc <= 1 || int64(indexLen(offs, true)) == L {
			break
		}
	}
	start := len(dst)
	dst = appendIndex(dst, offs, true)
	L := len(dst) - start
	for c := range nc {
		if target[c] < 0 && e.ends[c] >= 0 {
			s := L + int(newOff[c])
			local = append(local, [2]int{s, s + e.ends[c] - int(e.offs[c])})
			dst = append(dst, e.body[e.offs[c]:e.ends[c]]...)
		}
	}
	return dst, local
}

// owner returns the stored chunk that chunk c, a duplicated constant
// chunk, refers to: the one at the same offset. Stored chunks' offsets
// increase with their index, and the owner precedes c.
func (e *encoder) owner(c int) int {
	lo, hi := 0, c // the owner is in [lo, hi)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		// Find the last stored chunk at or before m.
		s := m
		for s >= lo && e.ends[s] < 0 {
			s--
		}
		switch {
		case s < lo:
			lo = m + 1
		case e.offs[s] == e.offs[c]:
			return s
		case e.offs[s] < e.offs[c]:
			lo = m + 1
		default:
			hi = s
		}
	}
	panic("linearpc: duplicated constant chunk without its stored chunk")
}

// resize returns s with length n, reusing its storage when it can.
func resize(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}
