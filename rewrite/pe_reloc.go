package rewrite

import (
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/pctab/pctab/objscan"
)

// PE base relocations. Go 1.18-1.25 linkers give pcHeader.textStart, the
// one absolute word of their pclntab, a base relocation (DIR64, or
// HIGHLOW on 386) when the image has them. Replace mode moves it with the
// table: the old entry becomes an IMAGE_REL_BASED_ABSOLUTE entry, which
// the loader skips (the padding entry of the format), and a new block for
// the page of the new pcHeader's textStart word is added at the end of the
// directory, in the file alignment padding of the section holding it
// (.reloc): the directory's size and the section's virtual size grow by
// the block's 12 bytes. The block starts where the directory ended, as
// every block follows the one before it: Go linkers before 1.23 or so
// write blocks with an odd number of entries and no padding entry, so
// their blocks are not all 4-byte aligned, and Windows loads them. The
// Windows loader applies base relocations to read-only sections (Go's
// linker relocates .rdata), so the new section stays read-only.

// peRelocBlock is the size of the block replace mode adds: its header, the
// entry, and an ABSOLUTE entry that keeps the block 4-byte aligned.
const peRelocBlock = 12

// peRelocPart names the Result part of the base relocations.
const peRelocPart = "base relocations"

// peBaseRelocs is the base relocation directory of a PE file, as
// peRelocsOutside found it.
type peBaseRelocs struct {
	dir     pe.DataDirectory
	off     uint64 // file offset of the directory in the input
	sect    int    // 0-based number of the section that holds it
	tsEntry uint64 // file offset (input) of the entry of pcHeader.textStart; 0 if none
	tsType  uint16 // its relocation type
}

// peRelocsOutside checks that no base relocation of data lies in the
// pclntab (pS bytes at RVA pR) but one of pcHeader.textStart, at RVA
// textStart in a Go 1.18+ layout (0 in older ones), which it returns with
// the directory.
func peRelocsOutside(data []byte, pf *pe.File, pR, pS, textStart uint32) (peBaseRelocs, error) {
	var br peBaseRelocs
	switch oh := pf.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		if oh.NumberOfRvaAndSizes > pe.IMAGE_DIRECTORY_ENTRY_BASERELOC {
			br.dir = oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_BASERELOC]
		}
	case *pe.OptionalHeader32:
		if oh.NumberOfRvaAndSizes > pe.IMAGE_DIRECTORY_ENTRY_BASERELOC {
			br.dir = oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_BASERELOC]
		}
	}
	if br.dir.Size == 0 {
		return br, nil
	}
	dir := br.dir
	var b []byte
	for i, s := range pf.Sections {
		if dir.VirtualAddress >= s.VirtualAddress && uint64(dir.VirtualAddress)+uint64(dir.Size) <= uint64(s.VirtualAddress)+uint64(min(s.Size, s.VirtualSize)) {
			off := uint64(s.Offset) + uint64(dir.VirtualAddress-s.VirtualAddress)
			if off+uint64(dir.Size) > uint64(len(data)) {
				break
			}
			b, br.off, br.sect = data[off:off+uint64(dir.Size)], off, i
		}
	}
	if b == nil {
		return br, fmt.Errorf("base relocations (%d bytes at RVA %#x) are not in a section's file bytes", dir.Size, dir.VirtualAddress)
	}
	le := binary.LittleEndian
	for at := 0; at+8 <= len(b); {
		page, size := le.Uint32(b[at:]), int(le.Uint32(b[at+4:]))
		if size < 8 || size > len(b)-at {
			return br, fmt.Errorf("base relocation block at RVA %#x+%#x: size %d out of range", dir.VirtualAddress, at, size)
		}
		for k := at + 8; k+2 <= at+size; k += 2 {
			e := le.Uint16(b[k:])
			if e>>12 == 0 {
				continue // padding
			}
			rva := page + uint32(e&0xfff)
			switch {
			case rva == textStart && textStart != 0 && br.tsEntry == 0:
				br.tsEntry, br.tsType = br.off+uint64(k), e>>12
			case rva >= pR && rva-pR < pS:
				return br, fmt.Errorf("a base relocation (type %d) at RVA %#x lies in the pclntab (RVA %#x, %d bytes); only one of pcHeader.textStart moves with the table", e>>12, rva, pR, pS)
			}
		}
		at += size
	}
	return br, nil
}

// moveTextStart moves the relocation of pcHeader.textStart in out, laid
// out with the section table table, to newTS, the RVA of the new table's
// textStart word; sectAt is the file offset of the section table and
// dirAt that of the base relocation data directory entry. It returns a
// note for the Result, or "" when there was no such relocation. The
// section's padding must have room for the block (replacePEGrown makes
// it when it has not).
func (br *peBaseRelocs) moveTextStart(out []byte, table []peSect, sectAt, dirAt uint64, newTS uint32) (string, error) {
	if br.tsEntry == 0 {
		return "", nil
	}
	var s *peSect
	var si int
	for i := range table {
		if table[i].oldIndex == br.sect+1 {
			s, si = &table[i], i
		}
	}
	if s == nil {
		return "", fmt.Errorf("internal error: section %d of the base relocations is not in the output", br.sect+1)
	}
	// The directory's offset in out: the section may have moved.
	delta := int64(s.rawOff) - int64(s.oldRawOff)
	entry := uint64(int64(br.tsEntry) + delta)
	end := uint64(br.dir.VirtualAddress - s.va + br.dir.Size) // section offset of the directory's end
	if end+peRelocBlock > uint64(s.rawSize) {
		return "", fmt.Errorf("no room for the base relocation of the new pcHeader.textStart: %s's raw data (%d bytes) has %d bytes after the directory's %d, and a block needs %d", cstring(s.name[:]), s.rawSize, int64(s.rawSize)-int64(end), br.dir.Size, peRelocBlock)
	}
	le := binary.LittleEndian
	o := uint64(s.rawOff) + end
	if o+peRelocBlock > uint64(len(out)) || entry+2 > uint64(len(out)) {
		return "", fmt.Errorf("internal error: base relocations at %#x run past the output", o)
	}
	for _, c := range out[o : o+peRelocBlock] {
		if c != 0 {
			return "", fmt.Errorf("the %d bytes after the base relocations (file offset %#x) are not zero padding", peRelocBlock, o)
		}
	}
	le.PutUint16(out[entry:], 0) // IMAGE_REL_BASED_ABSOLUTE: skipped
	le.PutUint32(out[o:], newTS&^0xfff)
	le.PutUint32(out[o+4:], peRelocBlock)
	le.PutUint16(out[o+8:], br.tsType<<12|uint16(newTS&0xfff))
	le.PutUint32(out[dirAt+4:], br.dir.Size+peRelocBlock)
	if vEnd := uint32(end) + peRelocBlock; s.vsize < vEnd {
		s.vsize = vEnd
		s.put(out[sectAt+40*uint64(si):])
	}
	return fmt.Sprintf("base relocation of pcHeader.textStart (type %d) moved from file offset %#x (now an ABSOLUTE entry) to a new block for page %#x at the end of the directory (%#x, %d bytes more)", br.tsType, entry, newTS&^0xfff, o, peRelocBlock), nil
}

// room returns how many bytes of file alignment padding follow the base
// relocation directory in the raw data of its section (sects: the input's).
func (br *peBaseRelocs) room(sects []peSect) int64 {
	s := &sects[br.sect]
	return int64(s.rawSize) - int64(br.dir.VirtualAddress-s.va) - int64(br.dir.Size)
}

// replacePEGrown is replacePE for a file whose base relocation section
// (number idx, 0-based, in sects) has no room for another block in its
// file alignment padding: the section's raw data grows by fa bytes (one
// file alignment unit; the file contents after it move), and replacePE
// rewrites that file. The Result gets a part for the fa bytes.
func replacePEGrown(data []byte, l *peLayout, sects []peSect, idx int, fa uint32, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
	if fa < peRelocBlock {
		return nil, fmt.Errorf("file alignment %#x is below PE's minimum", fa)
	}
	grown, err := peGrowSection(data, l, sects, idx, fa)
	if err != nil {
		return nil, err
	}
	out, err := replacePE(grown, f, lt, res)
	if err != nil {
		return nil, err
	}
	name := cstring(sects[idx].name[:])
	i := slices.IndexFunc(res.Parts, func(p Part) bool { return p.Name == peRelocPart })
	if i < 0 {
		return nil, errors.New("internal error: no base relocation part after growing their section")
	}
	res.Parts[i].New = int64(fa)
	res.Parts[i].Note = fmt.Sprintf("%s grows by one %#x-byte file alignment unit: its padding had no room for the %d-byte block of the new pcHeader.textStart", name, fa, peRelocBlock)
	res.Notes = append(res.Notes, fmt.Sprintf("%s grew by %d bytes of raw data for the new base relocation block; the file contents after it moved", name, fa))
	return out, nil
}

// peGrowSection returns a copy of data in which section idx (0-based; sects
// is the section table) has by more zero bytes of raw data, and every
// file offset after its old end (other sections' data, the COFF symbol
// table) has moved by by. The section must keep clear of the next
// section's address.
func peGrowSection(data []byte, l *peLayout, sects []peSect, idx int, by uint32) ([]byte, error) {
	s := sects[idx]
	end := uint64(s.rawOff) + uint64(s.rawSize)
	if end > uint64(len(data)) || uint64(len(data))+uint64(by) > 1<<32-1 {
		return nil, fmt.Errorf("section %s: %d bytes at file offset %#x do not fit the file, or the file would pass 4 GiB", cstring(s.name[:]), s.rawSize, s.rawOff)
	}
	for i := range sects {
		if q := &sects[i]; q.va > s.va && uint64(s.va)+uint64(s.rawSize)+uint64(by) > uint64(q.va) {
			return nil, fmt.Errorf("section %s (RVA %#x, %d bytes of raw data) cannot grow by %d bytes: section %s starts at RVA %#x", cstring(s.name[:]), s.va, s.rawSize, by, cstring(q.name[:]), q.va)
		}
	}
	out := make([]byte, 0, uint64(len(data))+uint64(by))
	out = append(out, data[:end]...)
	out = appendZeros(out, end+uint64(by))
	out = append(out, data[end:]...)
	for i := range sects {
		q := sects[i]
		if i == idx {
			q.rawSize += by
		} else if q.rawSize > 0 && uint64(q.rawOff) >= end {
			q.rawOff += by
		}
		q.put(out[l.sectAt+40*uint64(i):])
	}
	le := binary.LittleEndian
	coff := l.nsectAt - 2
	if ptr := le.Uint32(out[coff+8:]); ptr != 0 && uint64(ptr) >= end {
		le.PutUint32(out[coff+8:], ptr+by)
	}
	return out, nil
}
