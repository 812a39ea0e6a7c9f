package stackcompress

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A page holds the nodes first .. first+count-1 of a DAG as one byte slice,
// structure-of-arrays, identical in memory and on disk. All integers are
// little-endian.
//
//	offset  size  field
//	0       4     count: number of nodes in the page
//	4       1     frame width in bits (0..64)
//	5       1     parent kind: 1 absolute, 2 delta, 3 chain+delta, 4 chain+absolute
//	6       1     parent width in bits (0..64)
//	7       1     zero
//	8       8     frame base, added to every stored frame
//	16      8     parent base, added to every stored parent value
//	24      4     chain kinds: number of nodes whose parent is not the node before
//	28      4     zero
//	32            frames, count values, bit-packed, padded to 8 bytes
//	              absolute and delta kinds: parents, count values, padded to 8 bytes
//	              chain kinds: bitmap, 1 bit per node, padded to 8 bytes;
//	                rank directory, 4 bytes per 256 nodes, padded to 8 bytes;
//	                exception values, padded to 8 bytes
//	              8 zero bytes, so that a 64-bit load at any value is in bounds
//
// The stored value of the root (node 0) is frame 0 and parent 0, delta 0.
const (
	pageHeaderSize = 32
	tailPad        = 8
	rankBlock      = 256 // nodes per rank directory entry

	kindAbsolute   = 1
	kindDelta      = 2
	kindChainDelta = 3
	kindChainAbs   = 4
)

// page is a parsed view of an encoded page.
type page struct {
	data         []byte
	first        uint64 // index of the page's first node
	count        uint64
	fbits, pbits uint
	kind         uint8
	fbase, pbase uint64
	nexc         uint64
	framesBit    uint64 // bit offset of the frame array
	parentsBit   uint64 // bit offset of the parent or exception array
	bitmapOff    uint64 // chain kinds: byte offset of the bitmap
	rankOff      uint64 // chain kinds: byte offset of the rank directory
}

// frame returns the stored frame of the node at offset i of the page.
func (p *page) frame(i uint64) uint64 {
	return p.fbase + getBits(p.data, p.framesBit+i*uint64(p.fbits), p.fbits)
}

// parent returns the parent index of the node at offset i of the page.
// For a corrupt page whose contents changed after validation (a file
// rewritten under a mapping) the result may be any value; callers check it
// against the node's index. Every read stays inside the page: offsets come
// from the header fields parsed at validation, and the one value re-read
// from the data and used as an index, the rank directory's count, is
// checked against the exceptions the page holds (an impossible count gives
// idx, a parent that is not below its node).
func (p *page) parent(i uint64) uint64 {
	idx := p.first + i
	switch p.kind {
	case kindAbsolute:
		return p.pbase + getBits(p.data, p.parentsBit+i*uint64(p.pbits), p.pbits)
	case kindDelta:
		return idx - (p.pbase + getBits(p.data, p.parentsBit+i*uint64(p.pbits), p.pbits))
	}
	w := i >> 6
	word := binary.LittleEndian.Uint64(p.data[p.bitmapOff+8*w:])
	if word>>(i&63)&1 != 0 {
		return idx - 1
	}
	// rank of i among the nodes whose bit is clear
	blk := i / rankBlock
	r := uint64(binary.LittleEndian.Uint32(p.data[p.rankOff+4*blk:]))
	for k := blk * (rankBlock / 64); k < w; k++ {
		r += 64 - uint64(bits.OnesCount64(binary.LittleEndian.Uint64(p.data[p.bitmapOff+8*k:])))
	}
	r += i&63 - uint64(bits.OnesCount64(word&(uint64(1)<<(i&63)-1)))
	if r >= p.nexc {
		return idx
	}
	v := p.pbase + getBits(p.data, p.parentsBit+r*uint64(p.pbits), p.pbits)
	if p.kind == kindChainDelta {
		return idx - v
	}
	return v
}

// pageEncoding encodes pages in one layout.
type pageEncoding struct {
	layout    Layout
	pageShift uint // log2 of the nodes per page
}

// encode encodes the nodes first .. first+len(frames)-1, whose stored
// frames and absolute parents are given, into a new page. The builder
// guarantees that frames fit a fixed frame width and that parents are
// smaller than their node's index (the root's parent is 0).
func (e pageEncoding) encode(first uint64, frames, parents []uint64) []byte {
	n := uint64(len(frames))
	var fbase uint64
	fbits := uint(e.layout.FrameBits)
	if fbits == 0 && n > 0 {
		lo, hi := frames[0], frames[0]
		for _, f := range frames[1:] {
			lo = min(lo, f)
			hi = max(hi, f)
		}
		fbase, fbits = lo, bitLen(hi-lo)
	}
	var kind uint8
	var pbits uint
	var pbase, nexc uint64
	var parentBytes int
	var chain []bool
	switch e.layout.Parents {
	case ParentAbsolute:
		kind = kindAbsolute
		// The largest index this page can hold.
		last := (first>>e.pageShift+1)<<e.pageShift - 1
		pbits = byteWidth(bitLen(last))
		parentBytes, _ = packedBytes(n, pbits)
	case ParentDelta:
		kind = kindDelta
		var maxd uint64
		for i, p := range parents {
			maxd = max(maxd, first+uint64(i)-p)
		}
		pbits = byteWidth(bitLen(maxd))
		parentBytes, _ = packedBytes(n, pbits)
	case ParentChain:
		chain = make([]bool, n)
		dlo, dhi := ^uint64(0), uint64(0)
		alo, ahi := ^uint64(0), uint64(0)
		for i, p := range parents {
			idx := first + uint64(i)
			if idx > 0 && p == idx-1 {
				chain[i] = true
				continue
			}
			nexc++
			d := idx - p
			dlo, dhi = min(dlo, d), max(dhi, d)
			alo, ahi = min(alo, p), max(ahi, p)
		}
		kind = kindChainDelta
		if nexc > 0 {
			pbase, pbits = dlo, bitLen(dhi-dlo)
			if aw := bitLen(ahi - alo); aw < pbits {
				kind, pbase, pbits = kindChainAbs, alo, aw
			}
		}
		bm, _ := packedBytes(n, 1)
		ex, _ := packedBytes(nexc, pbits)
		parentBytes = bm + rankBytes(n) + ex
	}
	frameBytes, _ := packedBytes(n, fbits)
	size := pageHeaderSize + frameBytes + parentBytes + tailPad
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b[0:], uint32(n))
	b[4] = byte(fbits)
	b[5] = kind
	b[6] = byte(pbits)
	binary.LittleEndian.PutUint64(b[8:], fbase)
	binary.LittleEndian.PutUint64(b[16:], pbase)
	binary.LittleEndian.PutUint32(b[24:], uint32(nexc))
	off := uint64(pageHeaderSize) * 8
	for i, f := range frames {
		putBits(b, off+uint64(i)*uint64(fbits), fbits, f-fbase)
	}
	off += uint64(frameBytes) * 8
	switch kind {
	case kindAbsolute:
		for i, p := range parents {
			putBits(b, off+uint64(i)*uint64(pbits), pbits, p)
		}
	case kindDelta:
		for i, p := range parents {
			putBits(b, off+uint64(i)*uint64(pbits), pbits, first+uint64(i)-p)
		}
	default:
		bmOff := off / 8
		bm, _ := packedBytes(n, 1)
		rankOff := bmOff + uint64(bm)
		excBit := (rankOff + uint64(rankBytes(n))) * 8
		var r uint64
		for i, p := range parents {
			if uint64(i)%rankBlock == 0 {
				binary.LittleEndian.PutUint32(b[rankOff+4*(uint64(i)/rankBlock):], uint32(r))
			}
			if chain[i] {
				b[bmOff+uint64(i)/8] |= 1 << (i % 8)
				continue
			}
			v := p
			if kind == kindChainDelta {
				v = first + uint64(i) - p
			}
			putBits(b, excBit+r*uint64(pbits), pbits, v-pbase)
			r++
		}
	}
	return b
}

// rankBytes is the size of the rank directory of a chain page of n nodes.
func rankBytes(n uint64) int {
	return int((n+rankBlock-1)/rankBlock*4+7) / 8 * 8
}

// A CorruptError reports a DAG file or page that fails validation.
type CorruptError struct {
	Off int64  // byte offset of the problem in the file, or -1
	Msg string // what is wrong
}

// Error says what is corrupt and where.
func (e *CorruptError) Error() string {
	if e.Off < 0 {
		return "stackcompress: corrupt DAG: " + e.Msg
	}
	return fmt.Sprintf("stackcompress: corrupt DAG at offset %#x: %s", e.Off, e.Msg)
}

func corrupt(off int64, format string, args ...any) error {
	return &CorruptError{Off: off, Msg: fmt.Sprintf(format, args...)}
}

// parsePage parses and validates the page at file offset fileOff holding
// nodes first .. first+count-1. With check set it decodes every node and
// verifies that it is well formed: each parent is below its node, the root
// is frame 0 with parent 0, frames do not overflow, dictionary indices are
// below dictLen (when dict is set), and a chain page's directory and
// exception count are exact. The builder parses its own pages without check.
func parsePage(data []byte, fileOff int64, first, count uint64, dict bool, dictLen uint64, check bool) (page, error) {
	p := page{data: data, first: first}
	if len(data) < pageHeaderSize+tailPad {
		return p, corrupt(fileOff, "page of %d bytes is shorter than its header", len(data))
	}
	p.count = uint64(binary.LittleEndian.Uint32(data[0:]))
	if p.count != count {
		return p, corrupt(fileOff, "page holds %d nodes, want %d", p.count, count)
	}
	p.fbits, p.kind, p.pbits = uint(data[4]), data[5], uint(data[6])
	if p.fbits > 64 || p.pbits > 64 {
		return p, corrupt(fileOff+4, "bit widths %d and %d exceed 64", p.fbits, p.pbits)
	}
	if data[7] != 0 || binary.LittleEndian.Uint32(data[28:]) != 0 {
		return p, corrupt(fileOff+7, "reserved page header bytes are not zero")
	}
	p.fbase = binary.LittleEndian.Uint64(data[8:])
	p.pbase = binary.LittleEndian.Uint64(data[16:])
	p.nexc = uint64(binary.LittleEndian.Uint32(data[24:]))
	frameBytes, ok1 := packedBytes(count, p.fbits)
	var parentBytes int
	ok2 := true
	switch p.kind {
	case kindAbsolute, kindDelta:
		if p.pbits == 0 {
			// At least one bit per node bounds the nodes by the file size.
			return p, corrupt(fileOff+6, "parent width 0 in a page without a chain bitmap")
		}
		if p.nexc != 0 {
			return p, corrupt(fileOff+24, "exception count %d in a page without exceptions", p.nexc)
		}
		parentBytes, ok2 = packedBytes(count, p.pbits)
	case kindChainDelta, kindChainAbs:
		if p.nexc > count {
			return p, corrupt(fileOff+24, "exception count %d exceeds node count %d", p.nexc, count)
		}
		bm, _ := packedBytes(count, 1)
		ex, ok := packedBytes(p.nexc, p.pbits)
		parentBytes, ok2 = bm+rankBytes(count)+ex, ok
	default:
		return p, corrupt(fileOff+5, "unknown parent kind %d", p.kind)
	}
	if !ok1 || !ok2 {
		return p, corrupt(fileOff, "array sizes overflow")
	}
	want := int64(pageHeaderSize) + int64(frameBytes) + int64(parentBytes) + tailPad
	if int64(len(data)) != want {
		return p, corrupt(fileOff, "page is %d bytes, its header implies %d", len(data), want)
	}
	p.framesBit = pageHeaderSize * 8
	pOff := uint64(pageHeaderSize + frameBytes)
	p.parentsBit = pOff * 8
	if p.kind == kindChainDelta || p.kind == kindChainAbs {
		bm, _ := packedBytes(count, 1)
		p.bitmapOff = pOff
		p.rankOff = pOff + uint64(bm)
		p.parentsBit = (p.rankOff + uint64(rankBytes(count))) * 8
	}
	if !check {
		return p, nil
	}
	return p, p.check(fileOff, dict, dictLen)
}

// check decodes every node of p and validates it; see parsePage.
func (p *page) check(fileOff int64, dict bool, dictLen uint64) error {
	chainKind := p.kind == kindChainDelta || p.kind == kindChainAbs
	var r uint64 // exceptions seen
	for i := uint64(0); i < p.count; i++ {
		idx := p.first + i
		v := getBits(p.data, p.framesBit+i*uint64(p.fbits), p.fbits)
		if v > ^uint64(0)-p.fbase {
			return corrupt(fileOff, "frame of node %d overflows", idx)
		}
		f := p.fbase + v
		if idx == 0 && f != 0 {
			return corrupt(fileOff, "root node has frame %#x, want 0", f)
		}
		if dict && idx != 0 && f >= dictLen {
			return corrupt(fileOff, "node %d: frame index %d is outside the dictionary of %d", idx, f, dictLen)
		}
		var parent uint64
		var bad bool
		if chainKind {
			if i%rankBlock == 0 {
				got := uint64(binary.LittleEndian.Uint32(p.data[p.rankOff+4*(i/rankBlock):]))
				if got != r {
					return corrupt(fileOff+int64(p.rankOff+4*(i/rankBlock)), "rank directory entry %d is %d, want %d", i/rankBlock, got, r)
				}
			}
			if p.data[p.bitmapOff+i/8]>>(i%8)&1 != 0 {
				if idx == 0 {
					return corrupt(fileOff, "root node is marked as chained")
				}
				continue
			}
			if r >= p.nexc {
				return corrupt(fileOff+24, "more unchained nodes than the exception count %d", p.nexc)
			}
			sv := getBits(p.data, p.parentsBit+r*uint64(p.pbits), p.pbits)
			r++
			if sv > ^uint64(0)-p.pbase {
				return corrupt(fileOff, "parent of node %d overflows", idx)
			}
			v := p.pbase + sv
			if p.kind == kindChainDelta {
				parent, bad = idx-v, v > idx || (v == 0) != (idx == 0)
			} else {
				parent, bad = v, (idx == 0 && v != 0) || (idx != 0 && v >= idx)
			}
		} else {
			sv := getBits(p.data, p.parentsBit+i*uint64(p.pbits), p.pbits)
			if sv > ^uint64(0)-p.pbase {
				return corrupt(fileOff, "parent of node %d overflows", idx)
			}
			v := p.pbase + sv
			if p.kind == kindDelta {
				parent, bad = idx-v, v > idx || (v == 0) != (idx == 0)
			} else {
				parent, bad = v, (idx == 0 && v != 0) || (idx != 0 && v >= idx)
			}
		}
		if bad {
			return corrupt(fileOff, "node %d has parent %d, which is not below it", idx, parent)
		}
	}
	if chainKind {
		if r != p.nexc {
			return corrupt(fileOff+24, "exception count is %d, the bitmap has %d", p.nexc, r)
		}
		// Bits past the last node must be clear.
		if p.count%8 != 0 && p.data[p.bitmapOff+p.count/8]>>(p.count%8) != 0 {
			return corrupt(fileOff+int64(p.bitmapOff+p.count/8), "bitmap bits past the last node are set")
		}
	}
	return nil
}
