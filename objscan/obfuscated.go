package objscan

import (
	"bytes"
	"fmt"
	"math/bits"
)

// This file reads what garble (mvdan.cc/garble, checked against v0.17.0's
// linker patches for Go 1.26) changes in a pclntab:
//
//   - the pcHeader's magic: garble's linker writes a per-build random
//     uint32 (GARBLE_LINK_MAGIC) instead of Go's, and patches the
//     runtime's constant to match;
//   - each _func record's entryOff: garble's linker stores
//     entryOff XOR nameOff*key (GARBLE_LINK_ENTRYOFF_KEY, also per build),
//     and patches runtime.funcInfo.entry to decrypt it. The functab's
//     entries are left as they are, and so is a record whose nameOff is 0;
//   - with -tiny, every unexported function's nameOff is 0, the empty
//     name at the start of the funcnametab.
//
// Names and file names garble obfuscates in the source, before the
// compiler sees them: they are ordinary strings here.

// foreignMagic is the parseHeader hook for a magic that is none of Go's:
// it accepts the header as the Go 1.20 layout (Go 1.18's for a release
// the build info names as go1.18 or go1.19) when its fixed fields are
// those of a Go pcHeader for this file: pad bytes 0, a PC quantum of 1, 2
// or 4, and the file's pointer size. The offsets, nfunc and the functab
// are checked by parse, as for any pclntab.
func (f *File) foreignMagic(d []byte) error {
	im := f.im
	if im == nil || im.order == nil {
		return formatErr("pclntab", 0, "unknown pcHeader magic % x (not a Go 1.2+ pclntab)", d[:4])
	}
	unknown := func(format string, args ...any) error {
		return formatErr("pclntab", 0, "unknown pcHeader magic % x (not a Go 1.2+ pclntab, nor a Go 1.18+ pcHeader with a magic of its own: %s)", d[:4], fmt.Sprintf(format, args...))
	}
	switch q, ps := d[6], int(d[7]); {
	case d[4] != 0 || d[5] != 0:
		return unknown("pad bytes % x", d[4:6])
	case q != 1 && q != 2 && q != 4:
		return unknown("PC quantum %d", q)
	case ps != 4 && ps != 8 || im.ptrSize != 0 && ps != im.ptrSize:
		return unknown("pointer size %d in a file of %d-byte pointers", ps, im.ptrSize)
	}
	magic := Go120Magic
	switch m := goMinor(f.GoVersion); {
	case m == 18 || m == 19:
		magic = Go118Magic
	case m >= 0 && m < 18:
		return formatErr("pclntab", 0, "unknown pcHeader magic %#x: %s's pclntab layout is read only with its own magic (a magic of an obfuscator's own is read in the Go 1.18+ layouts)", im.order.Uint32(d), f.GoVersion)
	}
	f.ByteOrder, f.Magic = im.order, magic
	f.ForeignMagic, f.HeaderMagic = true, im.order.Uint32(d)
	return nil
}

// foreignErr says why a pclntab with a foreign magic was not read: err,
// from parsing it in the layout its header's fixed fields match.
func (f *File) foreignErr(err error) error {
	layout := "Go 1.20+"
	if f.Magic == Go118Magic {
		layout = "Go 1.18-1.19"
	}
	return fmt.Errorf("objscan: pclntab magic %#x unknown: the header's fixed fields match the %s layout (an obfuscator such as garble writes a magic of its own), but the table does not read as one: %w", f.HeaderMagic, layout, err)
}

// entryOffKey returns the key garble encrypted the _func records' entryOff
// with, or 0 if the records hold plain entryOffs (or no key explains them:
// parseFunc then reports the first record that does not match).
//
// A record holds entry XOR nameOff*key, where entry is its functab entry
// (both uint32 offsets from the text start). The function whose nonzero
// nameOff has the fewest trailing zeros, tz, gives the key's low 32-tz
// bits (nameOff>>tz is odd, so invertible modulo 2^(32-tz)), which are
// all that the product nameOff*key of any record depends on. parseFunc
// checks every record with it.
func (f *File) entryOffKey(tabOff, nfunc uint64) uint32 {
	d, o := f.pcln, f.ByteOrder
	u32 := func(off uint64) (uint32, bool) {
		if off > uint64(len(d)) || uint64(len(d))-off < 4 {
			return 0, false
		}
		return o.Uint32(d[off:]), true
	}
	encrypted := false
	bestTZ, bestX, bestName := 33, uint32(0), uint32(0)
	for i := uint64(0); i < nfunc; i++ {
		entry, ok1 := u32(tabOff + 8*i)
		funcOff, ok2 := u32(tabOff + 8*i + 4)
		raw, ok3 := u32(tabOff + uint64(funcOff))
		nameOff, ok4 := u32(tabOff + uint64(funcOff) + 4)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return 0 // parseFuncs reports it
		}
		x := raw ^ entry
		encrypted = encrypted || x != 0
		if nameOff != 0 {
			if tz := bits.TrailingZeros32(nameOff); tz < bestTZ {
				bestTZ, bestX, bestName = tz, x, nameOff
			}
		}
	}
	if !encrypted || bestTZ > 32 || bestX&(1<<bestTZ-1) != 0 {
		return 0
	}
	mask := uint32(1<<(32-bestTZ) - 1)
	return (bestX >> bestTZ) * inverse32(bestName>>bestTZ) & mask
}

// inverse32 returns the multiplicative inverse of the odd a modulo 2^32,
// by Newton's iteration (each step doubles the correct low bits; a is its
// own inverse modulo 8).
func inverse32(a uint32) uint32 {
	x := a
	for range 4 {
		x *= 2 - a*x
	}
	return x
}

// entryOffErr reports the _func record at off, whose entryOff (raw) does
// not give the functab's entry.
func (f *File) entryOffErr(off uint64, raw, nameOff uint32, entry uint64) error {
	if f.EntryOffKey != 0 {
		return formatErr("_func", int64(off), "entryOff %#x (nameOff %#x) does not match the functab entry %#x, plain or decrypted as garble encrypts it (entryOff XOR nameOff*key) with key %#x, which the records give", raw, nameOff, entry, f.EntryOffKey)
	}
	return formatErr("_func", int64(off), "entryOff %#x does not match the functab entry %#x (and no key k makes every record's entryOff its functab entry XOR nameOff*k, as garble encrypts them)", raw, entry)
}

// scanForeign is scanMagic's last resort, for a stripped binary whose
// pcHeader has a magic of an obfuscator's own: it looks in the data
// section s for a pointer-aligned header of the Go 1.18+ layout (pad
// bytes 0, a PC quantum of 1, 2 or 4, the file's pointer size, nfunc
// above 0, and a funcnametab that starts right after the header, with
// the other offsets in order within the section), and returns the offset
// of the first that parses, or -1. c counts the candidates parsed so far,
// across sections and scans.
func (f *File) scanForeign(s *segment, data []byte, c *candidates) int {
	ps := f.im.ptrSize
	if ps != 4 && ps != 8 {
		return -1
	}
	hdrEnd := 8 + 8*ps
	for at := 0; at+hdrEnd <= len(data) && !c.full(); at += ps {
		if !f.foreignHeader(data[at:at+hdrEnd], len(data)-at) {
			continue
		}
		c.parsed++
		cand := &File{im: f.im, pcln: data[at:], GoVersion: f.GoVersion, PclntabAddr: s.addr + uint64(at)}
		if err := cand.parse(); err != nil {
			c.rejectAt(s, at, err)
			continue
		}
		return at
	}
	return -1
}

// foreignHeader reports whether h, with room bytes from it to its
// section's end, looks like a Go 1.18+ pcHeader of a magic not Go's.
func (f *File) foreignHeader(h []byte, room int) bool {
	ps := f.im.ptrSize
	hdrEnd := 8 + 8*ps
	word := func(b []byte) uint64 {
		if ps == 4 {
			return uint64(f.im.order.Uint32(b))
		}
		return f.im.order.Uint64(b)
	}
	if h[4] != 0 || h[5] != 0 || h[7] != byte(ps) || h[6] != 1 && h[6] != 2 && h[6] != 4 {
		return false
	}
	if m := f.im.order.Uint32(h); m == Go120Magic || m == Go118Magic || m == Go116Magic || m == Go12Magic || bytes.Equal(h[:4], []byte{0, 0, 0, 0}) {
		return false // Go's magics were tried; a zero word is no magic
	}
	if word(h[8:]) == 0 || word(h[8+3*ps:]) != uint64(hdrEnd) {
		return false
	}
	prev := uint64(hdrEnd)
	for w := 3; w < 8; w++ {
		v := word(h[8+w*ps:])
		if v < prev || v > uint64(room) {
			return false
		}
		prev = v
	}
	return true
}

// GoPclntab returns the pclntab as Go's linker writes it: Pclntab(), or
// for a binary garble obfuscated a copy with Go's magic in the header and
// every _func record's entryOff decrypted (its functab entry, which
// parsing checked). debug/gosym reads that copy, not the original: it
// knows no other magic, and takes each function's entry from its record.
func (f *File) GoPclntab() []byte {
	if !f.ForeignMagic && f.EntryOffKey == 0 {
		return f.pcln
	}
	d := bytes.Clone(f.pcln)
	f.ByteOrder.PutUint32(d, f.Magic)
	if f.EntryOffKey != 0 {
		for i := range f.Funcs {
			rec := f.ftabOff + uint64(f.Funcs[i].Offset)
			raw, nameOff := f.ByteOrder.Uint32(d[rec:]), f.ByteOrder.Uint32(d[rec+4:])
			f.ByteOrder.PutUint32(d[rec:], raw^nameOff*f.EntryOffKey)
		}
	}
	return d
}
