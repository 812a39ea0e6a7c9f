package rewrite

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// Replace mode on dynamically linked layouts (PIE, and executables linked
// by an external linker) moves, with .gopclntab, sections whose contents
// hold addresses: dynamic relocations, the .dynamic section's pointers, and
// the unwind tables .eh_frame_hdr and .eh_frame with their PC-relative
// pointers. The functions here bring those up to date. Moved sections other
// than the pclntab move by one delta, so pointers between them stay valid
// and only pointers across the moved range change.

// movableType reports whether replace mode can move a section of type t
// that follows .gopclntab in its segment, fixing what it holds.
func movableType(t elf.SectionType) bool {
	switch t {
	case elf.SHT_PROGBITS, elf.SHT_RELA, elf.SHT_REL, elf.SHT_DYNSYM, elf.SHT_STRTAB, elf.SHT_HASH,
		elf.SHT_GNU_HASH, elf.SHT_GNU_VERSYM, elf.SHT_GNU_VERNEED, elf.SHT_GNU_VERDEF, elf.SHT_NOTE:
		return true
	}
	return false
}

// relativeType returns the machine's R_*_RELATIVE relocation type.
func relativeType(m elf.Machine) (uint32, bool) {
	switch m {
	case elf.EM_X86_64:
		return uint32(elf.R_X86_64_RELATIVE), true
	case elf.EM_AARCH64:
		return uint32(elf.R_AARCH64_RELATIVE), true
	case elf.EM_386:
		return uint32(elf.R_386_RELATIVE), true
	case elf.EM_ARM:
		return uint32(elf.R_ARM_RELATIVE), true
	case elf.EM_PPC64:
		return uint32(elf.R_PPC64_RELATIVE), true
	case elf.EM_S390:
		return uint32(elf.R_390_RELATIVE), true
	case elf.EM_RISCV:
		return uint32(elf.R_RISCV_RELATIVE), true
	case elf.EM_LOONGARCH:
		return uint32(elf.R_LARCH_RELATIVE), true
	}
	return 0, false
}

// fixRelocs updates the dynamic relocations in out: the address each
// applies to (r_offset) if it moved, and a RELATIVE relocation's addend
// (the address it stores) if that moved. A relocation of a moduledata word
// takes the word's new value, which fixModuledata wrote (a word equal to the
// old pclntab address may be an end pointer of what precedes it, which
// only the moduledata's layout tells apart). REL relocations keep their
// addends in the words themselves, which are fixed where they are (or
// copied with them). words maps the old address of a word that moved to
// its new one where m cannot say (pcHeader.textStart, in a pcHeader that
// was re-encoded): a relocation of it moves with it. A RELATIVE addend
// equal to keep (if not 0), the table's old end where something else
// starts, stays unless it is a moduledata word's.
func fixRelocs(e *elfFile, out []byte, m remap, mdWords map[uint64]uint64, oldPcln uint64, words map[uint64]uint64, keep uint64) (string, error) {
	rel, known := relativeType(e.mach)
	o := e.order
	n, moved, addends := 0, 0, 0
	var wordNotes []string
	for si := range e.sects {
		s := &e.sects[si]
		if s.Type != uint32(elf.SHT_RELA) && s.Type != uint32(elf.SHT_REL) || s.Size == 0 {
			continue
		}
		rela := s.Type == uint32(elf.SHT_RELA)
		ent := map[[2]bool]uint64{{true, true}: 24, {true, false}: 16, {false, true}: 12, {false, false}: 8}[[2]bool{e.is64, rela}]
		if s.Entsize != ent || s.Off+s.Size > uint64(len(out)) {
			return "", fmt.Errorf("relocation section %s: %d-byte entries (want %d) or past the file", s.Name, s.Entsize, ent)
		}
		d := out[s.Off : s.Off+s.Size]
		for p := uint64(0); p+ent <= uint64(len(d)); p += ent {
			b := d[p:]
			var off, info uint64
			if e.is64 {
				off, info = o.Uint64(b), o.Uint64(b[8:])
			} else {
				off, info = uint64(o.Uint32(b)), uint64(o.Uint32(b[4:]))
			}
			typ := uint32(info)
			if !e.is64 {
				typ = uint32(info & 0xff)
			}
			n++
			nOff, in, err := m.addr(off)
			if w, ok := words[off]; ok {
				nOff, in, err = w, true, nil
				wordNotes = append(wordNotes, fmt.Sprintf("%s entry %d (type %d) moved from %#x to %#x, pcHeader.textStart of the new table", s.Name, p/ent, typ, off, w))
			}
			if err != nil {
				return "", fmt.Errorf("%s entry %d at %#x: %w", s.Name, p/ent, off, err)
			}
			if in && nOff != off {
				putWord(o, e.is64, b, nOff)
				moved++
			}
			if !rela || !known || typ != rel {
				continue
			}
			aAt := uint64(16)
			if !e.is64 {
				aAt = 8
			}
			var add uint64
			if e.is64 {
				add = o.Uint64(b[aAt:])
			} else {
				add = uint64(o.Uint32(b[aAt:]))
			}
			nAdd := add
			if w, ok := mdWords[off]; ok {
				nAdd = w
			} else if add != oldPcln && (keep == 0 || add != keep) {
				v, in, err := m.addr(add)
				if err != nil {
					return "", fmt.Errorf("%s entry %d (RELATIVE at %#x): %w", s.Name, p/ent, off, err)
				}
				if in {
					nAdd = v
				}
			}
			if nAdd != add {
				putWord(o, e.is64, b[aAt:], nAdd)
				addends++
			}
		}
	}
	if n == 0 {
		return "", nil
	}
	note := fmt.Sprintf("%d dynamic relocations: %d moved, %d RELATIVE addends updated", n, moved, addends)
	for _, w := range wordNotes {
		note += "; " + w
	}
	return note, nil
}

func putWord(o binary.ByteOrder, is64 bool, b []byte, v uint64) {
	if is64 {
		o.PutUint64(b, v)
	} else {
		o.PutUint32(b, uint32(v))
	}
}

// dynPtrTags are the .dynamic tags whose values are addresses.
var dynPtrTags = map[elf.DynTag]bool{
	elf.DT_PLTGOT: true, elf.DT_HASH: true, elf.DT_STRTAB: true, elf.DT_SYMTAB: true, elf.DT_RELA: true,
	elf.DT_INIT: true, elf.DT_FINI: true, elf.DT_REL: true, elf.DT_JMPREL: true, elf.DT_INIT_ARRAY: true,
	elf.DT_FINI_ARRAY: true, elf.DT_PREINIT_ARRAY: true, elf.DT_GNU_HASH: true, elf.DT_VERSYM: true,
	elf.DT_VERDEF: true, elf.DT_VERNEED: true,
}

// fixDynamic updates the address entries of the .dynamic section in out.
func fixDynamic(e *elfFile, out []byte, m remap) (string, error) {
	o := e.order
	fixed := 0
	for si := range e.sects {
		s := &e.sects[si]
		if s.Type != uint32(elf.SHT_DYNAMIC) {
			continue
		}
		ent := uint64(8)
		if e.is64 {
			ent = 16
		}
		if s.Off+s.Size > uint64(len(out)) {
			return "", fmt.Errorf("%s runs past the file", s.Name)
		}
		d := out[s.Off : s.Off+s.Size]
		for p := uint64(0); p+ent <= uint64(len(d)); p += ent {
			var tag, val uint64
			if e.is64 {
				tag, val = o.Uint64(d[p:]), o.Uint64(d[p+8:])
			} else {
				tag, val = uint64(o.Uint32(d[p:])), uint64(o.Uint32(d[p+4:]))
			}
			if tag == uint64(elf.DT_NULL) {
				break
			}
			if tag == 36 { // DT_RELR
				return "", fmt.Errorf("%s: packed relative relocations (DT_RELR) are not supported: their addresses are a bitmap that would have to be rebuilt", s.Name)
			}
			if !dynPtrTags[elf.DynTag(tag)] {
				continue
			}
			nv, in, err := m.addr(val)
			if err != nil {
				return "", fmt.Errorf("%s entry %v: %w", s.Name, elf.DynTag(tag), err)
			}
			if in && nv != val {
				putWord(o, e.is64, d[p+ent/2:], nv)
				fixed++
			}
		}
	}
	if fixed == 0 {
		return "", nil
	}
	return fmt.Sprintf(".dynamic: %d address entries updated", fixed), nil
}

// DWARF exception-header pointer encodings (LSB: .eh_frame and
// .eh_frame_hdr).
const (
	dwPEomit    = 0xff
	dwPEabsptr  = 0x00
	dwPEuleb128 = 0x01
	dwPEudata2  = 0x02
	dwPEudata4  = 0x03
	dwPEudata8  = 0x04
	dwPEsleb128 = 0x09
	dwPEsdata2  = 0x0a
	dwPEsdata4  = 0x0b
	dwPEsdata8  = 0x0c
	dwPEpcrel   = 0x10
	dwPEdatarel = 0x30
)

// ehFixer rewrites the encoded pointers of a moved unwind section in out.
type ehFixer struct {
	e       *elfFile
	out     []byte
	m       remap
	oldAddr uint64 // the section's old address
	newAddr uint64 // its new address
	off     uint64 // its offset in out
	size    uint64
	oldBase uint64 // datarel base: .eh_frame_hdr's old and new address
	newBase uint64
	fixed   int
}

// ptr rewrites the pointer with encoding enc at section offset p and
// returns its length.
func (x *ehFixer) ptr(p uint64, enc byte) (uint64, error) {
	if enc == dwPEomit {
		return 0, nil
	}
	o := x.e.order
	var n uint64
	switch enc & 0x0f {
	case dwPEabsptr:
		n = x.e.ptrSize()
	case dwPEudata2, dwPEsdata2:
		n = 2
	case dwPEudata4, dwPEsdata4:
		n = 4
	case dwPEudata8, dwPEsdata8:
		n = 8
	default:
		return 0, fmt.Errorf("pointer encoding %#x at %#x: variable-length or unknown formats cannot be rewritten in place", enc, x.oldAddr+p)
	}
	if p+n > x.size {
		return 0, fmt.Errorf("pointer at %#x runs past the section", x.oldAddr+p)
	}
	b := x.out[x.off+p : x.off+p+n]
	var v int64
	signed := enc&0x08 != 0
	switch n {
	case 2:
		v = int64(o.Uint16(b))
		if signed {
			v = int64(int16(v))
		}
	case 4:
		v = int64(o.Uint32(b))
		if signed {
			v = int64(int32(v))
		}
	case 8:
		v = int64(o.Uint64(b))
	}
	var oldRef, newRef uint64 // what the value is relative to
	switch enc & 0x70 {
	case 0:
	case dwPEpcrel:
		oldRef, newRef = x.oldAddr+p, x.newAddr+p
	case dwPEdatarel:
		oldRef, newRef = x.oldBase, x.newBase
	default:
		return 0, fmt.Errorf("pointer encoding %#x at %#x: unsupported application", enc, x.oldAddr+p)
	}
	target := uint64(int64(oldRef) + v)
	nt, _, err := x.m.addr(target)
	if err != nil {
		return 0, fmt.Errorf("pointer at %#x: %w", x.oldAddr+p, err)
	}
	nv := int64(nt - newRef)
	if nv == v {
		return n, nil
	}
	switch {
	case n == 2 && signed && nv != int64(int16(nv)), n == 2 && !signed && uint64(nv) > 0xffff,
		n == 4 && signed && nv != int64(int32(nv)), n == 4 && !signed && uint64(nv) > 0xffffffff:
		return 0, fmt.Errorf("pointer at %#x: new value %#x does not fit its %d bytes", x.oldAddr+p, nv, n)
	}
	switch n {
	case 2:
		o.PutUint16(b, uint16(nv))
	case 4:
		o.PutUint32(b, uint32(nv))
	case 8:
		o.PutUint64(b, uint64(nv))
	}
	x.fixed++
	return n, nil
}

// uleb reads an unsigned LEB128 at section offset p of the fixer's section.
func (x *ehFixer) uleb(p uint64) (uint64, uint64, error) {
	var v uint64
	for i := uint64(0); i < 10; i++ {
		if p+i >= x.size {
			break
		}
		c := x.out[x.off+p+i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("bad LEB128 at %#x", x.oldAddr+p)
}

// fixEHFrameHdr rewrites .eh_frame_hdr's pointers: to .eh_frame, and the
// search table's (initial location, FDE) pairs.
func (x *ehFixer) fixEHFrameHdr() error {
	if x.size < 4 || x.out[x.off] != 1 {
		return fmt.Errorf(".eh_frame_hdr at %#x: not version 1", x.oldAddr)
	}
	h := x.out[x.off : x.off+4]
	p := uint64(4)
	n, err := x.ptr(p, h[1])
	if err != nil {
		return err
	}
	p += n
	if h[2] == dwPEomit || h[3] == dwPEomit {
		return nil
	}
	if h[2]&0x70 != 0 || h[2]&0x0f != dwPEudata4 && h[2]&0x0f != dwPEsdata4 {
		return fmt.Errorf(".eh_frame_hdr at %#x: FDE count encoding %#x", x.oldAddr, h[2])
	}
	if p+4 > x.size {
		return fmt.Errorf(".eh_frame_hdr at %#x: truncated", x.oldAddr)
	}
	count := uint64(x.e.order.Uint32(x.out[x.off+p:]))
	p += 4
	for i := uint64(0); i < 2*count; i++ {
		n, err := x.ptr(p, h[3])
		if err != nil {
			return err
		}
		p += n
	}
	return nil
}

// fixEHFrame rewrites the pointers of .eh_frame's CIEs (personality) and
// FDEs (initial location, LSDA).
func (x *ehFixer) fixEHFrame() error {
	o := x.e.order
	type cie struct {
		fdeEnc, lsdaEnc byte
		z               bool
	}
	cies := map[uint64]cie{}
	for p := uint64(0); p+4 <= x.size; {
		length := uint64(o.Uint32(x.out[x.off+p:]))
		if length == 0 {
			p += 4
			continue
		}
		if length == 0xffffffff {
			return fmt.Errorf(".eh_frame entry at %#x: 64-bit DWARF is not supported", x.oldAddr+p)
		}
		start, end := p+4, p+4+length
		if end > x.size || length < 4 {
			return fmt.Errorf(".eh_frame entry at %#x: length %d runs past the section", x.oldAddr+p, length)
		}
		id := uint64(o.Uint32(x.out[x.off+start:]))
		if id == 0 {
			if length < 5 {
				return fmt.Errorf(".eh_frame CIE at %#x: %d bytes, too short for its version", x.oldAddr+p, length)
			}
			c := cie{fdeEnc: dwPEabsptr, lsdaEnc: dwPEomit}
			q := start + 5 // version
			augStart := q
			for q < end && x.out[x.off+q] != 0 {
				q++
			}
			aug := string(x.out[x.off+augStart : x.off+q])
			q++
			for range 2 { // code and data alignment factors
				_, n, err := x.uleb(q)
				if err != nil {
					return err
				}
				q += n
			}
			if x.out[x.off+start+4] == 1 {
				q++ // return address register
			} else {
				_, n, err := x.uleb(q)
				if err != nil {
					return err
				}
				q += n
			}
			if len(aug) > 0 && aug[0] == 'z' {
				c.z = true
				_, n, err := x.uleb(q)
				if err != nil {
					return err
				}
				q += n
				for _, a := range aug[1:] {
					if q >= end {
						return fmt.Errorf(".eh_frame CIE at %#x: augmentation data runs past it", x.oldAddr+p)
					}
					switch a {
					case 'R':
						c.fdeEnc = x.out[x.off+q]
						q++
					case 'L':
						c.lsdaEnc = x.out[x.off+q]
						q++
					case 'P':
						enc := x.out[x.off+q]
						n, err := x.ptr(q+1, enc&^0x80)
						if err != nil {
							return err
						}
						q += 1 + n
					case 'S', 'B', 'G':
					default:
						return fmt.Errorf(".eh_frame CIE at %#x: augmentation %q is not understood", x.oldAddr+p, aug)
					}
				}
			}
			cies[p] = c
		} else {
			cp := start - id // the CIE pointer is relative to its own position
			if id > start {
				return fmt.Errorf(".eh_frame FDE at %#x: CIE pointer %#x before the section", x.oldAddr+p, id)
			}
			c, ok := cies[cp]
			if !ok {
				return fmt.Errorf(".eh_frame FDE at %#x: no CIE at %#x", x.oldAddr+p, x.oldAddr+cp)
			}
			q := start + 4
			n, err := x.ptr(q, c.fdeEnc)
			if err != nil {
				return err
			}
			q += 2 * n // initial location, then the range (a length)
			if c.z {
				_, n, err := x.uleb(q)
				if err != nil {
					return err
				}
				q += n
				if c.lsdaEnc != dwPEomit {
					if _, err := x.ptr(q, c.lsdaEnc&^0x80); err != nil {
						return err
					}
				}
			}
		}
		p = end
	}
	return nil
}
