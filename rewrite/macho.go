package rewrite

import (
	"bytes"
	"crypto/sha256"
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// Mach-O constants append mode uses (mach-o/loader.h, kern/cs_blobs.h).
const (
	machoHeaderSize64  = 32
	machoSegCmdSize64  = 72
	machoSectSize64    = 80
	lcSegment64        = 0x19
	lcCodeSignature    = 0x1d
	sAttrDebug         = 0x02000000
	csMagicEmbedded    = 0xfade0cc0
	csMagicCodeDir     = 0xfade0c02
	csHashTypeSHA256   = 2
	machoLinearCmdSize = machoSegCmdSize64 + machoSectSize64
)

// safeMachO parses data with debug/macho, turning its panics into errors.
func safeMachO(data []byte) (f *macho.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("Mach-O: malformed file (debug/macho failed: %v)", p)
		}
	}()
	f, err = macho.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("Mach-O: %w", err)
	}
	return f, nil
}

// checkMachO checks the counts, file ranges and alignments of a Mach-O
// file's segments and sections against its size, before anything is laid
// out from them: a segment or section whose bytes lie outside the file is
// truncated (objscan.ErrTruncated), and an alignment larger than the file
// is refused.
func checkMachO(mf *macho.File, size uint64) error {
	for _, l := range mf.Loads {
		s, ok := l.(*macho.Segment)
		if !ok {
			continue
		}
		if s.Filesz > 0 && !inFile(s.Offset, s.Filesz, size) {
			return fmt.Errorf("Mach-O: %w: segment %s: %d bytes at file offset %#x lie outside the %d-byte file", objscan.ErrTruncated, s.Name, s.Filesz, s.Offset, size)
		}
	}
	for _, s := range mf.Sections {
		if err := checkAlignLog(fmt.Sprintf("Mach-O: section %s,%s: alignment", s.Seg, s.Name), s.Align, size); err != nil {
			return err
		}
		zerofill := s.Flags&0xff == 1 || s.Flags&0xff == 0x12 // S_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
		if !zerofill && s.Offset != 0 && s.Size > 0 && !inFile(uint64(s.Offset), s.Size, size) {
			return fmt.Errorf("Mach-O: %w: section %s,%s: %d bytes at file offset %#x lie outside the %d-byte file", objscan.ErrTruncated, s.Seg, s.Name, s.Size, s.Offset, size)
		}
	}
	return nil
}

// appendMachO adds the linear tables to a 64-bit Mach-O file in a new
// segment (objscan.LinearSegmentMachO) with one section, which is not
// mapped: like the __DWARF segment Go's linker writes, its vmsize is 0.
// Its load command goes in the room after the load commands, its data at
// the end of the file, page-aligned. An ad-hoc code signature is brought up
// to date: the page hashes of its code directory are recomputed (the load
// commands are in the first page it covers). No other byte changes.
func appendMachO(data []byte, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
	mf, err := safeMachO(data)
	if err != nil {
		return nil, err
	}
	if mf.Magic != macho.Magic64 || mf.ByteOrder != binary.LittleEndian {
		return nil, errors.New("only little-endian 64-bit Mach-O files (darwin/amd64, darwin/arm64) are supported")
	}
	if err := checkMachO(mf, uint64(len(data))); err != nil {
		return nil, err
	}
	if mf.Segment(objscan.LinearSegmentMachO) != nil {
		return nil, fmt.Errorf("the binary already has a %s segment", objscan.LinearSegmentMachO)
	}
	sec, err := buildSection(f, lt)
	if err != nil {
		return nil, err
	}
	res.SectionBytes = int64(len(sec))
	le := binary.LittleEndian
	cmdsEnd := uint64(machoHeaderSize64) + uint64(mf.Cmdsz)
	firstData, vmEnd := uint64(len(data)), uint64(0)
	for _, s := range mf.Sections {
		if s.Offset > 0 && s.Size > 0 {
			firstData = min(firstData, uint64(s.Offset))
		}
	}
	for _, l := range mf.Loads {
		if s, ok := l.(*macho.Segment); ok {
			vmEnd = max(vmEnd, s.Addr+s.Memsz)
		}
	}
	if cmdsEnd+machoLinearCmdSize > firstData {
		return nil, fmt.Errorf("no room for another load command: the load commands end at %#x and the first section's data starts at %#x, %d bytes are needed", cmdsEnd, firstData, machoLinearCmdSize)
	}
	if !allZero(data[cmdsEnd : cmdsEnd+machoLinearCmdSize]) {
		return nil, fmt.Errorf("the %d bytes after the load commands (at %#x) are not free", machoLinearCmdSize, cmdsEnd)
	}
	page := uint64(0x1000)
	if mf.Cpu == macho.CpuArm64 {
		page = 0x4000
	}
	off := alignUp(uint64(len(data)), page)
	if off+uint64(len(sec)) > 1<<32-1 {
		return nil, errors.New("the new section would lie past 4 GiB, beyond its 32-bit file offset")
	}
	out := append([]byte(nil), data...)
	out = appendZeros(out, off)
	out = append(out, sec...)
	vmaddr := alignUp(vmEnd, page)
	c := out[cmdsEnd : cmdsEnd+machoLinearCmdSize]
	le.PutUint32(c[0:], lcSegment64)
	le.PutUint32(c[4:], machoLinearCmdSize)
	copy(c[8:24], objscan.LinearSegmentMachO)
	le.PutUint64(c[24:], vmaddr)           // vmaddr
	le.PutUint64(c[32:], 0)                // vmsize: not mapped
	le.PutUint64(c[40:], off)              // fileoff
	le.PutUint64(c[48:], uint64(len(sec))) // filesize
	le.PutUint32(c[64:], 1)                // nsects (maxprot, initprot 0)
	s := c[machoSegCmdSize64:]
	copy(s[0:16], objscan.LinearSectionMachO)
	copy(s[16:32], objscan.LinearSegmentMachO)
	le.PutUint64(s[32:], vmaddr)           // addr
	le.PutUint64(s[40:], uint64(len(sec))) // size
	le.PutUint32(s[48:], uint32(off))      // offset
	le.PutUint32(s[52:], 3)                // align: 2^3
	le.PutUint32(s[64:], sAttrDebug)       // flags: debug data, not loaded
	le.PutUint32(out[16:], mf.Ncmd+1)
	le.PutUint32(out[20:], mf.Cmdsz+machoLinearCmdSize)
	signed, err := resignMachO(out)
	if err != nil {
		return nil, err
	}
	if _, err := safeMachO(out); err != nil {
		return nil, fmt.Errorf("internal error: the output is not valid Mach-O: %w", err)
	}
	res.Parts = append(sectionParts(f, lt, objscan.LinearSectionMachO),
		Part{Name: "alignment before the section", New: int64(off - uint64(len(data))), Note: fmt.Sprintf("to a %#x-byte page", page)},
		Part{Name: "load command", Note: fmt.Sprintf("%d bytes at %#x, in the padding after the load commands: no file bytes", machoLinearCmdSize, cmdsEnd)},
	)
	res.Notes = append(res.Notes, fmt.Sprintf("new segment %s (vmsize 0, not mapped) with section %s; ncmds and sizeofcmds updated", objscan.LinearSegmentMachO, objscan.LinearSectionMachO))
	if signed > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("ad-hoc code signature brought up to date: %d page hash(es) recomputed (the new section lies past the signed range)", signed))
	}
	return out, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// codeDirectory locates the code directory of data's embedded code
// signature: its offset, the code limit, the hashes' offset, size and page
// size. ok is false if the file has no LC_CODE_SIGNATURE.
func codeDirectory(data []byte) (cd, limit, hashes, nslots, pageSize uint64, ok bool, err error) {
	mf, err := safeMachO(data)
	if err != nil {
		return 0, 0, 0, 0, 0, false, err
	}
	le, be := binary.LittleEndian, binary.BigEndian
	for _, l := range mf.Loads {
		raw := l.Raw()
		if len(raw) < 16 || le.Uint32(raw) != lcCodeSignature {
			continue
		}
		off, size := uint64(le.Uint32(raw[8:])), uint64(le.Uint32(raw[12:]))
		if off+size > uint64(len(data)) || size < 12 {
			return 0, 0, 0, 0, 0, false, fmt.Errorf("code signature of %d bytes at %#x lies outside the file", size, off)
		}
		blob := data[off : off+size]
		if be.Uint32(blob) != csMagicEmbedded {
			return 0, 0, 0, 0, 0, false, fmt.Errorf("code signature at %#x: magic %#x, want an embedded signature", off, be.Uint32(blob))
		}
		n := uint64(be.Uint32(blob[8:]))
		for i := uint64(0); i < n && 12+8*i+8 <= size; i++ {
			bo := uint64(be.Uint32(blob[12+8*i+4:]))
			if bo+44 > size || be.Uint32(blob[bo:]) != csMagicCodeDir {
				continue
			}
			d := blob[bo:]
			hashOff, nCode, lim := uint64(be.Uint32(d[16:])), uint64(be.Uint32(d[28:])), uint64(be.Uint32(d[32:]))
			hashSize, hashType, ps := uint64(d[36]), d[37], uint64(d[39])
			if hashType != csHashTypeSHA256 || hashSize != sha256.Size || ps == 0 || ps > 20 {
				return 0, 0, 0, 0, 0, false, fmt.Errorf("code directory at %#x: hash type %d of %d bytes, page size 2^%d: only SHA-256 is supported", off+bo, hashType, hashSize, ps)
			}
			if bo+hashOff+nCode*hashSize > size || lim > uint64(len(data)) || nCode != (lim+(1<<ps)-1)>>ps {
				return 0, 0, 0, 0, 0, false, fmt.Errorf("code directory at %#x: %d page hashes for a %d-byte code limit do not fit", off+bo, nCode, lim)
			}
			return off + bo, lim, off + bo + hashOff, nCode, 1 << ps, true, nil
		}
		return 0, 0, 0, 0, 0, false, fmt.Errorf("code signature at %#x has no code directory", off)
	}
	return 0, 0, 0, 0, 0, false, nil
}

// resignMachO recomputes the page hashes of data's code directory in place
// and returns how many changed.
func resignMachO(data []byte) (int, error) {
	_, limit, hashes, n, ps, ok, err := codeDirectory(data)
	if err != nil || !ok {
		return 0, err
	}
	changed := 0
	for i := uint64(0); i < n; i++ {
		h := sha256.Sum256(data[i*ps : min((i+1)*ps, limit)])
		slot := data[hashes+i*sha256.Size : hashes+(i+1)*sha256.Size]
		if !bytes.Equal(slot, h[:]) {
			copy(slot, h[:])
			changed++
		}
	}
	return changed, nil
}

// CheckCodeSignature reports, as an error, any page of a Mach-O file whose
// hash does not match its ad-hoc code signature's code directory. A file
// without a signature passes.
func CheckCodeSignature(data []byte) error {
	_, limit, hashes, n, ps, ok, err := codeDirectory(data)
	if err != nil || !ok {
		return err
	}
	for i := uint64(0); i < n; i++ {
		h := sha256.Sum256(data[i*ps : min((i+1)*ps, limit)])
		if !bytes.Equal(data[hashes+i*sha256.Size:hashes+(i+1)*sha256.Size], h[:]) {
			return fmt.Errorf("code signature: page %d (file offset %#x) does not match its hash", i, i*ps)
		}
	}
	return nil
}

// sameMachOSections reports, as an error, any change append mode must not
// make to a Mach-O file: an old load command, or an old section's data.
func sameMachOSections(a, b []byte) error {
	ma, err := safeMachO(a)
	if err != nil {
		return fmt.Errorf("first file: %w", err)
	}
	mb, err := safeMachO(b)
	if err != nil {
		return fmt.Errorf("second file: %w", err)
	}
	if len(mb.Loads) != len(ma.Loads)+1 || len(mb.Sections) != len(ma.Sections)+1 {
		return fmt.Errorf("%d load commands and %d sections, now %d and %d", len(ma.Loads), len(ma.Sections), len(mb.Loads), len(mb.Sections))
	}
	for i, l := range ma.Loads {
		if !bytes.Equal(l.Raw(), mb.Loads[i].Raw()) {
			return fmt.Errorf("load command %d changed", i)
		}
	}
	for i, sa := range ma.Sections {
		sb := mb.Sections[i]
		if sa.SectionHeader != sb.SectionHeader {
			return fmt.Errorf("section %s,%s: header changed", sa.Seg, sa.Name)
		}
		if sa.Offset == 0 {
			continue // zero fill
		}
		end := uint64(sa.Offset) + sa.Size
		if end > uint64(len(a)) || end > uint64(len(b)) || !bytes.Equal(a[sa.Offset:end], b[sa.Offset:end]) {
			return fmt.Errorf("section %s,%s: data changed", sa.Seg, sa.Name)
		}
	}
	return CheckCodeSignature(b)
}
