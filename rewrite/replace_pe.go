package rewrite

import (
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// PEPclntabSection is the section that holds the pclntab of a PE file
// rewritten in replace mode.
const PEPclntabSection = ".pclntab"

// pePclntabCharacteristics are the new section's: initialized, read-only
// data, as .rdata.
const pePclntabCharacteristics = pe.IMAGE_SCN_CNT_INITIALIZED_DATA | pe.IMAGE_SCN_MEM_READ

// peSect is a section header, raw.
type peSect struct {
	name                         [8]byte
	vsize, va, rawSize, rawOff   uint32
	relocOff, lineOff            uint32
	nreloc, nline                uint16
	characteristics              uint32
	oldIndex                     int // 1-based number in the input, 0 for a new section
	oldVA, oldRawOff, oldRawSize uint32
}

func readPESect(b []byte, i int) peSect {
	le := binary.LittleEndian
	s := peSect{vsize: le.Uint32(b[8:]), va: le.Uint32(b[12:]), rawSize: le.Uint32(b[16:]), rawOff: le.Uint32(b[20:]),
		relocOff: le.Uint32(b[24:]), lineOff: le.Uint32(b[28:]), nreloc: le.Uint16(b[32:]), nline: le.Uint16(b[34:]),
		characteristics: le.Uint32(b[36:]), oldIndex: i}
	copy(s.name[:], b[:8])
	s.oldVA, s.oldRawOff, s.oldRawSize = s.va, s.rawOff, s.rawSize
	return s
}

func (s *peSect) put(b []byte) {
	le := binary.LittleEndian
	copy(b[:8], s.name[:])
	le.PutUint32(b[8:], s.vsize)
	le.PutUint32(b[12:], s.va)
	le.PutUint32(b[16:], s.rawSize)
	le.PutUint32(b[20:], s.rawOff)
	le.PutUint32(b[24:], s.relocOff)
	le.PutUint32(b[28:], s.lineOff)
	le.PutUint16(b[32:], s.nreloc)
	le.PutUint16(b[34:], s.nline)
	le.PutUint32(b[36:], s.characteristics)
}

// replacePE rebuilds the pclntab of a PE file (windows/amd64, arm64, 386)
// in the linear format.
//
// Go's linker puts the pclntab inside .rdata, followed by the typelinks
// and itablinks. No address but the pclntab's changes: .rdata is split in
// two around the table. .rdata keeps the bytes before it (its raw data is
// cut there; its virtual size still reaches the next section, so the
// sections stay adjacent in memory), and a new section, named after it
// with a "2", holds the bytes from the page where the table ends, at their
// old addresses (the rest of the old table in that page is zeroed). No
// byte of the old table remains otherwise; the file contents after .rdata
// move back. The new table goes in a new last section, PEPclntabSection,
// above every other section in memory and at the end of the file.
// SizeOfImage, the section table, PointerToSymbolTable, the COFF symbols
// (the pclntab's moved, the later sections' renumbered) and the
// moduledata's pointers are updated. Base relocations of words outside
// the table need no change: none of those words moved, and the moduledata
// words they relocate now hold the new table's addresses. The one base
// relocation inside a Go 1.18-1.25 table, of pcHeader.textStart, moves to
// the new table's word (pe_reloc.go).
func replacePE(data []byte, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
	pf, err := safePE(data)
	if err != nil {
		return nil, err
	}
	l, err := parsePELayout(data)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	var imageBase uint64
	dirAt, ndirAt := l.optAt+112, l.optAt+108
	switch oh := pf.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		imageBase = oh.ImageBase
	case *pe.OptionalHeader32:
		imageBase = uint64(oh.ImageBase)
		dirAt, ndirAt = l.optAt+96, l.optAt+92
	default:
		return nil, errors.New("PE: no optional header")
	}
	if f.PclntabAddr < imageBase || f.PclntabAddr-imageBase > 1<<32-1 {
		return nil, fmt.Errorf("the pclntab at %#x is not in the image at %#x", f.PclntabAddr, imageBase)
	}
	pR := uint32(f.PclntabAddr - imageBase)
	pS := uint32(pclntabLen(f))
	sects := make([]peSect, l.nsect)
	si := -1
	for i := range sects {
		sects[i] = readPESect(data[l.sectAt+40*uint64(i):], i+1)
		s := &sects[i]
		if uint64(s.va)+uint64(max(s.vsize, s.rawSize)) > 1<<32-1 {
			return nil, fmt.Errorf("PE: section %d (header at %#x): %#x bytes at RVA %#x run past the 4 GiB image", i+1, l.sectAt+40*uint64(i), max(s.vsize, s.rawSize), s.va)
		}
		if pR >= s.va && uint64(pR)+uint64(pS) <= uint64(s.va)+uint64(min(s.vsize, s.rawSize)) {
			si = i
		}
	}
	if si < 0 {
		return nil, fmt.Errorf("the pclntab (%d bytes at RVA %#x) is not inside one section's file bytes", pS, pR)
	}
	S := sects[si]
	sEnd := uint64(S.rawOff) + uint64(S.rawSize)
	if sEnd > uint64(len(data)) {
		return nil, fmt.Errorf("section %s: %#x bytes at file offset %#x run past the %d-byte file", cstring(S.name[:]), S.rawSize, S.rawOff, len(data))
	}
	for i := range sects {
		s := &sects[i]
		if i == si || s.rawSize == 0 {
			continue
		}
		if uint64(s.rawOff) < sEnd && uint64(s.rawOff)+uint64(s.rawSize) > uint64(S.rawOff) {
			return nil, fmt.Errorf("unsupported layout: section %d's file bytes overlap %s's", i+1, cstring(S.name[:]))
		}
		if s.relocOff != 0 || s.lineOff != 0 {
			return nil, fmt.Errorf("section %d has COFF relocations or line numbers, which an image should not", i+1)
		}
	}
	if uint64(S.rawOff) < l.sizeHeaders {
		return nil, fmt.Errorf("section %s's data at %#x overlaps the headers", cstring(S.name[:]), S.rawOff)
	}
	// Data directories: file offsets (certificates, debug entries) would
	// move, and none may lie in the table.
	ndir := uint64(le.Uint32(data[ndirAt:]))
	if dirAt+8*ndir > l.sectAt {
		return nil, fmt.Errorf("%d data directories at %#x run into the section table", ndir, dirAt)
	}
	for d := uint64(0); d < ndir; d++ {
		va, size := le.Uint32(data[dirAt+8*d:]), le.Uint32(data[dirAt+8*d+4:])
		if size == 0 {
			continue
		}
		switch {
		case d == 4:
			return nil, errors.New("the file is signed (certificate table): the signature would have to be made again")
		case d == 6:
			return nil, errors.New("the file has a debug directory, whose entries hold file offsets that replace mode does not move")
		case va < pR+pS && va+size > pR:
			return nil, fmt.Errorf("data directory %d (RVA %#x, %d bytes) lies in the pclntab", d, va, size)
		}
	}
	textStart := uint32(0) // RVA of pcHeader.textStart, which Go 1.18-1.25 linkers relocate
	if f.Magic == objscan.Go118Magic || f.Magic == objscan.Go120Magic {
		textStart = pR + 8 + 2*uint32(f.PtrSize)
	}
	br, err := peRelocsOutside(data, pf, pR, pS, textStart)
	if err != nil {
		return nil, err
	}
	if br.tsEntry != 0 && br.sect == si {
		return nil, fmt.Errorf("the base relocations (RVA %#x) are in %s, the section that holds the pclntab", br.dir.VirtualAddress, cstring(S.name[:]))
	}
	fa, sa := uint32(l.fileAlign), uint32(l.sectAlign)
	if br.tsEntry != 0 && br.room(sects) < peRelocBlock {
		return replacePEGrown(data, l, sects, br.sect, fa, f, lt, res)
	}

	np, err := buildPclntab(f, lt, 16)
	if err != nil {
		return nil, err
	}
	newSize := uint32(len(np.data))

	// Split S: head [S.va, pR), tail from tailVA (the page where the table
	// ends) to S's end.
	headLen := pR - S.va
	tailVA := (pR + pS) &^ (sa - 1)
	sVEnd := S.va + max(S.vsize, S.rawSize)
	hasTail := pR+pS < S.va+min(S.vsize, S.rawSize) && tailVA > pR
	if pR+pS < S.va+min(S.vsize, S.rawSize) && !hasTail {
		return nil, fmt.Errorf("unsupported layout: the pclntab (%d bytes at RVA %#x) does not cross a %#x-byte page boundary, so %s cannot be split around it", pS, pR, sa, cstring(S.name[:]))
	}
	out := append([]byte(nil), data[:S.rawOff]...)
	head := &sects[si]
	head.rawSize = alignUp32(headLen, fa)
	out = append(out, data[S.rawOff:S.rawOff+headLen]...)
	out = appendZeros(out, uint64(S.rawOff)+uint64(head.rawSize))
	var tail peSect
	var tailRemnant uint32
	if hasTail {
		head.vsize = tailVA - S.va
		tail = S
		tail.oldIndex = 0
		tail.name = [8]byte{}
		copy(tail.name[:], tailName(cstring(S.name[:])))
		tail.va = tailVA
		tail.vsize = sVEnd - tailVA
		if S.vsize > 0 {
			tail.vsize = S.va + S.vsize - tailVA
		}
		tail.rawOff = uint32(len(out))
		tail.rawSize = S.rawSize - (tailVA - S.va)
		from := S.rawOff + (tailVA - S.va)
		out = append(out, data[from:S.rawOff+S.rawSize]...)
		tailRemnant = pR + pS - tailVA
		clear(out[tail.rawOff : tail.rawOff+tailRemnant])
	}
	d := int64(len(out)) - int64(sEnd) // what follows S moves by d
	shiftOff := func(off uint32) uint32 {
		if uint64(off) >= sEnd {
			return uint32(int64(off) + d)
		}
		return off
	}
	out = append(out, data[sEnd:]...)
	// The new section, at the end of the file and of the image.
	var vaEnd uint32
	for i := range sects {
		vaEnd = max(vaEnd, sects[i].va+max(sects[i].vsize, sects[i].rawSize))
	}
	if uint64(len(out))+uint64(newSize)+uint64(fa) > 1<<32-1 || uint64(vaEnd)+uint64(newSize)+2*uint64(sa) > 1<<32-1 {
		return nil, errors.New("the new section would lie past 4 GiB, beyond PE's 32-bit offsets")
	}
	padBefore := alignUp(uint64(len(out)), uint64(fa)) - uint64(len(out))
	n := peSect{va: alignUp32(vaEnd, sa), vsize: newSize, rawSize: alignUp32(newSize, fa), characteristics: pePclntabCharacteristics}
	copy(n.name[:], PEPclntabSection)
	out = appendZeros(out, uint64(len(out))+padBefore)
	n.rawOff = uint32(len(out))
	out = append(out, np.data...)
	out = appendZeros(out, uint64(n.rawOff)+uint64(n.rawSize))

	// The section table: the tail after S, the new section last.
	var table []peSect
	for i := range sects {
		s := sects[i]
		if i != si {
			s.rawOff = shiftOff(s.rawOff)
		}
		table = append(table, s)
		if i == si && hasTail {
			table = append(table, tail)
		}
	}
	table = append(table, n)
	if l.sectAt+40*uint64(len(table)) > min(l.sizeHeaders, uint64(S.rawOff)) {
		return nil, fmt.Errorf("no room for %d more section headers: the table would end at %#x, past the headers (%#x bytes)", len(table)-len(sects), l.sectAt+40*uint64(len(table)), l.sizeHeaders)
	}
	if len(table) > 96 {
		return nil, fmt.Errorf("PE allows at most 96 sections; the rewrite needs %d", len(table))
	}
	for i := range table {
		table[i].put(out[l.sectAt+40*uint64(i):])
	}
	le.PutUint16(out[l.nsectAt:], uint16(len(table)))
	le.PutUint32(out[l.optAt+56:], alignUp32(n.va+n.vsize, sa)) // SizeOfImage

	// Symbols: section numbers, and the values of those that moved.
	m := np.remap.shift(f.PclntabAddr, imageBase+uint64(n.va))
	symNote, err := peFixSymbols(out, data, shiftOff, si+1, hasTail, tailVA-S.va, len(table), pR-S.va, pS, imageBase+uint64(S.va), imageBase+uint64(n.va), m)
	if err != nil {
		return nil, err
	}
	// Moduledata.
	mdAt := func(addr, size uint64) ([]byte, string) {
		if addr < imageBase {
			return nil, ""
		}
		rva := addr - imageBase
		for i := range table {
			s := &table[i]
			if rva < uint64(s.va) || rva-uint64(s.va) >= uint64(min(s.vsize, s.rawSize)) || s == &table[len(table)-1] {
				continue
			}
			o := uint64(s.rawOff) + rva - uint64(s.va)
			if size > uint64(min(s.vsize, s.rawSize))-(rva-uint64(s.va)) || o+size > uint64(len(out)) {
				return nil, "section " + cstring(s.name[:]) + " (too short)"
			}
			return out[o : o+size], "section " + cstring(s.name[:])
		}
		return nil, ""
	}
	mdNote, _, err := patchModuledataIn(f, m, pclnLenFix(f, np), mdAt)
	if err != nil {
		return nil, err
	}
	relNote, err := br.moveTextStart(out, table, l.sectAt, dirAt+8*pe.IMAGE_DIRECTORY_ENTRY_BASERELOC, n.va+8+2*uint32(f.PtrSize))
	if err != nil {
		return nil, err
	}
	inlNote, err := patchInlTrees(np, f.ByteOrder, m, mdAt)
	if err != nil {
		return nil, err
	}
	if _, err := safePE(out); err != nil {
		return nil, fmt.Errorf("internal error: the output is not valid PE: %w", err)
	}

	res.NewPclntab = int64(newSize)
	sName := cstring(S.name[:])
	res.Parts = append(pclnParts(f, lt, np, 16),
		Part{Name: sName + " after the pclntab", Old: int64(sEnd) - int64(S.rawOff) - int64(headLen) - int64(pS), New: int64(head.rawSize-headLen) + int64(tail.rawSize), Note: fmt.Sprintf("%s is cut at the table and padded to the %#x-byte file alignment; %s holds the rest from the page where the table ended (%d bytes of it zeroed)", sName, fa, tailName(sName), tailRemnant)},
		Part{Name: PEPclntabSection + " file alignment", New: int64(padBefore) + int64(n.rawSize-newSize), Note: "before and after the new section"},
		Part{Name: "section headers", Note: fmt.Sprintf("%d more, in the headers' padding: no file bytes", len(table)-len(sects))},
	)
	if relNote != "" {
		res.Parts = append(res.Parts, Part{Name: peRelocPart, Note: fmt.Sprintf("a %d-byte block for the new pcHeader.textStart, in %s's file alignment padding: no file bytes", peRelocBlock, cstring(sects[br.sect].name[:]))})
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("new section %s at RVA %#x, file offset %#x, %d bytes; %s keeps %#x bytes of raw data", PEPclntabSection, n.va, n.rawOff, newSize, sName, head.rawSize),
		fmt.Sprintf("file contents from %#x moved by %+d bytes; SizeOfImage and NumberOfSections updated", sEnd, d),
		mdNote, symNote)
	for _, note := range []string{inlNote, relNote} {
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	if hasTail {
		res.Notes = append(res.Notes, fmt.Sprintf("new section %s at RVA %#x (its old address) with the %#x bytes of %s after the table", tailName(sName), tailVA, tail.rawSize, sName))
	}
	return out, nil
}

// tailName names the section split off section name: the name and a "2",
// in PE's eight bytes.
func tailName(name string) string {
	return name[:min(len(name), 7)] + "2"
}

func alignUp32(x, a uint32) uint32 { return uint32(alignUp(uint64(x), uint64(a))) }

// peFixSymbols updates the COFF symbol table of out (moved by shiftOff
// from where data has it): symbols of section sNum (1-based) in the old
// pclntab (pS bytes at section offset pOff) move to the new last section
// nNum through m (addresses, sBase and nBase the sections' addresses);
// with a tail section, those at or past tailOff move to it (number
// sNum+1), and every later section's number grows by one.
func peFixSymbols(out, data []byte, shiftOff func(uint32) uint32, sNum int, hasTail bool, tailOff uint32, nNum int, pOff, pS uint32, sBase, nBase uint64, m remap) (string, error) {
	le := binary.LittleEndian
	coff := uint64(le.Uint32(data[0x3c:])) + 4 // parsePELayout checked it
	ptr, nsyms := le.Uint32(data[coff+8:]), le.Uint32(data[coff+12:])
	if ptr == 0 {
		return "no COFF symbol table", nil
	}
	// The string table follows the symbols, and moves with them; Go's
	// linker writes one with no symbols under -s (Go 1.20 and 1.26 both).
	newPtr := shiftOff(ptr)
	le.PutUint32(out[coff+8:], newPtr)
	if nsyms == 0 {
		return fmt.Sprintf("no COFF symbols; their string table moved from %#x to %#x", ptr, newPtr), nil
	}
	if uint64(newPtr)+18*uint64(nsyms) > uint64(len(out)) {
		return "", fmt.Errorf("COFF symbol table (%d records at %#x) runs past the file", nsyms, ptr)
	}
	moved, toTail := 0, 0
	for i := uint64(0); i < uint64(nsyms); {
		b := out[uint64(newPtr)+18*i:]
		sec := int(int16(le.Uint16(b[12:])))
		aux := uint64(b[17])
		val := le.Uint32(b[8:])
		switch {
		case sec == sNum && (val >= pOff && val < pOff+pS || val == pOff+pS && peSymName(out, newPtr, nsyms, b) == "runtime.epclntab"):
			nv, in, err := m.addr(sBase + uint64(val))
			if err != nil || !in {
				return "", fmt.Errorf("COFF symbol %d at section offset %#x in the pclntab: cannot move it (%v)", i, val, err)
			}
			le.PutUint32(b[8:], uint32(nv-nBase))
			le.PutUint16(b[12:], uint16(nNum))
			moved++
		case sec == sNum && hasTail && val >= tailOff:
			le.PutUint32(b[8:], val-tailOff)
			le.PutUint16(b[12:], uint16(sNum+1))
			toTail++
		case sec > sNum && hasTail:
			le.PutUint16(b[12:], uint16(sec+1))
		}
		i += 1 + aux
	}
	return fmt.Sprintf("COFF symbols: %d moved to %s, %d to the split-off section, later sections renumbered", moved, PEPclntabSection, toTail), nil
}

// peSymName returns the name of COFF symbol record b of the table of nsyms
// records at ptr in out, or "" if it cannot be read.
func peSymName(out []byte, ptr, nsyms uint32, b []byte) string {
	le := binary.LittleEndian
	if le.Uint32(b) != 0 {
		return cstring(b[:8])
	}
	strs := uint64(ptr) + 18*uint64(nsyms) + uint64(le.Uint32(b[4:]))
	if strs >= uint64(len(out)) {
		return ""
	}
	return cstring(out[strs:min(uint64(len(out)), strs+256)])
}
