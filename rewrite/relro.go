package rewrite

import (
	"debug/elf"
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// Go 1.18-1.25 linkers put the pclntab of a PIE or a shared build in
// .data.rel.ro.gopclntab, in the RELRO part of the writable data, because
// one word of it, pcHeader.textStart, has a dynamic relocation
// (R_X86_64_RELATIVE, R_AARCH64_RELATIVE, ...) the loader applies. Go 1.26
// dropped the word, and its linker puts the table in .gopclntab again.
// Replace mode moves that table like .gopclntab, to a new PT_LOAD with the
// flags of the segment it leaves (writable, so the loader can apply the
// relocation), moves the relocation to the new pcHeader's textStart word,
// and shrinks PT_GNU_RELRO to what stays in the old segment. The new
// segment is not RELRO: ELF has one PT_GNU_RELRO range, which must stay
// over .data.rel.ro, and the new segment lies above .data and .bss.

// pclnSection returns the index of the section that holds f's pclntab:
// .gopclntab, or .data.rel.ro.gopclntab for a Go 1.18-1.25 table. A Go
// 1.2-1.17 table there (whose entry PCs and funcdata pointers the loader
// relocates) is refused. A Go 1.18-1.25 table that an external linker
// merged into the end of a writable section (.data.rel.ro) is split off
// into a section of its own, appended to e.sects; xi is then the index
// of the section it was split from, else -1.
func pclnSection(e *elfFile, f *objscan.File) (pi, xi int, err error) {
	pi = e.section(".gopclntab")
	if pi < 0 && f.PclntabSource == "section .data.rel.ro.gopclntab" {
		if f.Magic != objscan.Go118Magic && f.Magic != objscan.Go120Magic {
			return 0, -1, fmt.Errorf("the pclntab is in .data.rel.ro.gopclntab, where Go linkers before 1.18 put it in PIE and shared builds to relocate its absolute entry PCs and funcdata pointers at load time; replace mode would have to rewrite those dynamic relocations")
		}
		pi = e.section(".data.rel.ro.gopclntab")
	}
	if pi >= 0 && e.sects[pi].Addr == f.PclntabAddr && !e.sects[pi].nobits() {
		return pi, -1, nil
	}
	in := e.sectionAt(f.PclntabAddr)
	if in < 0 || e.sects[in].Flags&uint64(elf.SHF_WRITE) == 0 || f.Magic != objscan.Go118Magic && f.Magic != objscan.Go120Magic {
		return 0, -1, fmt.Errorf("the pclntab is not in a .gopclntab section (found by %s)", f.PclntabSource)
	}
	X := e.sects[in]
	if n := pclntabLen(f); f.PclntabAddr+n != X.Addr+X.Size {
		return 0, -1, fmt.Errorf("the pclntab is not in a .gopclntab section (found by %s) but at %#x inside %s, where an external linker merged .data.rel.ro.gopclntab, and %#x bytes of the section follow it: replace mode splits the table off the end of a section only", f.PclntabSource, f.PclntabAddr, X.Name, X.Addr+X.Size-f.PclntabAddr-n)
	}
	t := X
	t.Addr, t.Off, t.Size = f.PclntabAddr, X.Off+(f.PclntabAddr-X.Addr), X.Addr+X.Size-f.PclntabAddr
	e.sects[in].Size = f.PclntabAddr - X.Addr
	e.sects = append(e.sects, t)
	return len(e.sects) - 1, in, nil
}

// sectionAt returns the index of the allocated section with file bytes
// that holds address addr, or -1.
func (e *elfFile) sectionAt(addr uint64) int {
	for i := range e.sects {
		s := &e.sects[i]
		if i > 0 && s.alloc() && !s.nobits() && addr >= s.Addr && addr-s.Addr < s.Size {
			return i
		}
	}
	return -1
}

// relroOver returns the index of the PT_GNU_RELRO segment that starts in
// segment li before the pclntab P and covers it, up to at most the end of
// li's last page; -1 if there is none.
func relroOver(e *elfFile, li int, P elfSect) int {
	L := &e.progs[li]
	for i := range e.progs {
		p := &e.progs[i]
		if p.Type != uint32(elf.PT_GNU_RELRO) || p.Vaddr < L.Vaddr || p.Vaddr >= P.Addr {
			continue
		}
		end := p.Vaddr + p.Memsz
		if end >= P.Addr+P.Size && end <= alignUp(L.Vaddr+L.Memsz, max(L.Align, 1)) && end >= p.Vaddr {
			return i
		}
	}
	return -1
}

// shrinkRelro makes PT_GNU_RELRO ri (if not -1) end where the pclntab at
// pcln was, in segment li, which now ends there too. Loaders protect
// whole pages and round the range's end down, so when the next segment
// leaves room, li's zero-filled memory and the range are extended to the
// page boundary: the page holding the last bytes before the table stays
// protected as before. It returns a note for the Result, or "".
func (e *elfFile) shrinkRelro(ri, li int, pcln, pageAlign uint64) string {
	if ri < 0 {
		return ""
	}
	L, R := &e.progs[li], &e.progs[ri]
	end := alignUp(pcln, pageAlign)
	if end < pcln {
		end = pcln // the rounding wraps: no room
	}
	for i := range e.progs {
		q := &e.progs[i]
		if q.Type == uint32(elf.PT_LOAD) && i != li && q.Vaddr >= L.Vaddr && q.Vaddr&^(pageAlign-1) < end {
			end = pcln // no room: the last page stays writable
		}
	}
	L.Memsz = end - L.Vaddr
	R.Off, R.Filesz, R.Memsz = L.Off+(R.Vaddr-L.Vaddr), pcln-R.Vaddr, end-R.Vaddr
	return fmt.Sprintf("PT_GNU_RELRO now ends at %#x, where the old segment's bytes end (%d zero-fill bytes round it to the page); the new segment is writable and not RELRO: one PT_GNU_RELRO range is allowed and it stays over .data.rel.ro", end, end-pcln)
}

// textStartMove returns the move of the word that holds pcHeader.textStart
// (in Go 1.18-1.25 layouts, the one word of the pclntab with a dynamic
// relocation): its old address in the pclntab at old, and its address in
// the new pclntab at new; nil for other layouts.
func textStartMove(f *objscan.File, old, new uint64) map[uint64]uint64 {
	if f.Magic != objscan.Go118Magic && f.Magic != objscan.Go120Magic {
		return nil
	}
	at := 8 + 2*uint64(f.PtrSize) // magic, pad, minLC, ptrSize, nfunc, nfiles
	return map[uint64]uint64{old + at: new + at}
}

// splitSegment splits segment li, whose pclntab P (an external linker's,
// at the end of .data.rel.ro) leaves, around the table: li (L before the
// rewrite) keeps the bytes before it, and its memory runs on as zero-fill
// up to the page where the table ended, so that PT_GNU_RELRO, which runs
// over the table to .got, stays mapped (the loader's mprotect fails on
// unmapped pages); a new PT_LOAD after it maps the rest (.dynamic, .got,
// .data, .bss) at its addresses, from file offset off. It returns a note.
func (e *elfFile) splitSegment(li int, P elfSect, L elfProg, off, pageAlign uint64) (string, error) {
	end := P.Addr + P.Size
	page := end &^ (pageAlign - 1)
	if page < alignUp(P.Addr, pageAlign) || end > L.Vaddr+L.Filesz {
		return "", fmt.Errorf("unsupported layout: the pclntab (%#x+%#x) does not span a whole %#x-byte page in its segment's file bytes, so the segment cannot be split around it", P.Addr, P.Size, pageAlign)
	}
	rest := elfProg{Type: uint32(elf.PT_LOAD), Flags: L.Flags, Off: off, Vaddr: end, Paddr: end, Align: L.Align,
		Filesz: L.Vaddr + L.Filesz - end, Memsz: L.Vaddr + L.Memsz - end}
	e.progs[li].Memsz = page - L.Vaddr
	e.progs = append(e.progs[:li+1], append([]elfProg{rest}, e.progs[li+1:]...)...)
	return fmt.Sprintf("segment split around the table: %#x..%#x is zero-fill memory (PT_GNU_RELRO runs over it), a new PT_LOAD maps the rest of the segment at %#x from file offset %#x", P.Addr, page, end, off), nil
}

// fixSplitSymbols moves the symbols of the table split off section xi
// (from lo to hi, runtime.pclntab to runtime.epclntab) to section pi and
// their new addresses.
func fixSplitSymbols(e *elfFile, out []byte, m remap, xi, pi int, lo, hi uint64) (string, error) {
	o := e.order
	fixed := 0
	for si := range e.sects {
		s := &e.sects[si]
		if s.Type != uint32(elf.SHT_SYMTAB) && s.Type != uint32(elf.SHT_DYNSYM) {
			continue
		}
		ent := uint64(16)
		if e.is64 {
			ent = 24
		}
		if s.Entsize != ent || !inFile(s.Off, s.Size, uint64(len(out))) {
			return "", fmt.Errorf("symbol table %s has %d-byte entries, want %d, or runs past the file", s.Name, s.Entsize, ent)
		}
		d := out[s.Off : s.Off+s.Size]
		for p := uint64(0); p+ent <= uint64(len(d)); p += ent {
			b := d[p:]
			var shndx int
			var val uint64
			if e.is64 {
				shndx, val = int(o.Uint16(b[6:])), o.Uint64(b[8:])
			} else {
				val, shndx = uint64(o.Uint32(b[4:])), int(o.Uint16(b[14:]))
			}
			if shndx != xi || val < lo || val > hi {
				continue
			}
			nv, in, err := m.addr(val)
			if err != nil || !in || pi > 0xfeff {
				return "", fmt.Errorf("symbol %d of %s at %#x: cannot move it with the table (%v)", p/ent, s.Name, val, err)
			}
			if e.is64 {
				o.PutUint16(b[6:], uint16(pi))
				o.PutUint64(b[8:], nv)
			} else {
				o.PutUint32(b[4:], uint32(nv))
				o.PutUint16(b[14:], uint16(pi))
			}
			fixed++
		}
	}
	return fmt.Sprintf("%d symbols moved with the table to its own section (%d)", fixed, pi), nil
}
