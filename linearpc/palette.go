package linearpc

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"
)

// The cf-palette and cf-palette-short variants.
//
// Their chunks are compact-fast's, except for delta mode 3: where
// compact-fast stores every delta in 4 bytes, they store a
// palette of the chunk's distinct deltas and, for each change, the index
// of its delta in the palette:
//
//	h      uint8    as compact-fast: n<<4 | w0<<2 | mode
//	pcs    [n]byte  as compact-fast (escaped count after pcs[7])
//	start  0-4 B    as compact-fast
//	mode 0-2: the deltas as compact-fast (nibbles, 1 or 2 bytes)
//	mode 3:
//	  desc  uint8    pw | ib<<2: the palette's width code (0 = signed
//	                 nibbles, 1, 2, 3 = 1, 2, 4 bytes) and the index
//	                 width, 1<<ib bits (1, 2, 4 or 8)
//	  idx   [n]      the palette index of each change's delta, 1<<ib bits
//	                 each, LSB first, padded to a byte
//	  pal   [k]      the distinct deltas in order of first use, excess-K
//	                 in width pw (nibbles two per byte, low first)
//
// In the cfps-offset variant a palette may also be an offset palette,
// marked by bit 4 of desc (cpOffs): its entries are the lowest delta of
// each cluster of the chunk's deltas (sorted, a cluster spans at most 255),
// and each change has, after the indexes, a byte to add to its entry:
//
//	  desc  uint8    pw | ib<<2 | cpOffs
//	  idx   [n]      each change's cluster, 1<<ib bits each, as above
//	  off   [n]byte  each change's delta minus its cluster's entry
//	  pal   [k]      the clusters' lowest deltas, ascending, as above
//
// Inlined code makes pcln's deltas jump between the caller's lines and
// each callee's: two or three clusters of nearby lines, which compact-fast
// stores in 2 bytes per change and an offset palette in about 1.
//
// The encoder stores each chunk in the smallest of the forms (the uniform
// one on a tie, then the plain palette), so a chunk whose deltas need 4
// bytes is always a palette. A lookup in a palette chunk reads one more byte (the index)
// before the value: one more dependent load, on a branch taken only in
// palette chunks. The palette pays where a chunk's values repeat, as
// pcln's do when inlined calls alternate with their caller's lines.

// appendCPChunk appends the cf-palette encoding of a chunk that starts
// at table PC start with value v0 and has the changes chs inside it.
// With offs, the chunk may be an offset palette. A palette replaces the
// uniform form only where it saves at least minSave bytes, or where the
// deltas need 4 bytes.
func appendCPChunk(dst []byte, v0 int32, chs []change, start uint32, offs bool, minSave int) []byte {
	n := len(chs)
	mode := byte(0)
	for _, c := range chs {
		if d := c.val - v0; d < -8 || d > 7 {
			mode = max(mode, widthCode(d))
		}
	}
	plain := (n + 1) / 2
	if mode > 0 {
		plain = n * codeLen(mode)
	}
	// The palette form: distinct deltas in order of first use.
	var palBuf [256]int32
	var idxBuf [256]uint8
	pal := palBuf[:0]
	pw := byte(0)
	for i, c := range chs {
		d := c.val - v0
		k := 0
		for k < len(pal) && pal[k] != d {
			k++
		}
		if k == len(pal) {
			pal = append(pal, d)
			if d < -8 || d > 7 {
				pw = max(pw, widthCode(d))
			}
		}
		idxBuf[i] = uint8(k)
	}
	ib := indexWidth(len(pal))
	palCost := 1 + (n<<ib+7)>>3 + paletteLen(len(pal), pw)
	palette := n > 0 && (mode == 3 || palCost+minSave <= plain)
	var offBuf [256]uint8
	var off []uint8
	if offs && n > 0 {
		var cl [256]int32
		var cidx [256]uint8
		k, cpw := clusterPalette(chs, v0, &cl, &cidx, &offBuf)
		cib := indexWidth(k)
		if c := 1 + (n<<cib+7)>>3 + n + paletteLen(k, cpw); c < palCost && (mode == 3 || c+minSave <= plain) {
			pal, pw, ib, off, palette = cl[:k], cpw, cib, offBuf[:n], true
			idxBuf = cidx
		}
	}
	if palette {
		mode = 3
	}
	sv := v0 + 1
	w0 := width0(sv)
	nn := min(n, cfEsc)
	dst = append(dst, byte(nn)<<4|w0<<2|mode)
	for i, c := range chs {
		if i == 8 && nn == cfEsc {
			dst = append(dst, byte(n))
		}
		dst = append(dst, byte(c.pc-start))
	}
	dst = appendVal(dst, sv^int32(cfSign[w0]), w0)
	if !palette {
		return appendDeltas(dst, chs, v0, mode)
	}
	desc := pw | ib<<2
	if off != nil {
		desc |= cpOffs
	}
	dst = append(dst, desc)
	b := uint(1) << ib
	at := len(dst)
	for range (n<<ib + 7) >> 3 {
		dst = append(dst, 0)
	}
	for i := range n {
		bit := uint(i) * b
		dst[at+int(bit>>3)] |= idxBuf[i] << (bit & 7)
	}
	dst = append(dst, off...)
	if pw == 0 {
		for i := 0; i < len(pal); i += 2 {
			x := byte(pal[i])&0xf ^ 8
			if i+1 < len(pal) {
				x |= (byte(pal[i+1])&0xf ^ 8) << 4
			}
			dst = append(dst, x)
		}
		return dst
	}
	for _, d := range pal {
		dst = appendVal(dst, d^int32(cfSign[pw]), pw)
	}
	return dst
}

// cpOffs is the bit of a palette chunk's descriptor that marks an offset
// palette.
const cpOffs = 0x10

// The rare forms.
//
// A lookup takes a branch to a palette chunk's or a short table's code.
// Where the lookups that land there are a small fraction, a predictor
// learns to expect the common path (compact-fast's uniform chunk) and
// mispredicts each of them, which costs more than the rare form's own
// code; where lookups repeat, it learns them. So cfps-offset takes a rare
// form only where it saves rareMinSave bytes: cpRare bytes for each
// lookup that it takes off the common path, counting each function's
// table as looked up alike and its PCs uniformly (lookupbench's
// "references" sampling). A short table takes every lookup of its table:
// it must save cpRare bytes. A palette chunk of u units in a table of
// tlen takes u/tlen of them: it must save cpRare*u/tlen bytes, rounded
// up, at least 1. TestRealRareShare measures what this keeps off the
// rare paths, and at what size (docs/size.md, "Rare forms").
const cpRare = 6

// rareMinSave is the saving a palette chunk of units PC units in a table
// of tlen units must make in a variant whose rare cost is rare (0: any
// saving). It is computed in 64 bits, so it cannot wrap.
func rareMinSave(rare uint8, units, tlen uint32) int {
	if rare == 0 || tlen == 0 {
		return 1
	}
	return max(1, int((uint64(rare)*uint64(units)+uint64(tlen)-1)/uint64(tlen)))
}

// indexWidth returns the code ib of the palette index width, 1<<ib bits,
// for a palette of k entries.
func indexWidth(k int) byte {
	switch {
	case k <= 2:
		return 0
	case k <= 4:
		return 1
	case k <= 16:
		return 2
	}
	return 3
}

// paletteLen returns the bytes of k palette entries of width code pw
// (0 = nibbles).
func paletteLen(k int, pw byte) int {
	if pw == 0 {
		return (k + 1) / 2
	}
	return k * codeLen(pw)
}

// clusterPalette computes the offset palette of the changes chs from v0:
// it sets cl[:k] to the lowest delta of each cluster (the deltas sorted,
// each cluster starting at the first delta more than 255 above the
// previous cluster's start), and idx[i] and off[i] to change i's cluster
// and its delta minus the cluster's entry. It returns k and the entries'
// width code.
func clusterPalette(chs []change, v0 int32, cl *[256]int32, idx, off *[256]uint8) (int, byte) {
	var ds [256]int32
	for i, c := range chs {
		ds[i] = c.val - v0
	}
	sorted := ds[:len(chs)]
	slices.Sort(sorted)
	k := 0
	for _, d := range sorted {
		if k == 0 || int64(d)-int64(cl[k-1]) > 255 {
			cl[k] = d
			k++
		}
	}
	pw := byte(0)
	for _, b := range cl[:k] {
		if b < -8 || b > 7 {
			pw = max(pw, widthCode(b))
		}
	}
	for i, c := range chs {
		d := c.val - v0
		j := k - 1
		for cl[j] > d {
			j--
		}
		idx[i], off[i] = uint8(j), uint8(int64(d)-int64(cl[j]))
	}
	return k, pw
}

// appendDeltas appends the deltas of chs from v0 in compact-fast's uniform
// mode (0 = nibbles, 1, 2, 3 = 1, 2, 4 bytes), excess-K.
func appendDeltas(dst []byte, chs []change, v0 int32, mode byte) []byte {
	n := len(chs)
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

// cpPalette returns delta j of the palette chunk with n changes whose
// descriptor is at d[qd], reading only the chunk's bytes.
func cpPalette(d []byte, qd, n, j int) int32 {
	desc := d[qd]
	pw, ib := uint(desc&3), uint(desc>>2&3)
	bit := uint(j) << ib
	x := d[qd+1+int(bit>>3)] >> (bit & 7) & (1<<(1<<ib) - 1)
	q := qd + 1 + (n<<ib+7)>>3
	if desc&cpOffs == 0 {
		return cfDelta(d, q, int(x), pw)
	}
	return cfDelta(d, q+n, int(x), pw) + int32(d[q+j])
}

// lookupCP is the lookup of both palette variants for any data: it reads only the
// table's bytes.
func lookupCP(d []byte, base int, textLen, pc uint32) int32 {
	if textLen > ChunkUnits && d[base] == cpShort {
		return lookupCPShort(d, base, pc)
	}
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
	qd := p + 1 + esc + n + codeLen(d[p]>>2&3)
	if mode == 3 {
		return v0 + cpPalette(d, qd, n, i-1)
	}
	return v0 + cfDelta(d, qd, i-1, mode)
}

// cpPalFast is cpPalette with word loads that may read past the chunk, into
// a Set's padding at worst.
func cpPalFast(d []byte, qd, n, j uint) int32 {
	desc := d[qd]
	pw, ib := uint(desc&3), uint(desc>>2&3)
	bit := j << ib
	x := uint(d[qd+1+bit>>3]) >> (bit & 7) & (1<<(1<<ib) - 1)
	q := qd + 1 + (n<<ib+7)>>3
	var o int32
	if desc&cpOffs != 0 {
		// An offset palette: the change's byte, then the entries after
		// all n of them. (Read only here: in a plain palette q+j may lie
		// past the chunk.)
		o = int32(d[q+j])
		q += n
	}
	pbit := x * cfBits[pw]
	y := binary.LittleEndian.Uint32(d[q+pbit>>3:]) >> (pbit & 4) & cfDMask[pw]
	return int32(y) - int32(cfDSign[pw]) + o
}

// lookupCPFar is lookupCPFast for the tables whose chunks the window from
// the table's start may not reach.
//
//go:noinline
func lookupCPFar(d []byte, off uint, textLen, pc uint32) int32 {
	return lookupCP(d, int(off), textLen, pc)
}

// cpTail is cfTail for palette-variant chunks.
//
//go:noinline
func cpTail(d []byte, p uint, lo byte) int32 {
	n, esc, v0, mode := cfHead(d, int(p))
	var i int
	if esc == 1 {
		i = 8 + countLE(d, int(p+10), n-8, lo)
	} else {
		i = countLE(d, int(p+1), n, lo)
	}
	qd := uint(int(p) + 1 + esc + n + codeLen(d[p]>>2&3))
	if mode == 3 {
		return v0 + cpPalFast(d, qd, uint(n), uint(i-1))
	}
	bit := uint(i-1) * cfBits[mode]
	x := binary.LittleEndian.Uint32(d[qd+bit>>3:]) >> (bit & 4) & cfDMask[mode]
	return v0 + int32(x) - int32(cfDSign[mode])
}

// Short tables.
//
// A cf-palette-short table of two or more chunks with at most cpShortMax
// changes after its first PC and at most 32,768 units long may instead be
// stored whole, without index or chunks, when that is smaller:
//
//	0xfd   uint8       the marker (a 1-byte index never starts with it)
//	h      uint8       n<<4 | w0<<2 | mode, as a compact-fast chunk header
//	pcs    [n]uint16   the PCs of the changes after PC 0, little-endian
//	                   (below 1<<15, so 4 compare at once in a word)
//	start  0-4 B       the value at PC 0, as a compact-fast start value
//	deltas             as compact-fast: the value after each change minus
//	                   the start value, all in the width of mode
//
// Lookups branch to it on the marker (the marker is in the
// first byte: see cpShortFast). Constant tables of several chunks, and the short PCDATA tables of long functions
// (ArgLiveIndex, PanicBounds), are most of them.

const (
	cpShort    = 0xfd // marker of a short table
	cpShortMax = 7    // changes after PC 0 a short table holds
	cpShortLen = 1 << 15
)

// appendCPShort appends the short form of the table with changes chs (the
// first at PC 0), or reports false if the table cannot have one.
func appendCPShort(dst []byte, chs []change, tlen uint32) ([]byte, bool) {
	n := len(chs) - 1
	if n > cpShortMax || tlen > cpShortLen || tlen <= ChunkUnits {
		return dst, false
	}
	v0 := chs[0].val
	mode := byte(0)
	for _, c := range chs[1:] {
		if d := c.val - v0; d < -8 || d > 7 {
			mode = max(mode, widthCode(d))
		}
	}
	sv := v0 + 1
	w0 := width0(sv)
	dst = append(dst, cpShort, byte(n)<<4|w0<<2|mode)
	for _, c := range chs[1:] {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(c.pc))
	}
	dst = appendVal(dst, sv^int32(cfSign[w0]), w0)
	return appendDeltas(dst, chs[1:], v0, mode), true
}

// lookupCPShort looks pc up in the short table at d[base:], reading only
// its bytes.
func lookupCPShort(d []byte, base int, pc uint32) int32 {
	h := d[base+1]
	n := int(h >> 4)
	q := base + 2
	i := 0
	for i < n && uint32(binary.LittleEndian.Uint16(d[q+2*i:])) <= pc {
		i++
	}
	w0 := h >> 2 & 3
	qs := q + 2*n
	v0 := int32(-1)
	if w0 != 0 {
		v0 += readVal(d, qs, w0) ^ -int32(cfSign[w0])
	}
	if i == 0 {
		return v0
	}
	return v0 + cfDelta(d, qs+codeLen(w0), i-1, uint(h&3))
}

// Lane constants of the short-table lookup: 16-bit lanes, their high bits.
const (
	lanes16 = 0x0001000100010001
	high16  = 0x8000800080008000
)

// shortLanes[n] masks the high bits of the first n 16-bit lanes of two
// words (n = 0..7; the header's count field reaches 15).
var shortLanes = func() (t [16][2]uint64) {
	for n := range 16 {
		for l := range min(n, 8) {
			t[n][l/4] |= 0x8000 << (16 * (l % 4))
		}
	}
	return t
}()

// lookupCPFast is the lookup of both palette variants of pc in the table at d[off:],
// which must have at least window bytes (a Set's padding ensures it).
//
// It is lookupCFFast with two additions. A short table is looked up
// alongside the chunk path without a branch: its PCs are compared with the
// target 4 at a time (each 16-bit lane holds 0x8000+pc-x, whose high bit
// says x <= pc), the chunk path reads a header forced to 0 (no changes,
// nothing read past the window), and a mask selects the short result. A
// palette chunk takes a branch to cpPalFast.
func lookupCPFast(d []byte, off uint, textLen, pc uint32) int32 {
	w := (*[window]byte)(d[off:])
	nidx := uint(textLen-1) >> 8
	if textLen > fastMaxLen || w[0] >= 0xfe && nidx != 0 {
		return lookupCPFar(d, off, textLen, pc)
	}
	if w[0] == cpShort && nidx != 0 {
		return cpShortFast(w, pc)
	}
	// The chunk path.
	c := uint(pc >> 8)
	e := uint(w[(c-1)&(window-1)]) & uint(int(0-c)>>(bits.UintSize-1))
	p := (nidx + e) & 511
	h := uint(w[p])
	b, l := gtConsts(byte(pc))
	le := (gtBits(binary.LittleEndian.Uint64(w[p+1:p+9]), b, l) ^ msb) & firstPCs[h>>4]
	if le == msb && h >= 8<<4 {
		return cpTail(d, off+p, byte(pc))
	}
	n, nesc, esc := h>>4, uint(w[p+9]), uint(0)
	if n == cfEsc {
		n, esc = nesc, 1
	}
	w0 := h >> 2 & 3
	qs := (p + 1 + esc + n) & 1023
	v0 := int32(binary.LittleEndian.Uint32(w[qs:qs+4])&cfMask[w0]) - cfBias0[w0]
	mode := h & 3
	qd := qs + cfLens[w0]
	i := uint((le>>7)*lsb>>56) & 7
	if mode == 3 {
		if i == 0 {
			return v0
		}
		return v0 + cpPalFast(d, off+qd, n, i-1)
	}
	im := uint(int(0-i) >> (bits.UintSize - 1))
	bit := ((i - 1) & 7) * cfBits[mode]
	x := binary.LittleEndian.Uint32(w[(qd+bit>>3)&(window-1):]) >> (bit & 4) & cfDMask[mode]
	return v0 + (int32(x)-int32(cfDSign[mode]))&int32(im)
}

// cpShortFast is lookupCPShort through a window from the table's start,
// without data-dependent branches: it compares the target with the PCs 4
// at a time (each 16-bit lane holds 0x8000+pc-x, whose high bit says x <=
// pc), in two words whatever n is, masking the lanes past n.
func cpShortFast(w *[window]byte, pc uint32) int32 {
	hs := uint(w[1])
	ns := hs >> 4
	tp := uint64(pc&0x7fff)*lanes16 | high16
	cnt := ((tp-binary.LittleEndian.Uint64(w[2:10]))&shortLanes[ns][0] + (tp-binary.LittleEndian.Uint64(w[10:18]))&shortLanes[ns][1]) >> 15
	is := uint(cnt*lanes16>>48) & 7
	w0s := hs >> 2 & 3
	qss := 2 + 2*(ns&7)
	v0s := int32(binary.LittleEndian.Uint32(w[qss:qss+4])&cfMask[w0s]) - cfBias0[w0s]
	ms := hs & 3
	qds := qss + cfLens[w0s]
	bits := ((is - 1) & 7) * cfBits[ms]
	xs := binary.LittleEndian.Uint32(w[(qds+bits>>3)&63:]) >> (bits & 4) & cfDMask[ms]
	return v0s + (int32(xs)-int32(cfDSign[ms]))&int32(0-(is+7)>>3)
}

// TryLookupPalette is [Set.TryLookup] for a set of the cf-palette or
// cf-palette-short variant: a leaf function (no calls, no frame) with lookupCPFast's code,
// which reports false (use [Set.Lookup]) for long tables, 4-byte indexes,
// chunks whose first 8 PCs lie at or below pc, offsets without a window of
// data after them, and sets of other variants. It is separate from
// TryLookup so that the spec's and compact-fast's leaf lookup keep their
// code. It trusts its input as Lookup does, and reads only within the
// set's data.
func (s *Set) TryLookupPalette(off32, textLen, pc uint32) (int32, bool) {
	d, off := s.data, uint(off32)
	if !s.cp || uint64(off)+window > uint64(len(d)) || textLen > fastMaxLen {
		return 0, false
	}
	w := (*[window]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(d)), off))
	nidx := uint(textLen-1) >> 8
	c := uint(pc >> 8)
	var p uint
	switch {
	case w[0] >= 0xfe && nidx != 0:
		// The 2-byte index form, as in TryLookup: the window moves to
		// the chunk; the 4-byte form is left to Lookup.
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
		off += q
	case w[0] == cpShort && nidx != 0:
		// A short table (see cpShortFast).
		hs := uint(w[1])
		ns := hs >> 4
		tp := uint64(pc&0x7fff)*lanes16 | high16
		cnt := ((tp-binary.LittleEndian.Uint64(w[2:10]))&shortLanes[ns][0] + (tp-binary.LittleEndian.Uint64(w[10:18]))&shortLanes[ns][1]) >> 15
		is := uint(cnt*lanes16>>48) & 7
		w0s := hs >> 2 & 3
		qss := 2 + 2*(ns&7)
		v0s := int32(le32(w, qss)&cfMask[w0s]) - cfBias0[w0s]
		ms := hs & 3
		qds := qss + cfLens[w0s]
		bits := ((is - 1) & 7) * cfBits[ms]
		xs := le32(w, (qds+bits>>3)&63) >> (bits & 4) & cfDMask[ms]
		return v0s + (int32(xs)-int32(cfDSign[ms]))&int32(0-(is+7)>>3), true
	default:
		// Index entry c-1, or offset 0 for chunk 0.
		e := uint(w[(c-1)&(window-1)]) & uint(int(0-c)>>(bits.UintSize-1))
		p = nidx + e
	}
	p &= 511 // no-op: nidx <= 256 and e <= 255
	h := uint(w[p])
	b, l := gtConsts(byte(pc))
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
	v0 := int32(le32(w, qs)&cfMask[w0]) - cfBias0[w0]
	mode := h & 3
	qd := qs + cfLens[w0]
	i := uint((le>>7)*lsb>>56) & 7
	if mode == 3 {
		// A palette chunk (see cpPalFast): the index of delta i-1, then
		// the palette entry, which may lie beyond the window, so the
		// loads are checked against the set's data.
		if i == 0 {
			return v0, true
		}
		avail := uint(len(d)) - off // >= window
		desc := *(*byte)(unsafe.Add(unsafe.Pointer(w), qd))
		pw, ib := uint(desc&3), uint(desc>>2&3)
		bit := (i - 1) << ib
		x := uint(*(*byte)(unsafe.Add(unsafe.Pointer(w), (qd+1+bit>>3)&1023))) >> (bit & 7) & (1<<(1<<ib) - 1)
		q := qd + 1 + (n<<ib+7)>>3
		f := uint(desc>>4) & 1 // an offset palette: a byte per change after the indexes
		pos := q + f*n + x*cfBits[pw]>>3
		if pos+4 > avail || q+i > avail {
			return 0, false
		}
		o := int32(*(*byte)(unsafe.Add(unsafe.Pointer(w), q+i-1))) & -int32(f)
		y := binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(unsafe.Pointer(w), pos))[:]) >> (x * cfBits[pw] & 4) & cfDMask[pw]
		return v0 + int32(y) - int32(cfDSign[pw]) + o, true
	}
	im := uint(int(0-i) >> (bits.UintSize - 1))
	bit := ((i - 1) & 7) * cfBits[mode]
	x := le32(w, (qd+bit>>3)&1023) >> (bit & 4) & cfDMask[mode]
	return v0 + (int32(x)-int32(cfDSign[mode]))&int32(im), true
}

// HasTryLookupPalette reports whether [Set.TryLookupPalette] serves s's
// variant (cf-palette and cf-palette-short).
func (s *Set) HasTryLookupPalette() bool { return s.cp }
