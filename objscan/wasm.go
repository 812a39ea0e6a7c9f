package objscan

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// A WebAssembly module is the container of js/wasm and wasip1/wasm builds
// (the WebAssembly core specification, "Binary Format"): the magic
// "\x00asm", a version, and sections, each an id byte, a LEB128 size and
// its contents. Go's linker puts all of the data, the pclntab among it,
// in the data section as segments of linear memory, leaving out runs of
// 8 or more zero bytes (cmd/link/internal/wasm's writeDataSec), so the
// pclntab spans thousands of segments. objscan rebuilds linear memory
// from them, zeros between, and reads the import section's module names,
// which tell js from wasip1 when no build info does.
const (
	wasmMagic      = "\x00asm"
	wasmImportSec  = 2
	wasmDataSec    = 11
	wasmI32Const   = 0x41
	wasmEnd        = 0x0b
	wasmFuncImport = 0
	// wasmMaxGap is the longest run of zeros between two segments
	// that one stretch of rebuilt memory spans; a longer one starts
	// another stretch.
	wasmMaxGap = 64 << 10
)

// openWasm reads the WebAssembly module in r, of size bytes.
func openWasm(r io.ReaderAt, size int64) (*image, error) {
	im := &image{format: "wasm", goarch: "wasm", order: binary.LittleEndian, ptrSize: 8}
	var hdr [8]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("WebAssembly: header: %w", truncated(err, r))
	}
	if v := binary.LittleEndian.Uint32(hdr[4:]); v != 1 {
		return nil, fmt.Errorf("WebAssembly: version %d, want 1", v)
	}
	for off := int64(8); off < size; {
		id, n, start, err := wasmSection(r, off, size)
		if err == io.EOF { // wasmSection's own, not a wrapped one
			break // the end of a file of unknown size
		}
		if err != nil {
			return nil, err
		}
		switch id {
		case wasmImportSec, wasmDataSec:
			body := make([]byte, n)
			if _, err := r.ReadAt(body, start); err != nil {
				return nil, fmt.Errorf("WebAssembly: section %d at offset %#x: %w", id, off, truncated(err, r))
			}
			if id == wasmImportSec {
				im.goos = wasmGOOS(body)
			} else if im.sections, err = wasmMemory(body, start); err != nil {
				return nil, fmt.Errorf("WebAssembly: data section at offset %#x: %w", off, err)
			}
		}
		off = start + n
	}
	im.finish()
	return im, nil
}

// wasmSection reads the header of the section at off: its id, the size
// of its contents and where they start. The contents must lie inside the
// size-byte file. At the end of a file of unknown size it returns io.EOF.
func wasmSection(r io.ReaderAt, off, size int64) (id byte, n, start int64, err error) {
	var b [11]byte // an id and a LEB128 size of up to 10 bytes
	m, err := r.ReadAt(b[:min(int64(len(b)), size-off)], off)
	if m == 0 {
		if errors.Is(err, io.EOF) && size == 1<<63-1 {
			return 0, 0, 0, io.EOF
		}
		return 0, 0, 0, fmt.Errorf("WebAssembly: section header at offset %#x: %w", off, truncated(err, r))
	}
	d := wasmReader{b: b[1:m]}
	v := d.uleb()
	if d.err != nil {
		return 0, 0, 0, fmt.Errorf("WebAssembly: section %d: size at offset %#x: %w", b[0], off+1, d.err)
	}
	start = off + 1 + int64(d.off)
	if v > uint64(size-start) {
		return 0, 0, 0, fmt.Errorf("WebAssembly: %w: section %d at offset %#x claims %d bytes; %d remain in the %d-byte file", ErrTruncated, b[0], off, v, size-start, size)
	}
	return b[0], int64(v), start, nil
}

// wasmGOOS names the GOOS whose imports the import section body holds,
// from the first import's module: wasip1's come from
// wasi_snapshot_preview1, js's from gojs (go before Go 1.21); "" if
// neither, or if the section does not read.
func wasmGOOS(body []byte) string {
	d := wasmReader{b: body}
	if n := d.uleb(); n == 0 || d.err != nil {
		return ""
	}
	switch string(d.name()) {
	case "wasi_snapshot_preview1":
		return "wasip1"
	case "gojs", "go":
		return "js"
	}
	return ""
}

// A wasmSegment is an active data segment: size bytes at memory address
// addr, whose contents start at file offset off.
type wasmSegment struct {
	addr, size uint64
	off        int64
}

// wasmMemory reads the data section body (at file offset start) and
// rebuilds linear memory from its segments: one section per stretch
// whose segments are at most wasmMaxGap apart, zeros between them and
// before the first, back to a 4 KiB boundary. The stretches together may
// hold at most 4 times the section's size plus 1 MiB, so that segments
// scattered over the 4 GiB address space cannot cost more memory than
// the file justifies.
func wasmMemory(body []byte, start int64) ([]segment, error) {
	segs, err := wasmSegments(body, start)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(segs, func(a, b wasmSegment) int { return cmp.Compare(a.addr, b.addr) })
	limit := 4*uint64(len(body)) + 1<<20
	budget := limit
	var out []segment
	for i := 0; i < len(segs); {
		j, end := i+1, segs[i].addr+segs[i].size
		for ; j < len(segs) && segs[j].addr <= end+wasmMaxGap; j++ {
			end = max(end, segs[j].addr+segs[j].size)
		}
		// A stretch starts 4 KiB-aligned, as the linker's sections do,
		// so that offsets in it keep the alignment of addresses. It
		// ends with its last segment: zeros past it would be taken for
		// data (resolveGoFunc then took a moduledata word pointing
		// there for go:func.*).
		base := segs[i].addr &^ 0xfff
		span := end - base
		if span > budget {
			return nil, fmt.Errorf("its %d segments span more than %d bytes of memory, 4 times the %d-byte section and 1 MiB", len(segs), limit, len(body))
		}
		budget -= span
		buf := make([]byte, span)
		for _, s := range segs[i:j] {
			copy(buf[s.addr-base:], body[s.off-start:][:s.size])
		}
		out = append(out, segment{
			name: fmt.Sprintf("memory@%#x", base), addr: base, size: span,
			filesize: span, write: true, r: bytes.NewReader(buf), mem: buf,
		})
		i = j
	}
	return out, nil
}

// wasmSegments reads the active segments of the data section body, at
// file offset start. Passive segments (no address) and those of a memory
// other than the first are skipped; an offset that is not an i32.const
// expression is an error.
func wasmSegments(body []byte, start int64) ([]wasmSegment, error) {
	d := wasmReader{b: body}
	n := d.uleb()
	if n > uint64(len(body))/2 { // a segment takes at least 2 bytes, an active one 5
		return nil, fmt.Errorf("%w: %d segments cannot fit in %d bytes", ErrTruncated, n, len(body))
	}
	segs := make([]wasmSegment, 0, min(n, uint64(len(body))/5))
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.off
		flags := d.uleb()
		if flags == 1 { // passive: its size and bytes only
			d.skip(d.uleb())
			continue
		}
		mem := uint64(0)
		if flags == 2 {
			mem = d.uleb()
		} else if flags != 0 {
			return nil, fmt.Errorf("segment %d at offset %#x: flags %d, want 0, 1 or 2", i, start+int64(at), flags)
		}
		if op := d.byte(); op != wasmI32Const && d.err == nil {
			return nil, fmt.Errorf("segment %d at offset %#x: offset expression opcode %#x, want i32.const (0x41)", i, start+int64(at), op)
		}
		addr := uint32(d.sleb()) // an i32: addresses wrap at 4 GiB
		if end := d.byte(); end != wasmEnd && d.err == nil {
			return nil, fmt.Errorf("segment %d at offset %#x: offset expression ends in %#x, want end (0x0b)", i, start+int64(at), end)
		}
		sz := d.uleb()
		off := d.off
		d.skip(sz)
		if d.err == nil && mem == 0 { // Go's memory; another one's is no part of it
			segs = append(segs, wasmSegment{addr: uint64(addr), size: sz, off: start + int64(off)})
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("segment at offset %#x: %w", start+int64(d.off), d.err)
	}
	return segs, nil
}

// errLEB is the error for a LEB128 number longer than 10 bytes or past 64
// bits.
var errLEB = errors.New("a LEB128 number longer than 10 bytes or past 64 bits")

// wasmReader decodes the LEB128 numbers, bytes and names of a section
// body. The first error sticks: later reads return zeros.
type wasmReader struct {
	b   []byte
	off int
	err error
}

// byte reads one byte.
func (d *wasmReader) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.err = fmt.Errorf("%w: a byte at %#x past the end of the %d-byte body", ErrTruncated, d.off, len(d.b))
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

// uleb reads an unsigned LEB128 number.
func (d *wasmReader) uleb() uint64 {
	v, n := binary.Uvarint(d.b[min(d.off, len(d.b)):])
	return d.leb(v, n)
}

// sleb reads a signed LEB128 number.
func (d *wasmReader) sleb() int64 {
	var v int64
	var shift, n int
	for {
		c := d.byte()
		if d.err != nil {
			return 0
		}
		n++
		if n > 10 {
			d.err = errLEB
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// leb finishes a uleb: binary.Uvarint read v in n bytes (n <= 0: none).
func (d *wasmReader) leb(v uint64, n int) uint64 {
	if d.err != nil {
		return 0
	}
	switch {
	case n == 0:
		d.err = fmt.Errorf("%w: a LEB128 number at %#x runs past the end of the %d-byte body", ErrTruncated, d.off, len(d.b))
		return 0
	case n < 0:
		d.err = errLEB
		return 0
	}
	d.off += n
	return v
}

// skip skips n bytes.
func (d *wasmReader) skip(n uint64) {
	if d.err != nil {
		return
	}
	if n > uint64(len(d.b)-d.off) {
		d.err = fmt.Errorf("%w: %d bytes at %#x run past the end of the %d-byte body", ErrTruncated, n, d.off, len(d.b))
		return
	}
	d.off += int(n)
}

// name reads a name: its length and bytes.
func (d *wasmReader) name() []byte {
	n := d.uleb()
	at := d.off
	d.skip(n)
	if d.err != nil {
		return nil
	}
	return d.b[at:d.off]
}

// maxVersionCandidates bounds how many "go1." strings wasmVersion tries.
const maxVersionCandidates = 16

// wasmVersion finds the string runtime.buildVersion holds in a module's
// linear memory, which has no symbols (and, from Go's wasm linker, no
// build info blob): a "go1." string whose address some aligned word
// holds, followed by its length, as the string's header does. It tries
// the first maxVersionCandidates such strings; "" if none has a header.
func (im *image) wasmVersion() string {
	tried := 0
	for i := range im.sections {
		data := im.sections[i].mem
		for off := 0; tried < maxVersionCandidates; {
			j := bytes.Index(data[off:], []byte("go1."))
			if j < 0 {
				break
			}
			at := off + j
			off = at + 1
			tried++
			if v := im.stringAt(im.sections[i].addr + uint64(at)); goMinor(v) >= 0 {
				return v
			}
		}
	}
	return ""
}

// stringAt returns the string at addr whose header (an 8-byte-aligned
// pointer to addr, then a length of at most 64) some section holds, or "".
func (im *image) stringAt(addr uint64) string {
	var ptr [8]byte
	binary.LittleEndian.PutUint64(ptr[:], addr)
	for i := range im.sections {
		data := im.sections[i].mem
		for off := 0; ; {
			j := bytes.Index(data[off:], ptr[:])
			if j < 0 {
				break
			}
			at := off + j
			off = at + 1
			if (im.sections[i].addr+uint64(at))%8 != 0 || at+16 > len(data) {
				continue
			}
			if n := binary.LittleEndian.Uint64(data[at+8:]); n > 0 && n <= 64 {
				if b, err := im.readAddr(addr, n); err == nil {
					return string(b)
				}
			}
		}
	}
	return ""
}
