package rewrite

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// PE section characteristics of the appended section: initialized,
// readable, discardable data (as Go's own .reloc).
const peLinearCharacteristics = pe.IMAGE_SCN_CNT_INITIALIZED_DATA | pe.IMAGE_SCN_MEM_DISCARDABLE | pe.IMAGE_SCN_MEM_READ

// safePE parses data with debug/pe, turning its panics into errors.
func safePE(data []byte) (f *pe.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("PE: malformed file (debug/pe failed: %v)", p)
		}
	}()
	f, err = pe.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("PE: %w", err)
	}
	return f, nil
}

// peLayout holds the raw offsets of the PE headers append mode edits.
type peLayout struct {
	nsectAt     uint64 // file offset of the COFF header's NumberOfSections
	optAt       uint64 // file offset of the optional header
	sectAt      uint64 // file offset of the section table
	nsect       uint64
	fileAlign   uint64
	sectAlign   uint64
	sizeHeaders uint64
}

// parsePELayout reads the header fields append mode needs, checking each
// offset against the file.
func parsePELayout(data []byte) (*peLayout, error) {
	if len(data) < 0x40 {
		return nil, errors.New("PE: shorter than a DOS header")
	}
	le := binary.LittleEndian
	sig := uint64(le.Uint32(data[0x3c:]))
	if sig > uint64(len(data)) || uint64(len(data))-sig < 4+20 || string(data[sig:sig+4]) != "PE\x00\x00" {
		return nil, fmt.Errorf("PE: no PE signature at %#x", sig)
	}
	coff := sig + 4
	l := &peLayout{nsectAt: coff + 2, optAt: coff + 20, nsect: uint64(le.Uint16(data[coff+2:]))}
	optSize := uint64(le.Uint16(data[coff+16:]))
	if uint64(len(data))-l.optAt < max(optSize, 64) {
		return nil, fmt.Errorf("PE: optional header of %d bytes at %#x runs past the file", optSize, l.optAt)
	}
	l.sectAlign = uint64(le.Uint32(data[l.optAt+32:]))
	l.fileAlign = uint64(le.Uint32(data[l.optAt+36:]))
	l.sizeHeaders = uint64(le.Uint32(data[l.optAt+60:]))
	l.sectAt = l.optAt + optSize
	if l.sectAt+40*l.nsect > uint64(len(data)) {
		return nil, fmt.Errorf("PE: %d section headers at %#x run past the file", l.nsect, l.sectAt)
	}
	if l.fileAlign == 0 || l.fileAlign&(l.fileAlign-1) != 0 || l.sectAlign == 0 || l.sectAlign&(l.sectAlign-1) != 0 {
		return nil, fmt.Errorf("PE: file alignment %#x or section alignment %#x is not a power of two", l.fileAlign, l.sectAlign)
	}
	n := uint64(len(data))
	if l.sizeHeaders > n {
		return nil, fmt.Errorf("PE: SizeOfHeaders (at %#x) %#x is larger than the %d-byte file", l.optAt+60, l.sizeHeaders, n)
	}
	if err := checkAlign(fmt.Sprintf("PE: FileAlignment (at %#x)", l.optAt+36), l.fileAlign, n); err != nil {
		return nil, err
	}
	if err := checkAlign(fmt.Sprintf("PE: SectionAlignment (at %#x)", l.optAt+32), l.sectAlign, n); err != nil {
		return nil, err
	}
	for i := range l.nsect {
		at := l.sectAt + 40*i
		size, off := uint64(le.Uint32(data[at+16:])), uint64(le.Uint32(data[at+20:]))
		if size > 0 && off > 0 && !inFile(off, size, n) {
			return nil, fmt.Errorf("PE: %w: section %d (header at %#x): %d bytes at file offset %#x lie outside the %d-byte file", objscan.ErrTruncated, i, at, size, off, n)
		}
	}
	return l, nil
}

// appendPE adds the linear tables to a PE file as a new discardable section
// (objscan.LinearSectionPE) after the last one: its header goes in the
// room the headers leave before the first section's data, its data at the
// end of the file, padded to the file alignment, and SizeOfImage grows to
// cover it. No other byte changes.
func appendPE(data []byte, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
	pf, err := safePE(data)
	if err != nil {
		return nil, err
	}
	if pf.Section(objscan.LinearSectionPE) != nil {
		return nil, fmt.Errorf("the binary already has a %s section", objscan.LinearSectionPE)
	}
	l, err := parsePELayout(data)
	if err != nil {
		return nil, err
	}
	sec, err := buildSection(f, lt)
	if err != nil {
		return nil, err
	}
	res.SectionBytes = int64(len(sec))
	le := binary.LittleEndian
	// Room for one more section header before any section's data.
	firstData, vaEnd := uint64(len(data)), uint64(0)
	for _, s := range pf.Sections {
		if s.Size > 0 && s.Offset > 0 {
			firstData = min(firstData, uint64(s.Offset))
		}
		vaEnd = max(vaEnd, uint64(s.VirtualAddress)+uint64(max(s.VirtualSize, s.Size)))
	}
	hdrAt := l.sectAt + 40*l.nsect
	if hdrAt+40 > min(firstData, l.sizeHeaders) {
		return nil, fmt.Errorf("no room for another section header: the table ends at %#x and the headers at %#x (first section data at %#x); the sections' data would have to move by %#x bytes", hdrAt, l.sizeHeaders, firstData, l.fileAlign)
	}
	if l.nsect >= 96 {
		return nil, fmt.Errorf("PE allows at most 96 sections; the file has %d", l.nsect)
	}
	off := alignUp(uint64(len(data)), l.fileAlign)
	raw := alignUp(uint64(len(sec)), l.fileAlign)
	va := alignUp(vaEnd, l.sectAlign)
	if off+raw > 1<<32-1 || alignUp(va+uint64(len(sec)), l.sectAlign) > 1<<32-1 {
		return nil, errors.New("the new section would lie past 4 GiB, beyond PE's 32-bit offsets")
	}
	out := append([]byte(nil), data...)
	out = appendZeros(out, off)
	out = append(out, sec...)
	out = appendZeros(out, off+raw)
	h := out[hdrAt : hdrAt+40]
	copy(h[:8], objscan.LinearSectionPE)
	le.PutUint32(h[8:], uint32(len(sec))) // VirtualSize
	le.PutUint32(h[12:], uint32(va))      // VirtualAddress
	le.PutUint32(h[16:], uint32(raw))     // SizeOfRawData
	le.PutUint32(h[20:], uint32(off))     // PointerToRawData
	le.PutUint32(h[36:], peLinearCharacteristics)
	le.PutUint16(out[l.nsectAt:], uint16(l.nsect+1))
	le.PutUint32(out[l.optAt+56:], uint32(alignUp(va+uint64(len(sec)), l.sectAlign))) // SizeOfImage
	if _, err := safePE(out); err != nil {
		return nil, fmt.Errorf("internal error: the output is not valid PE: %w", err)
	}
	res.Parts = append(sectionParts(f, lt, objscan.LinearSectionPE),
		Part{Name: "alignment before the section", New: int64(off - uint64(len(data))), Note: fmt.Sprintf("to the %#x-byte file alignment", l.fileAlign)},
		Part{Name: "alignment after the section", New: int64(raw - uint64(len(sec))), Note: "raw data is a multiple of the file alignment"},
		Part{Name: "section header", Note: fmt.Sprintf("40 bytes at %#x, in the headers' padding: no file bytes", hdrAt)},
	)
	res.Notes = append(res.Notes, fmt.Sprintf("new section %s at virtual address %#x (discardable); SizeOfImage and NumberOfSections updated, no other byte changed", objscan.LinearSectionPE, va))
	return out, nil
}

// sectionParts itemizes the bytes of the append-mode section named name.
func sectionParts(f *objscan.File, lt *linearTables, name string) []Part {
	return []Part{
		{Name: name + " header", New: objscan.LinearSectionHdrSize},
		{Name: "function lengths (out of band)", New: 4 * int64(len(f.Funcs)), Note: "one uint32 per function", kind: kindOutOfBand},
		{Name: "index: (varint offset, length) -> linear offset", New: 12 * int64(len(lt.index)), Note: "append mode only: maps the untouched _func offsets to the linear tables"},
		{Name: "linear tables", New: int64(len(lt.data)), Note: fmt.Sprintf("%d bytes of encodings, a pad byte before them and %d after", lt.set.Size(), objscan.LinearPad), kind: kindTables},
	}
}

// samePESections reports, as an error, any change append mode must not
// make to a PE file: a header field other than NumberOfSections and
// SizeOfImage, or an old section's header or data.
func samePESections(a, b []byte) error {
	pa, err := safePE(a)
	if err != nil {
		return fmt.Errorf("first file: %w", err)
	}
	pb, err := safePE(b)
	if err != nil {
		return fmt.Errorf("second file: %w", err)
	}
	if pa.FileHeader.Machine != pb.FileHeader.Machine || len(pb.Sections) != len(pa.Sections)+1 {
		return fmt.Errorf("machine or section count changed: %d sections, now %d", len(pa.Sections), len(pb.Sections))
	}
	for i, sa := range pa.Sections {
		sb := pb.Sections[i]
		if sa.SectionHeader != sb.SectionHeader {
			return fmt.Errorf("section %d (%s): header changed", i, sa.Name)
		}
		if uint64(sa.Offset)+uint64(sa.Size) > uint64(len(a)) || uint64(sb.Offset)+uint64(sb.Size) > uint64(len(b)) {
			return fmt.Errorf("section %d (%s) runs past the end of a file", i, sa.Name)
		}
		if !bytes.Equal(a[sa.Offset:sa.Offset+sa.Size], b[sb.Offset:sb.Offset+sb.Size]) {
			return fmt.Errorf("section %d (%s): data changed", i, sa.Name)
		}
	}
	la, err := parsePELayout(a)
	if err != nil {
		return err
	}
	// The headers up to the section table: equal except the two fields.
	ha, hb := bytes.Clone(a[:la.sectAt]), bytes.Clone(b[:la.sectAt])
	for _, at := range []uint64{la.nsectAt, la.optAt + 56} {
		clear(ha[at : at+4][:2+2*b2i(at != la.nsectAt)])
		clear(hb[at : at+4][:2+2*b2i(at != la.nsectAt)])
	}
	if !bytes.Equal(ha, hb) {
		return errors.New("a header field other than NumberOfSections and SizeOfImage changed")
	}
	return nil
}
