package rewrite

import (
	"debug/elf"
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// relativeType is the R_*_RELATIVE relocation type of each machine:
// relocations whose addend (RELA) or word (REL) is an address in the file.
var relativeType = map[elf.Machine]uint32{
	elf.EM_X86_64:    uint32(elf.R_X86_64_RELATIVE),
	elf.EM_AARCH64:   uint32(elf.R_AARCH64_RELATIVE),
	elf.EM_386:       uint32(elf.R_386_RELATIVE),
	elf.EM_ARM:       uint32(elf.R_ARM_RELATIVE),
	elf.EM_RISCV:     uint32(elf.R_RISCV_RELATIVE),
	elf.EM_PPC64:     uint32(elf.R_PPC64_RELATIVE),
	elf.EM_S390:      uint32(elf.R_390_RELATIVE),
	elf.EM_LOONGARCH: uint32(elf.R_LARCH_RELATIVE),
}

// replaceSplit is replace mode for the ELF layouts replaceMode's group
// move does not handle: position-independent executables (ET_DYN) and
// external links, where .gopclntab is followed in its segment by sections
// that cannot move (.eh_frame_hdr and .eh_frame, whose entries are
// PC-relative; the dynamic linking sections, which .dynamic names by
// address).
//
// Only the pclntab moves. Its PT_LOAD segment is split in two: the first
// part keeps what precedes .gopclntab; a new PT_LOAD holds what follows it
// from the page where the old table ends, at the same addresses (the rest
// of the old table in that page is zeroed). The new table goes in a new
// read-only PT_LOAD above every other segment. In the file, the new table
// takes the old one's place, the split-off part follows it (at an offset
// congruent to its address modulo the page size), and everything after
// moves by a multiple of its alignment. The two new program headers go in
// the room after the program header table; when there is none (ld leaves
// none), PT_NOTE entries are given up for them (the notes stay in their
// sections). Pointers to the table are updated in the moduledata, in the
// symbol tables, and in the addends of the R_*_RELATIVE dynamic
// relocations that initialise the moduledata's words in a PIE.
func replaceSplit(e *elfFile, f *objscan.File, lt *linearTables, res *Result, pi, li int) ([]byte, error) {
	P := e.sects[pi]
	L := e.progs[li]
	if P.Addr == L.Vaddr {
		return nil, fmt.Errorf("unsupported layout: .gopclntab starts its segment (%#x); the segment would have to be replaced, not split", L.Vaddr)
	}
	if L.Off > P.Off || L.Off+L.Filesz > uint64(len(e.data)) || L.Off+L.Filesz < L.Off {
		return nil, fmt.Errorf("segment %d (%#x bytes at file offset %#x) lies outside the %d-byte file or after .gopclntab", li, L.Filesz, L.Off, len(e.data))
	}
	if L.Memsz < L.Filesz || P.Off-L.Off != P.Addr-L.Vaddr {
		return nil, fmt.Errorf("unsupported layout: .gopclntab's segment (%#x+%#x) is not mapped linearly", L.Vaddr, L.Memsz)
	}
	var pageAlign uint64 = 1
	for i := range e.progs {
		if e.progs[i].Type == uint32(elf.PT_LOAD) {
			pageAlign = max(pageAlign, e.progs[i].Align)
		}
	}
	tailAlign := max(16, P.Addralign)
	if pageAlign&(pageAlign-1) != 0 || tailAlign&(tailAlign-1) != 0 || tailAlign > pageAlign {
		return nil, fmt.Errorf("unsupported alignment: segments %#x, .gopclntab %#x", pageAlign, P.Addralign)
	}
	pEnd := P.Addr + P.Size
	lMemEnd, lFileEnd := L.Vaddr+L.Memsz, L.Off+L.Filesz
	hasTail := pEnd < lMemEnd
	tailStart := pEnd &^ (pageAlign - 1)
	if hasTail && tailStart <= P.Addr {
		return nil, fmt.Errorf("unsupported layout: .gopclntab (%d bytes at %#x) does not cross a %#x-byte page boundary, so its segment cannot be split around it", P.Size, P.Addr, pageAlign)
	}
	tailOff := L.Off + (tailStart - L.Vaddr) // in the old file
	// Nothing but the sections after .gopclntab may lie in the tail, and
	// no other segment may overlap .gopclntab.
	for i := range e.sects {
		s := &e.sects[i]
		if i == 0 || i == pi || s.nobits() || s.Size == 0 {
			continue
		}
		if s.Off < P.Off+P.Size && s.fileEnd() > P.Off {
			return nil, fmt.Errorf("unsupported layout: section %s overlaps .gopclntab's file bytes", s.Name)
		}
		if s.Off >= P.Off && s.Off < lFileEnd && (!s.alloc() || s.Addr < pEnd || s.Off-tailOff != s.Addr-tailStart) {
			return nil, fmt.Errorf("unsupported layout: section %s lies in .gopclntab's segment after it but is not mapped there", s.Name)
		}
	}
	for i := range e.progs {
		p := &e.progs[i]
		if i == li || p.Filesz == 0 && p.Memsz == 0 {
			continue
		}
		if p.Vaddr < pEnd && p.Vaddr+p.Memsz > P.Addr || p.Filesz > 0 && p.Off < P.Off+P.Size && p.Off+p.Filesz > P.Off {
			return nil, fmt.Errorf("unsupported layout: segment %d (%v) overlaps .gopclntab", i, elf.ProgType(p.Type))
		}
	}
	np, err := buildPclntab(f, lt, tailAlign)
	if err != nil {
		return nil, err
	}

	// Layout.
	var top uint64
	for i := range e.progs {
		if p := &e.progs[i]; p.Type == uint32(elf.PT_LOAD) {
			top = max(top, p.Vaddr+p.Memsz)
		}
	}
	gOff := P.Off
	gAddr := alignUp(top, pageAlign) + gOff%pageAlign
	gEnd := gOff + uint64(len(np.data))
	newEnd := gEnd // end of the new table and the split-off part in the file
	var l2Off, l2Filesz uint64
	if hasTail {
		l2Off = gEnd + (tailStart%pageAlign+pageAlign-gEnd%pageAlign)%pageAlign
		if tailOff < lFileEnd {
			l2Filesz = lFileEnd - tailOff
		}
		newEnd = l2Off + l2Filesz
	}
	// Everything from X, the first byte after the segment's, moves by D,
	// a multiple of the largest alignment of what follows.
	plan, err := e.planShift(lFileEnd, newEnd)
	if err != nil {
		return nil, err
	}
	X, D, newLen := plan.X, plan.D, plan.newLen
	mapOff := func(off uint64) uint64 {
		switch {
		case off >= X:
			return uint64(int64(off) + D)
		case hasTail && off >= tailOff && off <= lFileEnd:
			return l2Off + (off - tailOff)
		}
		return off
	}
	out := make([]byte, newLen)
	copy(out, e.data[:P.Off])
	copy(out[gOff:], np.data)
	remnant := uint64(0)
	if hasTail {
		copy(out[l2Off:], e.data[tailOff:lFileEnd])
		remnant = pEnd - tailStart
		clear(out[l2Off:min(l2Off+remnant, l2Off+l2Filesz)])
	}
	copy(out[X+uint64(D):], e.data[X:])

	// Section headers.
	oldShoff, oldShsize := e.shoff, uint64(len(e.sects))*e.shentsize
	for i := range e.sects {
		s := &e.sects[i]
		if i == pi {
			s.Addr, s.Off, s.Size = gAddr, gOff, uint64(len(np.data))
		} else if i != 0 && (s.Off >= lFileEnd || s.Off >= tailOff && s.Size > 0 && !s.nobits()) {
			s.Off = mapOff(s.Off)
		} else if i != 0 && s.nobits() && s.Off >= tailOff {
			s.Off = mapOff(min(s.Off, lFileEnd))
		}
	}
	// Program headers: L keeps its head; the tail and the new table get
	// new PT_LOADs, room for which may cost PT_NOTE entries.
	var notesDropped int
	for i := range e.progs {
		if p := &e.progs[i]; i != li && (p.Filesz > 0 || p.Off > 0) {
			p.Off = mapOff(p.Off)
		}
	}
	e.progs[li].Filesz = P.Addr - L.Vaddr
	e.progs[li].Memsz = P.Addr - L.Vaddr
	added := []elfProg{{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R), Off: gOff, Vaddr: gAddr, Paddr: gAddr,
		Filesz: uint64(len(np.data)), Memsz: uint64(len(np.data)), Align: L.Align}}
	if hasTail {
		added = append(added, elfProg{Type: uint32(elf.PT_LOAD), Flags: L.Flags, Off: l2Off, Vaddr: tailStart,
			Paddr: L.Paddr + (tailStart - L.Vaddr), Filesz: l2Filesz, Memsz: lMemEnd - tailStart, Align: L.Align})
	}
	limit := e.firstDataOff(e.ehsize())
	for e.phoff+uint64(len(e.progs)+len(added))*e.phentsize > limit {
		k := -1
		for i := range e.progs {
			if e.progs[i].Type == uint32(elf.PT_NOTE) {
				k = i
			}
		}
		if k < 0 {
			return nil, fmt.Errorf("no room for %d more program headers at %#x (section data starts at %#x) and no PT_NOTE entry left to give up; the program header table would have to move to a new segment", len(added), e.phoff, limit)
		}
		e.progs = append(e.progs[:k], e.progs[k+1:]...)
		notesDropped++
	}
	if hasTail {
		for k := range e.progs {
			if p := &e.progs[k]; p.Type == uint32(elf.PT_LOAD) && p.Vaddr == L.Vaddr {
				e.progs = append(e.progs[:k+1], append([]elfProg{added[1]}, e.progs[k+1:]...)...)
				break
			}
		}
	}
	loads := e.sortedLoads()
	ins := loads[len(loads)-1] + 1
	e.progs = append(e.progs[:ins], append([]elfProg{added[0]}, e.progs[ins:]...)...)
	for i := range e.progs {
		if p := &e.progs[i]; p.Type == uint32(elf.PT_PHDR) {
			p.Filesz = uint64(len(e.progs)) * e.phentsize
			p.Memsz = p.Filesz
		}
	}
	// A section header table that ends the file (ld's layout) is written
	// again at the new end; one elsewhere is cleared and left in place.
	dropped := oldShoff >= X && oldShoff+oldShsize == uint64(len(e.data))
	if dropped {
		out = out[:mapOff(oldShoff)]
	}
	before := uint64(len(out))
	shoff, err := e.placeTables(before)
	if err != nil {
		return nil, err
	}
	if o := mapOff(oldShoff); !dropped && o+oldShsize <= uint64(len(out)) && (oldShoff < P.Off || oldShoff >= X) {
		clear(out[o : o+oldShsize])
	}
	e.shoff = shoff
	if end := shoff + uint64(len(e.sects))*e.shentsize; end > uint64(len(out)) {
		out = appendZeros(out, end)
	}
	e.writeTables(out)

	// Pointers to the table.
	m := np.remap.shift(P.Addr, gAddr)
	mdNote, err := fixModuledata(e, f, out, m, pclnLenFix(f, np), P.Addr)
	if err != nil {
		return nil, err
	}
	symNote, err := fixSymbols(e, out, m, map[int]bool{pi: true})
	if err != nil {
		return nil, err
	}
	relNote, err := fixRelocs(e, out, m, P.Addr, pEnd)
	if err != nil {
		return nil, err
	}

	res.NewPclntab = int64(len(np.data))
	res.Parts = append(pclnParts(f, lt, np, tailAlign),
		Part{Name: "split-off rest of the segment", Old: int64(X - (P.Off + P.Size)), New: int64(X + uint64(D) - gEnd),
			Note: fmt.Sprintf("what followed .gopclntab, from the %#x-byte page where it ended (%d bytes of it zeroed), and later segments' alignment", pageAlign, remnant)},
	)
	res.Parts = append(res.Parts, headerTablePart(oldShoff, oldShsize, dropped, before, shoff, uint64(len(e.sects))*e.shentsize, uint64(len(out))))
	res.Notes = append(res.Notes,
		fmt.Sprintf("new PT_LOAD (R) for .gopclntab at address %#x, file offset %#x, %d bytes; the old segment keeps %d bytes", gAddr, gOff, len(np.data), P.Addr-L.Vaddr))
	if hasTail {
		res.Notes = append(res.Notes, fmt.Sprintf("new PT_LOAD for the rest of the old segment: address %#x (unchanged), file offset %#x, %d bytes", tailStart, l2Off, l2Filesz))
	}
	if notesDropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d PT_NOTE program header(s) given up for room; the notes stay in their sections", notesDropped))
	}
	res.Notes = append(res.Notes, fmt.Sprintf("file contents from offset %#x moved by %+d bytes", X, D), mdNote, symNote, relNote)
	return out, nil
}

// fixRelocs updates the dynamic relocations of out (an ELF file described
// by e, its headers already the output's) for the moved pclntab
// [oldStart, oldEnd): the addends of R_*_RELATIVE relocations (RELA) that
// point into it are mapped through m. A relocation of a word inside the
// old table cannot be kept: it is an error. REL relocations keep their
// addend in the relocated word, which the moduledata update rewrote.
func fixRelocs(e *elfFile, out []byte, m remap, oldStart, oldEnd uint64) (string, error) {
	o := e.order
	rel, hasRel := relativeType[e.mach]
	fixed, seen := 0, 0
	for si := range e.sects {
		s := &e.sects[si]
		isRela := s.Type == uint32(elf.SHT_RELA)
		if !isRela && s.Type != uint32(elf.SHT_REL) {
			continue
		}
		ent := map[[2]bool]uint64{{true, true}: 24, {true, false}: 16, {false, true}: 12, {false, false}: 8}[[2]bool{e.is64, isRela}]
		if s.Entsize != ent || s.Off+s.Size > uint64(len(out)) {
			return "", fmt.Errorf("relocation section %s: %d-byte entries (want %d) or outside the file", s.Name, s.Entsize, ent)
		}
		d := out[s.Off : s.Off+s.Size]
		for p := uint64(0); p+ent <= uint64(len(d)); p += ent {
			b := d[p:]
			var off, typ uint64
			if e.is64 {
				off, typ = o.Uint64(b), o.Uint64(b[8:])&0xffffffff
			} else {
				off, typ = uint64(o.Uint32(b)), uint64(o.Uint32(b[4:])&0xff)
			}
			seen++
			if s.alloc() && off >= oldStart && off < oldEnd {
				return "", fmt.Errorf("relocation %d of %s (type %d) at %#x lies in the old pclntab; it would have to move with the table", p/ent, s.Name, typ, off)
			}
			if !isRela || !hasRel || uint32(typ) != rel {
				continue
			}
			var add uint64
			if e.is64 {
				add = o.Uint64(b[16:])
			} else {
				add = uint64(o.Uint32(b[8:]))
			}
			na, in, err := m.addr(add)
			if !in {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("relocation %d of %s at %#x: addend: %w", p/ent, s.Name, off, err)
			}
			if e.is64 {
				o.PutUint64(b[16:], na)
			} else {
				o.PutUint32(b[8:], uint32(na))
			}
			fixed++
		}
	}
	return fmt.Sprintf("%d of %d relocations pointed into the pclntab and were updated", fixed, seen), nil
}
