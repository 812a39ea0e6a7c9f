package rewrite

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/pctab/pctab/objscan"
)

// replaceMode rebuilds the pclntab in the linear format and lays out the
// ELF file around it.
//
// The new pclntab is larger than the old one, and everything the code
// addresses must keep its address, so the new .gopclntab gets a new
// address: the sections from .gopclntab to the end of its PT_LOAD segment
// (in Go 1.26: .gopclntab, .typelink, .itablink; the "group") move to a new
// read-only PT_LOAD segment placed above every other segment in memory. In
// the file the group stays where it was, right after .rodata, so the file is
// laid out as the linker would lay it out with a bigger pclntab: the old
// segment keeps .rodata, the group follows it, and everything after the
// group moves by the growth rounded up to the page alignment (which keeps
// every later segment's offset congruent to its address). No byte of the
// old pclntab remains.
//
// Pointers to the moved sections are updated in the moduledata (pcHeader,
// funcnametab, cutab, filetab, pctab and pclntable slices, ftab, findfunctab,
// gofunc, epclntab, typelinks, itablinks) and in the symbol table. Code
// that refers to them directly is not updated (Go code reaches them through
// the moduledata), and neither is DWARF.
func replaceMode(e *elfFile, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
	if e.typ != elf.ET_EXEC && e.typ != elf.ET_DYN {
		return nil, fmt.Errorf("only executables (ELF type ET_EXEC, or ET_DYN for PIE) are supported, this is %v; append mode works on it", e.typ)
	}
	pi, xi, err := pclnSection(e, f)
	if err != nil {
		return nil, err
	}
	merged := xi >= 0 // the table was the tail of section xi (pclnSection)
	P := e.sects[pi]
	// The PT_LOAD segment holding the pclntab.
	li := -1
	for i := range e.progs {
		p := &e.progs[i]
		if p.Type == uint32(elf.PT_LOAD) && p.Vaddr <= P.Addr && P.Addr+P.Size <= p.Vaddr+p.Filesz {
			li = i
		}
	}
	if li < 0 {
		return nil, fmt.Errorf(".gopclntab at %#x is not in a PT_LOAD segment's file bytes", P.Addr)
	}
	L := e.progs[li]
	if L.Memsz != L.Filesz && !merged || P.Off-L.Off != P.Addr-L.Vaddr || P.Addr == L.Vaddr {
		return nil, fmt.Errorf("unsupported layout: .gopclntab's segment (%#x+%#x) has zero-fill bytes, is not mapped linearly, or starts with .gopclntab", L.Vaddr, L.Memsz)
	}
	segEnd := L.Vaddr + L.Memsz
	oldGroupEnd := L.Off + L.Filesz
	if merged {
		oldGroupEnd = P.Off + P.Size // what follows stays, in a new segment
	}
	// The group: .gopclntab and the allocated sections after it in its segment.
	group := []int{pi}
	for i := range e.sects {
		s := &e.sects[i]
		if i == pi || !s.alloc() || s.Addr < P.Addr || s.Addr >= segEnd || merged {
			continue
		}
		if !movableType(elf.SectionType(s.Type)) {
			return nil, fmt.Errorf("unsupported layout: section %s (type %v) follows .gopclntab in its segment, and replace mode does not know how to move its contents", s.Name, elf.SectionType(s.Type))
		}
		group = append(group, i)
	}
	group = sortedSections(e, group)
	inGroup := map[int]bool{}
	for _, i := range group {
		inGroup[i] = true
	}
	// Non-allocated sections in the segment's file bytes after .gopclntab
	// (Go 1.2-1.7 linkers put .shstrtab there) are not loaded: they move to
	// the end of the file.
	var stow []int
	var stowOld uint64
	for i := range e.sects {
		s := &e.sects[i]
		if i != 0 && !inGroup[i] && !s.alloc() && !s.nobits() && s.Size > 0 && s.Off >= P.Off+P.Size && s.fileEnd() <= oldGroupEnd {
			stow = append(stow, i)
			stowOld += s.Size
		}
	}
	for i := range e.sects {
		s := &e.sects[i]
		if inGroup[i] || s.nobits() || s.Size == 0 || i == 0 || slices.Contains(stow, i) {
			continue
		}
		if s.Off < oldGroupEnd && s.fileEnd() > P.Off {
			return nil, fmt.Errorf("unsupported layout: section %s overlaps the file bytes of .gopclntab's segment", s.Name)
		}
	}
	// Segments inside the moved range move with it: PT_GNU_EH_FRAME
	// (.eh_frame_hdr) and notes, if they lie in the group's sections.
	inGroupSegs := map[int]bool{}
	ri := relroOver(e, li, P)
	for i := range e.progs {
		p := &e.progs[i]
		if i == li || i == ri || p.Filesz == 0 && p.Memsz == 0 || merged && p.Vaddr >= P.Addr+P.Size && p.Off >= oldGroupEnd {
			continue
		}
		if p.Off < oldGroupEnd && p.Off+p.Filesz > P.Off || p.Vaddr < segEnd && p.Vaddr+p.Memsz > P.Addr {
			if p.Type == uint32(elf.PT_LOAD) || p.Vaddr < P.Addr+P.Size || p.Vaddr+p.Memsz > segEnd {
				return nil, fmt.Errorf("unsupported layout: segment %d (%v) overlaps .gopclntab's segment", i, elf.ProgType(p.Type))
			}
			inGroupSegs[i] = true
		}
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
	np, err := buildPclntab(f, lt, tailAlign)
	if err != nil {
		return nil, err
	}

	// Lay out the group at the old pclntab's file offset and at an address
	// above every segment, congruent to that offset modulo the page size.
	var top uint64
	for i := range e.progs {
		if p := &e.progs[i]; p.Type == uint32(elf.PT_LOAD) {
			top = max(top, p.Vaddr+p.Memsz)
		}
	}
	gOff := P.Off
	gAddr := alignUp(top, pageAlign) + gOff%pageAlign
	var mv []moved
	at := gAddr
	// The sections after .gopclntab move by one delta, a multiple of their
	// largest alignment, so pointers among them stay valid.
	restAlign := uint64(1)
	for _, i := range group[1:] {
		restAlign = max(restAlign, e.sects[i].Addralign)
	}
	var delta uint64
	for k, i := range group {
		s := &e.sects[i]
		m := moved{idx: i, oldAddr: s.Addr, oldOff: s.Off, oldSize: s.Size, newSize: s.Size, data: e.data[s.Off : s.Off+s.Size]}
		if i == pi {
			m.data, m.newSize = np.data, uint64(len(np.data))
		}
		switch k {
		case 0:
			at = alignUp(at, max(s.Addralign, 1))
		case 1:
			delta = alignUp(alignUp(at, max(s.Addralign, 1))-s.Addr, restAlign)
			at = s.Addr + delta
		default:
			at = s.Addr + delta
		}
		m.newAddr, m.newOff = at, gOff+(at-gAddr)
		at += m.newSize
		mv = append(mv, m)
	}
	// The program header table gains the new segment. Where it has no room
	// after the ELF header (an external linker packs the first sections
	// right after it), it moves to the end of the new segment, which maps
	// it as PT_PHDR requires.
	phSize := (uint64(len(e.progs)+1) + uint64(b2i(merged))) * e.phentsize
	oldPhoff, oldPhnum := e.phoff, len(e.progs)
	var phAt uint64 // new address of the program header table, or 0
	if e.phoff+phSize > e.firstDataOff(e.ehsize()) {
		phAt = alignUp(at, 8)
		at = phAt + phSize
	}
	gEnd := gOff + (at - gAddr)
	oldGroupSize := oldGroupEnd - P.Off

	// Everything after the group in the file moves by D, a multiple of the
	// alignment of whatever follows.
	X := uint64(len(e.data))
	if merged {
		X = oldGroupEnd // the rest of the segment moves with what follows
	}
	for i := range e.sects {
		s := &e.sects[i]
		if i == 0 || inGroup[i] || s.nobits() || s.Size == 0 {
			continue
		}
		if s.Off >= oldGroupEnd {
			X = min(X, s.Off)
		}
	}
	for i := range e.progs {
		if p := &e.progs[i]; p.Filesz > 0 && p.Off >= oldGroupEnd {
			X = min(X, p.Off)
		}
	}
	if e.shoff >= oldGroupEnd {
		X = min(X, e.shoff)
	}
	A := uint64(8)
	for i := range e.sects {
		if s := &e.sects[i]; !inGroup[i] && s.Off >= X {
			A = max(A, s.Addralign)
		}
	}
	for i := range e.progs {
		if p := &e.progs[i]; p.Off >= X && (p.Filesz > 0 || p.Type == uint32(elf.PT_LOAD)) {
			A = max(A, p.Align)
		}
	}
	if merged {
		A = max(A, L.Align) // the rest of the segment keeps its offset modulo the page
	}
	if A&(A-1) != 0 {
		return nil, fmt.Errorf("unsupported alignment %#x after .gopclntab's segment", A)
	}
	// D = the smallest multiple of A with X+D >= gEnd.
	D := int64(gEnd) - int64(X)
	if D >= 0 {
		D = int64(alignUp(uint64(D), A))
	} else {
		D = -int64(uint64(-D) &^ (A - 1))
	}
	newLen := int64(len(e.data)) + D
	if X == uint64(len(e.data)) {
		newLen = int64(gEnd)
		D = newLen - int64(len(e.data))
	}
	shiftOff := func(off uint64) uint64 {
		if off >= X {
			return uint64(int64(off) + D)
		}
		return off
	}
	out := make([]byte, newLen)
	copy(out, e.data[:P.Off])
	for _, m := range mv {
		copy(out[m.newOff:], m.data)
	}
	copy(out[X+uint64(D):], e.data[X:])

	// Address remapping: the pclntab's parts, and the other moved sections.
	addrMap := np.remap.shift(P.Addr, gAddr)
	for _, m := range mv[1:] {
		addrMap = append(addrMap, span{name: e.sects[m.idx].Name, oldStart: m.oldAddr, oldEnd: m.oldAddr + m.oldSize,
			newStart: m.newAddr, newEnd: m.newAddr + m.newSize, interior: true})
	}
	lenFix := pclnLenFix(f, np)

	// Section and program headers.
	for _, m := range mv {
		s := &e.sects[m.idx]
		s.Addr, s.Off, s.Size = m.newAddr, m.newOff, m.newSize
	}
	for i := range e.sects {
		if s := &e.sects[i]; !inGroup[i] && i != 0 {
			s.Off = shiftOff(s.Off)
		}
	}
	for i := range e.progs {
		p := &e.progs[i]
		switch {
		case inGroupSegs[i]:
			nv, _, err := addrMap.addr(p.Vaddr)
			if err != nil {
				return nil, fmt.Errorf("segment %d (%v): %w", i, elf.ProgType(p.Type), err)
			}
			p.Off, p.Vaddr, p.Paddr = gOff+(nv-gAddr), nv, nv
		case i != li:
			p.Off = shiftOff(p.Off)
		}
	}
	e.progs[li].Filesz = P.Addr - L.Vaddr
	e.progs[li].Memsz = P.Addr - L.Vaddr
	var relroNote string
	if merged {
		relroNote, err = e.splitSegment(li, P, L, shiftOff(oldGroupEnd), pageAlign)
		if err != nil {
			return nil, err
		}
	} else {
		relroNote = e.shrinkRelro(ri, li, P.Addr, pageAlign)
	}
	newSeg := elfProg{Type: uint32(elf.PT_LOAD), Flags: L.Flags, Off: gOff, Vaddr: gAddr, Paddr: gAddr,
		Filesz: gEnd - gOff, Memsz: gEnd - gOff, Align: L.Align}
	loads := e.sortedLoads()
	ins := loads[len(loads)-1] + 1
	e.progs = append(e.progs[:ins], append([]elfProg{newSeg}, e.progs[ins:]...)...)
	if phAt != 0 {
		e.phoff = gOff + (phAt - gAddr)
		clear(out[oldPhoff : oldPhoff+uint64(oldPhnum)*e.phentsize])
	}
	for i := range e.progs {
		if p := &e.progs[i]; p.Type == uint32(elf.PT_PHDR) {
			p.Filesz = uint64(len(e.progs)) * e.phentsize
			p.Memsz = p.Filesz
			if phAt != 0 {
				p.Off, p.Vaddr, p.Paddr = e.phoff, phAt, phAt
			}
		}
	}
	stowAt := uint64(len(out))
	for _, i := range stow {
		s := &e.sects[i]
		b := e.data[s.Off:s.fileEnd()]
		out = appendZeros(out, alignUp(uint64(len(out)), max(s.Addralign, 1)))
		s.Off = uint64(len(out))
		out = append(out, b...)
	}
	oldShoff, oldShsize := e.shoff, (uint64(len(e.sects))-uint64(b2i(merged)))*e.shentsize
	// A split adds a section header: a table that ended the file is
	// rewritten there rather than left behind, cleared.
	dropSh := merged && len(stow) == 0 && oldShoff >= X && oldShoff+oldShsize == uint64(len(e.data))
	if dropSh {
		out = out[:shiftOff(oldShoff)]
	}
	before := uint64(len(out))
	shoff, err := e.placeTables(before)
	if err != nil {
		return nil, err
	}
	if o := shiftOff(oldShoff); o+oldShsize <= uint64(len(out)) && (oldShoff < P.Off || oldShoff >= X) {
		clear(out[o : o+oldShsize])
	}
	e.shoff = shoff
	if end := shoff + uint64(len(e.sects))*e.shentsize; end > uint64(len(out)) {
		out = appendZeros(out, end)
	}
	e.writeTables(out)

	// Moduledata and symbols.
	mdNote, mdWords, err := fixModuledata(e, f, out, addrMap, lenFix, P.Addr)
	if err != nil {
		return nil, err
	}
	symNote, err := fixSymbols(e, out, addrMap, inGroup)
	if err != nil {
		return nil, err
	}
	if merged {
		if symNote, err = fixSplitSymbols(e, out, addrMap, xi, pi, P.Addr, P.Addr+P.Size); err != nil {
			return nil, err
		}
	}
	inlNote, err := patchInlTrees(np, f.ByteOrder, addrMap, elfOutAt(e, out))
	if err != nil {
		return nil, err
	}
	keep := uint64(0) // an address fixRelocs must not take for the table's end
	if merged {
		keep = P.Addr + P.Size
	}
	relNote, err := fixRelocs(e, out, addrMap, mdWords, P.Addr, textStartMove(f, P.Addr, gAddr), keep)
	if err != nil {
		return nil, err
	}
	dynNote, err := fixDynamic(e, out, addrMap)
	if err != nil {
		return nil, err
	}
	ehNote, err := fixUnwind(e, out, addrMap, mv)
	if err != nil {
		return nil, err
	}

	res.NewPclntab = int64(len(np.data))
	var phPart uint64
	if phAt != 0 {
		phPart = gOff + (phAt - gAddr) + phSize - (mv[len(mv)-1].newOff + mv[len(mv)-1].newSize)
	}
	res.Parts = append(pclnParts(f, lt, np, tailAlign),
		Part{Name: "sections moved with .gopclntab (alignment)", Old: int64(oldGroupSize - P.Size - stowOld), New: int64(gEnd-gOff) - int64(len(np.data)) - int64(phPart)},
		Part{Name: "segment alignment", Old: int64(X - oldGroupEnd), New: int64(X) + D - int64(gEnd), Note: fmt.Sprintf("later segments keep their offsets modulo %#x", A)},
	)
	if len(stow) > 0 {
		res.Parts = append(res.Parts, Part{Name: "non-allocated sections after .gopclntab in its segment", Old: int64(stowOld), New: int64(before - stowAt),
			Note: fmt.Sprintf("%s, moved to the end of the file (alignment included)", groupNames(e, stow))})
	}
	if phAt != 0 {
		res.Parts = append(res.Parts, Part{Name: "program header table", Old: 0, New: int64(phPart),
			Note: fmt.Sprintf("moved to the end of the new segment (%#x, alignment included): no room after the ELF header for another entry; the old table's %d bytes stay, cleared", phAt, uint64(oldPhnum)*e.phentsize)})
	}
	res.Parts = append(res.Parts, headerTablePart(oldShoff, oldShsize, dropSh, before, shoff, uint64(len(e.sects))*e.shentsize, uint64(len(out))))
	res.Notes = append(res.Notes,
		fmt.Sprintf("new PT_LOAD (flags %v) for %s at address %#x, file offset %#x, %d bytes; the old segment keeps %d bytes", elf.ProgFlag(L.Flags), groupNames(e, group), gAddr, gOff, gEnd-gOff, P.Addr-L.Vaddr),
		fmt.Sprintf("file contents from offset %#x moved by %+d bytes", X, D),
		mdNote, symNote)
	for _, n := range []string{inlNote, relNote, dynNote, ehNote, relroNote} {
		if n != "" {
			res.Notes = append(res.Notes, n)
		}
	}
	return out, nil
}

// fixUnwind rewrites the pointers of the moved .eh_frame_hdr and .eh_frame.
func fixUnwind(e *elfFile, out []byte, m remap, mv []moved) (string, error) {
	var hdr *moved
	for k := range mv {
		if e.sects[mv[k].idx].Name == ".eh_frame_hdr" {
			hdr = &mv[k]
		}
	}
	fixed := 0
	for k := range mv {
		mm := &mv[k]
		name := e.sects[mm.idx].Name
		if name != ".eh_frame_hdr" && name != ".eh_frame" {
			continue
		}
		x := &ehFixer{e: e, out: out, m: m, oldAddr: mm.oldAddr, newAddr: mm.newAddr, off: mm.newOff, size: mm.newSize}
		if hdr != nil {
			x.oldBase, x.newBase = hdr.oldAddr, hdr.newAddr
		}
		var err error
		if name == ".eh_frame_hdr" {
			err = x.fixEHFrameHdr()
		} else {
			err = x.fixEHFrame()
		}
		if err != nil {
			return "", err
		}
		fixed += x.fixed
	}
	if fixed == 0 {
		return "", nil
	}
	return fmt.Sprintf("unwind tables: %d PC-relative pointers updated", fixed), nil
}

// funcTabNote describes what the linear format changes in the functab.
func funcTabNote(lt *linearTables, nfunc int, ps uint64) string {
	if lt.derived {
		return fmt.Sprintf("lengths derived from the functab: no field, a uint32 end offset after the last record (%d-byte aligned)", ps)
	}
	return fmt.Sprintf("a uint32 length per function (%d bytes) and %d-byte record alignment", 4*nfunc, ps)
}

// moved is a section of the group replace mode moves: where it was and
// where it goes, and its new contents.
type moved struct {
	idx              int
	oldAddr, oldOff  uint64
	newAddr, newOff  uint64
	oldSize, newSize uint64
	data             []byte
}

// groupNames lists the names of the sections at idx.
func groupNames(e *elfFile, idx []int) string {
	var b bytes.Buffer
	for i, j := range idx {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.sects[j].Name)
	}
	return b.String()
}

// pclnHeaderOf reads the Go 1.20 pcHeader of f; buildPclntab has validated it.
func pclnHeaderOf(f *objscan.File) pclnHeader {
	d := f.Pclntab()
	ps := uint64(f.PtrSize)
	w := func(i uint64) uint64 {
		if ps == 4 {
			return uint64(f.ByteOrder.Uint32(d[8+i*ps:]))
		}
		return f.ByteOrder.Uint64(d[8+i*ps:])
	}
	return pclnHeader{w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7)}
}

// lenFixes maps the old address of a slice's data in the pclntab to the
// size of the part it covers, old and new. A moduledata slice there whose
// length equals its capacity and is at most the old size (the Go 1.16
// linker records a symbol's size, before the padding that aligns the next
// part) gets the new size.
type lenFixes map[uint64][2]uint64

// pclnLenFix returns the moduledata slice lengths replace mode changes: the
// pctab's and the pclntable's (the functab), keyed by their old addresses.
func pclnLenFix(f *objscan.File, np *newPclntab) lenFixes {
	if np.converted != "" {
		fix := lenFixes{}
		for off, v := range np.lenFixOff {
			fix[f.PclntabAddr+off] = v
		}
		return fix
	}
	ps := uint64(f.PtrSize)
	h := pclnHeaderOf(f)
	return lenFixes{
		f.PclntabAddr + h.pctabOff: {uint64(np.oldPCTab), uint64(np.newPCTab)},
		f.PclntabAddr + h.pclnOff:  {alignUp(uint64(np.oldFuncTab), ps), alignUp(uint64(np.newFuncTab), ps)},
	}
}

// pclnParts itemizes the size change of the pclntab itself, the parts
// buildPclntab re-encoded: they add up to len(np.data) minus the old
// table's size.
func pclnParts(f *objscan.File, lt *linearTables, np *newPclntab, tailAlign uint64) []Part {
	if np.converted != "" {
		return convertParts(f, lt, np)
	}
	ps := uint64(f.PtrSize)
	return []Part{
		{Name: "pcHeader", Old: np.oldHeader, New: np.newHeader, Note: fmt.Sprintf("new magic %#x; %d-byte variant name", map[bool]uint32{false: objscan.LinearMagic, true: objscan.LinearDerivedMagic}[lt.derived], objscan.LinearVariantLen)},
		{Name: "pctab", Old: np.oldPCTab, New: np.newPCTab, Note: lt.pctabNote(ps), kind: kindTables},
		{Name: "functab (ftab and _func records)", Old: np.oldFuncTab, New: np.newFuncTab, Note: funcTabNote(lt, len(f.Funcs), ps), kind: kindOutOfBand},
		{Name: "padding before go:func.*", New: np.newTailPad, Note: fmt.Sprintf("keeps the funcdata's offset modulo %d", tailAlign)},
	}
}

// fixModuledata updates the moduledata that objscan found for the old
// pclntab in out, an ELF file described by e (see patchModuledataIn). It
// also returns the moduledata words it changed: old address -> new value.
func fixModuledata(e *elfFile, f *objscan.File, out []byte, m remap, lenFix lenFixes, oldPcln uint64) (string, map[uint64]uint64, error) {
	return patchModuledataIn(f, m, lenFix, elfOutAt(e, out))
}

// elfOutAt returns a function that finds the bytes of out, an ELF file
// described by e, at an (output) address, as patchModuledataIn's at.
func elfOutAt(e *elfFile, out []byte) func(addr, size uint64) ([]byte, string) {
	return func(addr, size uint64) ([]byte, string) {
		for i := range e.sects {
			s := &e.sects[i]
			if s.nobits() || !s.alloc() || addr < s.Addr || addr-s.Addr >= s.Size {
				continue
			}
			if s.Off+s.Size > uint64(len(out)) || size > s.Size-(addr-s.Addr) {
				return nil, "section " + s.Name + " (too short)"
			}
			return out[s.Off+(addr-s.Addr) : s.Off+(addr-s.Addr)+size], "section " + s.Name
		}
		return nil, ""
	}
}

// patchInlTrees writes the inline tree name offsets of a converted Go
// 1.2-1.15 pclntab (newPclntab.inlPatches); at finds output bytes by
// address, and m maps moved addresses (a tree must not lie in them).
func patchInlTrees(np *newPclntab, o binary.ByteOrder, m remap, at func(addr, size uint64) ([]byte, string)) (string, error) {
	if len(np.inlPatches) == 0 {
		return "", nil
	}
	for _, p := range np.inlPatches {
		if _, in, _ := m.addr(p.addr); in {
			return "", fmt.Errorf("inline tree entry at %#x lies in a part replace mode moves", p.addr)
		}
		b, sect := at(p.addr, 4)
		if b == nil {
			if sect == "" {
				sect = "no section"
			}
			return "", fmt.Errorf("inline tree entry at %#x: %s holds its name offset", p.addr, sect)
		}
		o.PutUint32(b, p.val)
	}
	return fmt.Sprintf("inline trees: %d name offsets rewritten to index the new funcnametab", len(np.inlPatches)), nil
}

// patchModuledataIn updates the moduledata that objscan found for the old
// pclntab (objscan.File.Moduledata): its pointers into the moved parts and
// the lengths of its pctab and pclntable slices. at returns the output
// bytes holding size bytes at an (output) address, and where they are; nil
// if no section holds them. The first 24 words are Go 1.20+'s stable
// prefix (pcHeader through etext); later words that point into the moved
// parts (gofunc, epclntab, typelinks, itablinks) are found by value. It
// returns the words it changed: old address -> new value.
func patchModuledataIn(f *objscan.File, m remap, lenFix lenFixes, at func(addr, size uint64) ([]byte, string)) (string, map[uint64]uint64, error) {
	oldPcln := f.PclntabAddr
	mdAddr, words, ok := f.Moduledata()
	if !ok {
		return "", nil, fmt.Errorf("no moduledata points at the pclntab (%#x): cannot update it", oldPcln)
	}
	addr := mdAddr
	if nv, in, err := m.addr(mdAddr); in {
		if err != nil {
			return "", nil, fmt.Errorf("moduledata at %#x: %w", mdAddr, err)
		}
		addr = nv
	}
	ps := uint64(f.PtrSize)
	md, sect := at(addr, uint64(words)*ps)
	if md == nil {
		if sect != "" {
			return "", nil, fmt.Errorf("moduledata at %#x: %d words run past %s", addr, words, sect)
		}
		return "", nil, fmt.Errorf("moduledata at %#x is in no section of the output", addr)
	}
	where := fmt.Sprintf("moduledata at %#x (%s)", addr, sect)
	ptrs, changed, err := patchModuledata(md, uint64(words), ps, f.ByteOrder, m, lenFix, oldPcln)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", where, err)
	}
	mdWords := map[uint64]uint64{}
	for i, v := range ptrs {
		mdWords[mdAddr+i*ps] = v
	}
	return fmt.Sprintf("%s: %d words updated", where, changed), mdWords, nil
}

// patchModuledata rewrites the n words of the moduledata md: every word
// that m maps, and the two lengths after a slice pointer lenFix knows. It
// returns the pointer words it changed (index -> new value) and how many
// words it changed in all.
func patchModuledata(md []byte, n, ps uint64, o binary.ByteOrder, m remap, lenFix lenFixes, oldPcln uint64) (map[uint64]uint64, int, error) {
	word := func(i uint64) uint64 {
		if ps == 4 {
			return uint64(o.Uint32(md[i*ps:]))
		}
		return o.Uint64(md[i*ps:])
	}
	changed := 0
	put := func(i, v uint64) {
		if ps == 4 {
			o.PutUint32(md[i*ps:], uint32(v))
		} else {
			o.PutUint64(md[i*ps:], v)
		}
		changed++
	}
	if uint64(len(md)) < n*ps {
		return nil, 0, fmt.Errorf("%d bytes hold fewer than %d words", len(md), n)
	}
	if word(0) != oldPcln {
		return nil, 0, fmt.Errorf("word 0 is %#x, not the old pclntab address %#x", word(0), oldPcln)
	}
	ptrs := map[uint64]uint64{}
	for i := uint64(0); i < n; i++ {
		v := word(i)
		if i > 0 && v == oldPcln {
			continue // an end pointer of what precedes the pclntab (etypes, say), not the pcHeader
		}
		nv, in, err := m.addr(v)
		if !in {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("word %d: %w", i, err)
		}
		put(i, nv)
		ptrs[i] = nv
		if fix, ok := lenFix[v]; ok && i+2 < n && word(i+1) == word(i+2) && word(i+1) > 0 && word(i+1) <= fix[0] {
			put(i+1, fix[1])
			put(i+2, fix[1])
			i += 2
		}
	}
	return ptrs, changed, nil
}

// fixSymbols updates the symbols defined in the moved sections: their
// values, and the sizes of those that span re-encoded parts.
func fixSymbols(e *elfFile, out []byte, m remap, inGroup map[int]bool) (string, error) {
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
		if s.Entsize != ent {
			return "", fmt.Errorf("symbol table %s has %d-byte entries, want %d", s.Name, s.Entsize, ent)
		}
		d := out[s.Off : s.Off+s.Size]
		for p := uint64(0); p+ent <= uint64(len(d)); p += ent {
			b := d[p:]
			var shndx int
			var val, size uint64
			if e.is64 {
				shndx, val, size = int(o.Uint16(b[6:])), o.Uint64(b[8:]), o.Uint64(b[16:])
			} else {
				val, size, shndx = uint64(o.Uint32(b[4:])), uint64(o.Uint32(b[8:])), int(o.Uint16(b[14:]))
			}
			if !inGroup[shndx] {
				continue
			}
			nv, in, err := m.addr(val)
			if err != nil || !in {
				return "", fmt.Errorf("symbol %d of %s at %#x: cannot move it (%v)", p/ent, s.Name, val, err)
			}
			nsize := size
			if size > 0 {
				ne, in, err := m.addr(val + size)
				if err != nil || !in || ne < nv {
					return "", fmt.Errorf("symbol %d of %s at %#x, %d bytes: cannot move its end (%v)", p/ent, s.Name, val, size, err)
				}
				nsize = ne - nv
			}
			if e.is64 {
				o.PutUint64(b[8:], nv)
				o.PutUint64(b[16:], nsize)
			} else {
				o.PutUint32(b[4:], uint32(nv))
				o.PutUint32(b[8:], uint32(nsize))
			}
			fixed++
		}
	}
	return fmt.Sprintf("%d symbols in the moved sections updated", fixed), nil
}
