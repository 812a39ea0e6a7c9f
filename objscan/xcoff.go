package objscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// XCOFF is the container format of aix/ppc64 builds: a 64-bit XCOFF file,
// big-endian, whose layout is in AIX's <xcoff.h> (and Go's internal/xcoff,
// which other packages cannot import). objscan reads its section headers
// and the symbols it looks up, nothing more.
const (
	xcoffMagic64      = 0x01f7
	xcoffFileHdrSize  = 24 // f_magic, f_nscns, f_timdat, f_symptr, f_opthdr, f_flags, f_nsyms
	xcoffSectHdrSize  = 72 // s_name, s_paddr, s_vaddr, s_size, s_scnptr, s_relptr, s_lnnoptr, s_nreloc, s_nlnno, s_flags, pad
	xcoffSymSize      = 18 // n_value, n_offset, n_scnum, n_type, n_sclass, n_numaux; auxiliary entries are as long
	xcoffStypText     = 0x20
	xcoffStypData     = 0x40
	xcoffStypBss      = 0x80
	xcoffStypOverflow = 0x8000 // relocation overflow sections
)

// openXCOFF reads the 64-bit XCOFF file in r, of size bytes. Go's linker
// puts the read-only data, the pclntab among it, in the .text section on
// AIX: the pclntab is found by the runtime.pclntab symbols, or else by the
// scan for its magic, which reads .text too in an XCOFF file.
func openXCOFF(r io.ReaderAt, size int64) (*image, error) {
	var hdr [xcoffFileHdrSize]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("XCOFF: file header: %w", truncated(err, r))
	}
	be := binary.BigEndian
	nscns := int64(be.Uint16(hdr[2:]))
	symptr := be.Uint64(hdr[8:])
	opthdr := int64(be.Uint16(hdr[16:]))
	nsyms := int64(int32(be.Uint32(hdr[20:])))
	shoff := int64(xcoffFileHdrSize) + opthdr
	if nscns*xcoffSectHdrSize > size-shoff {
		return nil, fmt.Errorf("XCOFF: %w: %d section headers of %d bytes at offset %#x run past the end of the %d-byte file", ErrTruncated, nscns, xcoffSectHdrSize, shoff, size)
	}
	shdrs := make([]byte, nscns*xcoffSectHdrSize)
	if _, err := r.ReadAt(shdrs, shoff); err != nil {
		return nil, fmt.Errorf("XCOFF: section headers at offset %#x: %w", shoff, truncated(err, r))
	}
	im := &image{format: "xcoff", goos: "aix", goarch: "ppc64", order: be, ptrSize: 8}
	for i := range nscns {
		h := shdrs[i*xcoffSectHdrSize:]
		name := string(bytes.TrimRight(h[:8], "\x00"))
		vaddr, sz, scnptr, flags := be.Uint64(h[16:]), be.Uint64(h[24:]), be.Uint64(h[32:]), be.Uint32(h[64:])
		if flags&(xcoffStypText|xcoffStypData) == 0 || flags&(xcoffStypBss|xcoffStypOverflow) != 0 || sz == 0 {
			continue // DWARF, the loader section, .bss: nothing objscan reads
		}
		if scnptr > uint64(size) || sz > uint64(size)-scnptr {
			return nil, fmt.Errorf("XCOFF: %w: section %d %s (header at %#x): %d bytes at file offset %#x lie outside the %d-byte file", ErrTruncated, i, name, shoff+i*xcoffSectHdrSize, sz, scnptr, size)
		}
		im.sections = append(im.sections, segment{
			name: name, addr: vaddr, size: sz, off: int64(scnptr), filesize: sz,
			exec: flags&xcoffStypText != 0, write: flags&xcoffStypData != 0, r: r,
		})
	}
	syms, err := xcoffSymbols(r, size, symptr, nsyms)
	if err != nil {
		return nil, fmt.Errorf("XCOFF: symbol table: %w", err)
	}
	im.syms = syms
	im.finish()
	return im, nil
}

// xcoffSymbols reads the symbols of wantSyms from the symbol table of
// nsyms entries at symptr and the string table after it; a stripped file
// has none (symptr and nsyms 0). Tables that do not fit in the file, and
// names outside the string table, are errors.
func xcoffSymbols(r io.ReaderAt, size int64, symptr uint64, nsyms int64) (map[string]uint64, error) {
	m := make(map[string]uint64)
	if nsyms == 0 {
		return m, nil
	}
	if nsyms < 0 {
		return nil, fmt.Errorf("f_nsyms (at 0x14) is negative: %d", nsyms)
	}
	// The symbols, and the string table's length after them.
	if symptr > uint64(size) || nsyms*xcoffSymSize+4 > size-int64(symptr) {
		return nil, fmt.Errorf("%w: %d symbols of %d bytes and a string table at file offset %#x run past the end of the %d-byte file", ErrTruncated, nsyms, xcoffSymSize, symptr, size)
	}
	tab := make([]byte, nsyms*xcoffSymSize+4)
	if _, err := r.ReadAt(tab, int64(symptr)); err != nil {
		return nil, fmt.Errorf("reading %d symbols at file offset %#x: %w", nsyms, symptr, err)
	}
	strtab := int64(symptr) + nsyms*xcoffSymSize
	strlen := int64(binary.BigEndian.Uint32(tab[len(tab)-4:]))
	if strlen < 4 || strlen > size-strtab {
		return nil, fmt.Errorf("%w: the string table at file offset %#x claims %d bytes; %d remain in the file", ErrTruncated, strtab, strlen, size-strtab)
	}
	strs := make([]byte, strlen)
	if _, err := r.ReadAt(strs, strtab); err != nil {
		return nil, fmt.Errorf("reading the %d-byte string table at file offset %#x: %w", strlen, strtab, err)
	}
	for i := int64(0); i < nsyms; i++ {
		e := tab[i*xcoffSymSize:]
		off := int64(binary.BigEndian.Uint32(e[8:]))
		if off >= strlen {
			return nil, fmt.Errorf("symbol %d (at file offset %#x): name offset %#x is outside the %d-byte string table", i, int64(symptr)+i*xcoffSymSize, off, strlen)
		}
		i += int64(e[17]) // skip the auxiliary entries
		name, _, _ := bytes.Cut(strs[off:], []byte{0})
		if wantSyms[string(name)] {
			if _, dup := m[string(name)]; !dup {
				m[string(name)] = binary.BigEndian.Uint64(e)
			}
		}
	}
	return m, nil
}
