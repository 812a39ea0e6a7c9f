package objscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Plan 9 a.out is the container format of plan9/386, amd64 and arm builds
// (Plan 9's a.out(6); Go's debug/plan9obj, which is not hardened against
// hostile files): a big-endian header of eight 32-bit words (magic, text,
// data, bss, syms, entry, spsz, pcsz), followed on amd64 by a 64-bit entry
// point; then the text segment, which holds the read-only data and the
// pclntab too, the data segment and the symbol table. objscan reads the
// header and the symbols it looks up, nothing more.
const (
	plan9Magic64    = 0x8000 // HDR_MAGIC: a 64-bit entry point follows the header
	plan9Magic386   = (4*11+0)*11 + 7
	plan9MagicAMD64 = (4*26+0)*26 + 7 + plan9Magic64
	plan9MagicARM   = (4*20+0)*20 + 7
	plan9HdrSize    = 32
)

// plan9Arch gives, for each magic, the target, its pointer size, where
// Go's linker loads the header (the text segment follows it) and the
// boundary it rounds the data segment's address up to (cmd/link's
// -T and -R defaults for Hplan9).
var plan9Arch = map[uint32]struct {
	goarch      string
	ptrSize     int
	load, round uint64
}{
	plan9Magic386:   {"386", 4, 0x1000, 0x1000},
	plan9MagicAMD64: {"amd64", 8, 0x200000, 0x200000},
	plan9MagicARM:   {"arm", 4, 0x1000, 0x1000},
}

// openPlan9 reads the Plan 9 a.out file in r, of size bytes. The pclntab
// lies in the text segment: it is found by the runtime.pclntab symbols,
// or else (a build with -s has no symbol table) by the scan for its
// magic, which reads the text segment too in a Plan 9 file.
func openPlan9(r io.ReaderAt, size int64) (*image, error) {
	var hdr [plan9HdrSize + 8]byte
	if _, err := r.ReadAt(hdr[:plan9HdrSize], 0); err != nil {
		return nil, fmt.Errorf("Plan 9 a.out: header: %w", truncated(err, r))
	}
	be := binary.BigEndian
	magic := be.Uint32(hdr[:])
	arch, ok := plan9Arch[magic]
	if !ok {
		return nil, fmt.Errorf("Plan 9 a.out: magic %#x is not 386's, amd64's or arm's", magic)
	}
	hdrSize := uint64(plan9HdrSize)
	if magic&plan9Magic64 != 0 {
		hdrSize += 8
	}
	text, data, syms := uint64(be.Uint32(hdr[4:])), uint64(be.Uint32(hdr[8:])), uint64(be.Uint32(hdr[16:]))
	// The sizes are 32-bit and the offsets their sums: nothing wraps.
	if end := hdrSize + text + data + syms; end > uint64(size) {
		return nil, fmt.Errorf("Plan 9 a.out: %w: a %d-byte header, %d bytes of text, %d of data and %d of symbols run past the end of the %d-byte file", ErrTruncated, hdrSize, text, data, syms, size)
	}
	textAddr := arch.load + hdrSize
	dataAddr := (textAddr + text + arch.round - 1) &^ (arch.round - 1)
	im := &image{format: "plan9", goos: "plan9", goarch: arch.goarch, order: binary.LittleEndian, ptrSize: arch.ptrSize}
	for _, s := range []segment{
		{name: "text", addr: textAddr, size: text, off: int64(hdrSize), filesize: text, exec: true},
		{name: "data", addr: dataAddr, size: data, off: int64(hdrSize + text), filesize: data, write: true},
	} {
		if s.size > 0 {
			s.r = r
			im.sections = append(im.sections, s)
		}
	}
	tab := make([]byte, syms)
	if _, err := r.ReadAt(tab, int64(hdrSize+text+data)); err != nil && syms > 0 {
		return nil, fmt.Errorf("Plan 9 a.out: reading the %d-byte symbol table at offset %#x: %w", syms, hdrSize+text+data, err)
	}
	m, err := plan9Symbols(tab, arch.ptrSize)
	if err != nil {
		return nil, fmt.Errorf("Plan 9 a.out: symbol table at offset %#x: %w", hdrSize+text+data, err)
	}
	im.syms = m
	im.finish()
	return im, nil
}

// plan9Symbols reads the symbols of wantSyms from tab, a Plan 9 symbol
// table: each entry a big-endian value of ptrSize bytes, a type byte (its
// top bit set in the current format) and a NUL-terminated name; the names
// of file ('z', 'Z') entries are sequences of 16-bit indexes ending in two
// NULs. An entry cut short is an error that gives its offset.
func plan9Symbols(tab []byte, ptrSize int) (map[string]uint64, error) {
	m := make(map[string]uint64)
	for off := 0; len(tab)-off >= 4; {
		start := off
		if len(tab)-off < ptrSize+1 {
			return nil, fmt.Errorf("%w: the entry at %#x is cut short", ErrTruncated, start)
		}
		var v uint64
		if ptrSize == 8 {
			v = binary.BigEndian.Uint64(tab[off:])
		} else {
			v = uint64(binary.BigEndian.Uint32(tab[off:]))
		}
		typ := tab[off+ptrSize] & 0x7f
		off += ptrSize + 1
		n, end := plan9Name(tab[off:], typ == 'z' || typ == 'Z')
		if n < 0 {
			return nil, fmt.Errorf("%w: the name of the entry at %#x has no terminating NUL", ErrTruncated, start)
		}
		if name := tab[off : off+n]; wantSyms[string(name)] {
			if _, dup := m[string(name)]; !dup {
				m[string(name)] = v
			}
		}
		off += end
	}
	return m, nil
}

// plan9Name returns the length of the name at the start of b and the
// length with its terminator, a NUL; -1 if b holds none. A file entry's
// name (wide) is a NUL and then a path of 16-bit indexes ending in two
// NULs: its length is 0 (no file entry is looked up).
func plan9Name(b []byte, wide bool) (n, end int) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return -1, -1
	}
	if !wide {
		return i, i + 1
	}
	for j := i + 1; j+2 <= len(b); j += 2 {
		if b[j] == 0 && b[j+1] == 0 {
			return 0, j + 2
		}
	}
	return -1, -1
}
