package linearpc

import "encoding/binary"

// The branchy spec lookup.
//
// lookupBranchy is the spec lookup written the plain way, as the
// golang/go#61984 reference decoder is: it finds the chunk with a test per
// index form, scans the chunk's PCs with a loop that stops at the first one
// above the target, sums the value lengths a byte of width codes at a time
// and reads each value with one 4-byte load. Every branch depends on the
// data, so it is fast when a predictor can learn them (the same pairs
// looked up in the same order, over and over) and slow when it cannot
// (lookupbench's hot-shuffled and cold patterns): see the README's lookup
// speed section for the measurements and doc.go for which lookup is fastest
// per pattern.

// LookupBranchy returns the same value as [Set.Lookup] for a set of the
// spec variant, with the branchy lookup (see the package documentation);
// for other variants it is [Set.Lookup]. It trusts its input as
// [Set.Lookup] does and reads only within the set and its padding.
func (s *Set) LookupBranchy(off, textLen, pc uint32) int32 {
	if !s.spec {
		return s.Lookup(off, textLen, pc)
	}
	return lookupBranchy(s.data, uint(off), textLen, pc)
}

// lookupBranchy is the branchy spec lookup of pc in the table at d[off:]; d
// must extend at least 4 bytes past the values of the chunk it reads (a
// Set's padding).
func lookupBranchy(d []byte, off uint, textLen, pc uint32) int32 {
	p := off
	if textLen > ChunkUnits {
		nidx := uint(textLen-1) >> 8
		c := uint(pc >> 8)
		switch d[off] {
		case 0xfe:
			p = off + 1 + 2*nidx
			if c > 0 {
				p += uint(binary.LittleEndian.Uint16(d[off+2*c-1:]))
			}
		case 0xff:
			p = off + 1 + 4*nidx
			if c > 0 {
				p += uint(binary.LittleEndian.Uint32(d[off+4*c-3:]))
			}
		default:
			p = off + nidx
			if c > 0 {
				p += uint(d[off+c-1])
			}
		}
	}
	n := uint(d[p])
	lo := byte(pc)
	pcs := d[p+1 : p+1+n]
	i := n
	for k, x := range pcs {
		if x > lo {
			i = uint(k)
			break
		}
	}
	vl := p + 1 + n
	vals := vl + (n+4)>>2
	v0 := readValWide(d, vals, d[vl]&3)
	if i == 0 {
		return v0
	}
	var voff uint
	for _, b := range d[vl : vl+i>>2] {
		voff += uint(vlenSum[b])
	}
	b := d[vl+i>>2]
	sh := (i & 3) * 2
	voff += uint(vlenSum[b&(1<<sh-1)])
	return v0 + readValWide(d, vals+voff, (b>>sh)&3)
}
