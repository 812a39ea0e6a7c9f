package rewrite

import (
	"crypto/sha256"
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// MachOPclntabSegment is the segment that holds the pclntab of a Mach-O
// file rewritten in replace mode; its one section keeps the name
// __gopclntab.
const MachOPclntabSegment = "__GOPCLNTAB"

// Mach-O load commands whose file offsets replaceMachO knows how to move
// (mach-o/loader.h).
const (
	lcSymtab           = 0x2
	lcUnixThread       = 0x5
	lcDysymtab         = 0xb
	lcLoadDylib        = 0xc
	lcIDDylib          = 0xd
	lcLoadDylinker     = 0xe
	lcUUID             = 0x1b
	lcSegmentSplitInfo = 0x1e
	lcDyldInfo         = 0x22
	lcVersionMinMacOS  = 0x24
	lcFunctionStarts   = 0x26
	lcDataInCode       = 0x29
	lcSourceVersion    = 0x2a
	lcDylibCodeSignDRs = 0x2b
	lcLinkerOptHint    = 0x2e
	lcBuildVersion     = 0x32
	lcReqDyld          = 0x80000000
	lcLoadWeakDylib    = lcReqDyld | 0x18
	lcRpath            = lcReqDyld | 0x1c
	lcDyldInfoOnly     = lcReqDyld | lcDyldInfo
	lcMain             = lcReqDyld | 0x28
	lcExportsTrie      = lcReqDyld | 0x33
	lcChainedFixups    = lcReqDyld | 0x34
)

// machoSeg is a 64-bit segment load command and its sections, decoded.
type machoSeg struct {
	cmd                                 int // index of the load command
	name                                string
	vmaddr, vmsize, fileoff, filesize   uint64
	raw                                 []byte // the command, sections included (a copy)
	sectAddr, sectSize                  []uint64
	sectOff                             []uint32
	sectNames                           []string
	firstSect                           int // 1-based number of its first section in the file
	maxprot, initprot, nsects, segflags uint32
}

// replaceMachO rebuilds the pclntab of a 64-bit little-endian Mach-O file
// (darwin/amd64, darwin/arm64) in the linear format.
//
// Go's linker puts __gopclntab last in __TEXT. __TEXT is cut back to the
// page holding the pclntab's first byte (the rest of that page is zeroed),
// and the file contents after it move back by what was cut, so no byte of
// the old table remains. The new table goes in a new segment,
// MachOPclntabSegment, read-only, placed in the file and in memory right
// before __DWARF (or __LINKEDIT, without DWARF); those segments move up in
// memory (nothing addresses them) and, with everything after the new
// segment, in the file. Every file offset in the load commands (segments,
// sections, symbol tables, dyld info, code signature) follows its bytes,
// the symbols follow the sections' renumbering, the symbols in the old
// pclntab and the moduledata's pointers follow the new table, and an
// ad-hoc code signature is rebuilt for the new file (its code limit, page
// count and page hashes, and the size of __TEXT it records).
func replaceMachO(data []byte, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
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
	le := binary.LittleEndian
	page := uint64(0x1000)
	if mf.Cpu == macho.CpuArm64 {
		page = 0x4000
	}
	// Decode the segments; note where each load command starts.
	var segs []*machoSeg
	cmdAt := make([]uint64, len(mf.Loads))
	at := uint64(machoHeaderSize64)
	nsect := 0
	for i, l := range mf.Loads {
		cmdAt[i] = at
		raw := l.Raw()
		at += uint64(len(raw))
		if le.Uint32(raw) != lcSegment64 {
			continue
		}
		if len(raw) < machoSegCmdSize64 {
			return nil, fmt.Errorf("segment command %d at %#x: %d bytes, shorter than its header", i, cmdAt[i], len(raw))
		}
		s := &machoSeg{cmd: i, name: cstring(raw[8:24]), raw: append([]byte(nil), raw...),
			vmaddr: le.Uint64(raw[24:]), vmsize: le.Uint64(raw[32:]), fileoff: le.Uint64(raw[40:]), filesize: le.Uint64(raw[48:]),
			maxprot: le.Uint32(raw[56:]), initprot: le.Uint32(raw[60:]), nsects: le.Uint32(raw[64:]), segflags: le.Uint32(raw[68:]),
			firstSect: nsect + 1}
		if uint64(len(raw)) < machoSegCmdSize64+uint64(s.nsects)*machoSectSize64 {
			return nil, fmt.Errorf("segment %s at %#x: %d sections do not fit its %d-byte command", s.name, cmdAt[i], s.nsects, len(raw))
		}
		for j := uint64(0); j < uint64(s.nsects); j++ {
			h := raw[machoSegCmdSize64+j*machoSectSize64:]
			s.sectNames = append(s.sectNames, cstring(h[0:16]))
			s.sectAddr = append(s.sectAddr, le.Uint64(h[32:]))
			s.sectSize = append(s.sectSize, le.Uint64(h[40:]))
			s.sectOff = append(s.sectOff, le.Uint32(h[48:]))
		}
		nsect += int(s.nsects)
		segs = append(segs, s)
	}
	if at != machoHeaderSize64+uint64(mf.Cmdsz) {
		return nil, fmt.Errorf("load commands end at %#x, the header says %#x", at, machoHeaderSize64+uint64(mf.Cmdsz))
	}
	for _, s := range segs {
		if s.filesize > 0 && (s.fileoff > uint64(len(data)) || s.filesize > uint64(len(data))-s.fileoff) {
			return nil, fmt.Errorf("segment %s: %#x bytes at file offset %#x lie outside the %d-byte file", s.name, s.filesize, s.fileoff, len(data))
		}
	}
	// The segment and section holding the pclntab.
	ti, pj := -1, -1
	for i, s := range segs {
		for j, n := range s.sectNames {
			if n == "__gopclntab" && s.sectAddr[j] == f.PclntabAddr {
				ti, pj = i, j
			}
		}
	}
	if ti < 0 {
		return nil, fmt.Errorf("the pclntab at %#x is not a __gopclntab section (found by %s)", f.PclntabAddr, f.PclntabSource)
	}
	T := segs[ti]
	pAddr, pSize, pOff := T.sectAddr[pj], T.sectSize[pj], uint64(T.sectOff[pj])
	for j := range T.sectNames {
		if j != pj && T.sectAddr[j] >= pAddr {
			return nil, fmt.Errorf("unsupported layout: section %s follows __gopclntab in segment %s; it would have to move with the table", T.sectNames[j], T.name)
		}
	}
	if T.vmsize != T.filesize || pOff-T.fileoff != pAddr-T.vmaddr || pOff+pSize > T.fileoff+T.filesize || T.fileoff%page != 0 || T.filesize%page != 0 {
		return nil, fmt.Errorf("unsupported layout: segment %s (%#x bytes at file offset %#x, %#x at %#x) is not mapped page by page and one to one", T.name, T.filesize, T.fileoff, T.vmsize, T.vmaddr)
	}
	// The new segment goes before __DWARF and __LINKEDIT, which must end
	// the segment list.
	last := segs[len(segs)-1]
	if last.name != "__LINKEDIT" {
		return nil, fmt.Errorf("unsupported layout: the last segment is %s, not __LINKEDIT", last.name)
	}
	wi := len(segs) - 1
	if wi > 0 && segs[wi-1].name == "__DWARF" {
		wi--
	}
	if wi <= ti {
		return nil, fmt.Errorf("unsupported layout: segment %s is not before __DWARF and __LINKEDIT", T.name)
	}
	W := segs[wi]
	X := W.fileoff // where the new segment's bytes go, in the old file
	newAddr := alignUp(W.vmaddr, page)
	for i, s := range segs {
		if i < wi && s.filesize > 0 && (s.fileoff+s.filesize > X || s.fileoff < T.fileoff+T.filesize && i != ti && s.fileoff >= pOff) {
			return nil, fmt.Errorf("unsupported layout: segment %s (file %#x+%#x) lies after %s's bytes at %#x", s.name, s.fileoff, s.filesize, W.name, X)
		}
		if i < wi && s.vmaddr+s.vmsize > newAddr {
			return nil, fmt.Errorf("unsupported layout: segment %s ends at %#x, above %s at %#x", s.name, s.vmaddr+s.vmsize, W.name, newAddr)
		}
		if i >= wi && s.fileoff < X && s.filesize > 0 {
			return nil, fmt.Errorf("unsupported layout: segment %s (file offset %#x) precedes %s's bytes", s.name, s.fileoff, W.name)
		}
	}
	tailAlign := max(16, uint64(1)<<min(mf.Sections[T.firstSect-1+pj].Align, 12))
	np, err := buildPclntab(f, lt, tailAlign)
	if err != nil {
		return nil, err
	}
	newSize := uint64(len(np.data))
	newVM := alignUp(newSize, page)

	// File offsets: [0, cut) stays, [textEnd, X) moves by d1, [X, end)
	// by d2; the new table lies at X+d1.
	textEnd := T.fileoff + T.filesize
	cut := T.fileoff + alignUp(pOff-T.fileoff, page)
	d1 := int64(cut) - int64(textEnd)
	d2 := d1 + int64(newVM)
	shift := func(off uint64) (uint64, error) {
		switch {
		case off >= X:
			return uint64(int64(off) + d2), nil
		case off >= textEnd:
			return uint64(int64(off) + d1), nil
		case off > cut:
			return 0, fmt.Errorf("file offset %#x lies in the removed part of %s (%#x..%#x)", off, T.name, cut, textEnd)
		}
		return off, nil
	}
	vmShift := newVM // segments from wi on move up in memory by this

	// The code signature, which must end the file's meaningful bytes.
	var sigOff, sigSize uint64
	for _, l := range mf.Loads {
		if raw := l.Raw(); le.Uint32(raw) == lcCodeSignature && len(raw) >= 16 {
			sigOff, sigSize = uint64(le.Uint32(raw[8:])), uint64(le.Uint32(raw[12:]))
		}
	}
	end := uint64(len(data))
	if sigSize > 0 {
		if sigOff < X || sigOff+sigSize > end {
			return nil, fmt.Errorf("code signature (%d bytes at %#x) is not in __LINKEDIT's bytes", sigSize, sigOff)
		}
		end = sigOff
	}

	// The output, up to the signature.
	out := make([]byte, 0, uint64(int64(end)+d2)+sigSize+page)
	out = append(out, data[:cut]...)
	clear(out[pOff:cut])
	out = append(out, data[textEnd:X]...)
	newOff := uint64(len(out))
	out = append(out, np.data...)
	out = appendZeros(out, newOff+newVM)
	out = append(out, data[X:end]...)

	// Load commands. Section numbers: __gopclntab leaves T and becomes the
	// only section of the new segment, inserted before W.
	oldPcln := T.firstSect + pj
	newPcln := W.firstSect - 1
	renum := func(n int) int {
		switch {
		case n == oldPcln:
			return newPcln
		case n > oldPcln && n < W.firstSect:
			return n - 1
		}
		return n
	}
	var cmds []byte
	for i, l := range mf.Loads {
		raw := append([]byte(nil), l.Raw()...)
		if i == W.cmd {
			cmds = append(cmds, machoPclntabCmd(mf.Sections[T.firstSect-1+pj], newAddr, newSize, newVM, newOff)...)
		}
		cmd := le.Uint32(raw)
		var err error
		switch cmd {
		case lcSegment64:
			raw, err = machoMoveSegment(raw, T, pj, cut, page, shift, i, W.cmd, vmShift)
		case lcSymtab:
			err = shiftFields(raw, shift, [2]int{8, 12}, [2]int{16, 20})
		case lcDysymtab:
			err = shiftFields(raw, shift, [2]int{32, 36}, [2]int{40, 44}, [2]int{48, 52}, [2]int{56, 60}, [2]int{64, 68}, [2]int{72, 76})
		case lcDyldInfo, lcDyldInfoOnly:
			err = shiftFields(raw, shift, [2]int{8, 12}, [2]int{16, 20}, [2]int{24, 28}, [2]int{32, 36}, [2]int{40, 44})
		case lcCodeSignature, lcSegmentSplitInfo, lcFunctionStarts, lcDataInCode, lcDylibCodeSignDRs, lcLinkerOptHint, lcExportsTrie:
			err = shiftFields(raw, shift, [2]int{8, 12})
		case lcMain:
			if len(raw) < 16 || le.Uint64(raw[8:]) >= pOff {
				err = fmt.Errorf("LC_MAIN's entry offset is not in %s before the pclntab", T.name)
			}
		case lcChainedFixups:
			err = errors.New("LC_DYLD_CHAINED_FIXUPS: chained fixups name segments by index and would have to be rewritten for the new segment; Go's linker does not write them")
		case lcUnixThread, lcLoadDylib, lcIDDylib, lcLoadDylinker, lcUUID, lcVersionMinMacOS, lcSourceVersion, lcBuildVersion, lcLoadWeakDylib, lcRpath, 0x25, 0x2f, 0x30:
			// No file offsets.
		default:
			err = fmt.Errorf("load command %#x is not known to hold no file offsets; it would have to be taught to replace mode", cmd)
		}
		if err != nil {
			return nil, fmt.Errorf("load command %d (%#x) at %#x: %w", i, cmd, cmdAt[i], err)
		}
		cmds = append(cmds, raw...)
	}
	firstData := uint64(len(data))
	for _, s := range mf.Sections {
		if s.Offset > 0 && s.Size > 0 {
			firstData = min(firstData, uint64(s.Offset))
		}
	}
	cmdsEnd := machoHeaderSize64 + uint64(len(cmds))
	if cmdsEnd > firstData {
		return nil, fmt.Errorf("no room for the new segment's load command: the load commands would end at %#x, past the first section's data at %#x; the file's contents would have to move by a page", cmdsEnd, firstData)
	}
	oldEnd := machoHeaderSize64 + uint64(mf.Cmdsz)
	if !allZero(data[oldEnd:min(cmdsEnd, firstData)]) {
		return nil, fmt.Errorf("the %d bytes after the load commands (at %#x) are not free", cmdsEnd-oldEnd, oldEnd)
	}
	copy(out[machoHeaderSize64:], cmds)
	le.PutUint32(out[16:], mf.Ncmd+1)
	le.PutUint32(out[20:], uint32(len(cmds)))

	// Symbols: renumbered sections, and the pclntab's symbols moved.
	m := np.remap.shift(pAddr, newAddr)
	symNote := "no symbol table"
	if mf.Symtab != nil {
		n, err := machoFixSymbols(out, mf, shift, renum, oldPcln, m)
		if err != nil {
			return nil, err
		}
		symNote = fmt.Sprintf("%d symbols of __gopclntab moved, section numbers after it renumbered", n)
	}
	// The moduledata keeps its address; find its bytes in the output.
	mdAt := func(addr, size uint64) ([]byte, string) {
		for _, s := range mf.Sections {
			if s.Offset == 0 || addr < s.Addr || addr-s.Addr >= s.Size || s.Seg == T.name && s.Name == "__gopclntab" {
				continue
			}
			off, err := shift(uint64(s.Offset) + (addr - s.Addr))
			if err != nil || size > s.Size-(addr-s.Addr) || off+size > uint64(len(out)) {
				return nil, "section " + s.Seg + "," + s.Name + " (too short)"
			}
			return out[off : off+size], "section " + s.Seg + "," + s.Name
		}
		return nil, ""
	}
	mdNote, _, err := patchModuledataIn(f, m, pclnLenFix(f, np), mdAt)
	if err != nil {
		return nil, err
	}
	inlNote, err := patchInlTrees(np, f.ByteOrder, m, mdAt)
	if err != nil {
		return nil, err
	}

	// The code signature, rebuilt for the new contents.
	var sigNew uint64
	if sigSize > 0 {
		newSig := alignUp(uint64(len(out)), 16)
		out = appendZeros(out, newSig)
		// The load commands record the signature's size, and the first
		// page's hash covers them: size it, record it, then hash.
		blob, err := machoResign(data[sigOff:sigOff+sigSize], out, newSig, T.fileoff, cut)
		if err != nil {
			return nil, err
		}
		sigNew = uint64(len(blob))
		if err := machoSetSignature(out, newSig, sigNew, page); err != nil {
			return nil, err
		}
		if blob, err = machoResign(data[sigOff:sigOff+sigSize], out, newSig, T.fileoff, cut); err != nil {
			return nil, err
		}
		out = append(out, blob...)
	}
	if _, err := safeMachO(out); err != nil {
		return nil, fmt.Errorf("internal error: the output is not valid Mach-O: %w", err)
	}

	res.NewPclntab = int64(newSize)
	oldTail := textEnd - (pOff + pSize)
	res.Parts = append(pclnParts(f, lt, np, tailAlign),
		Part{Name: T.name + " after __gopclntab", Old: int64(oldTail), New: int64(cut - pOff), Note: fmt.Sprintf("the segment now ends at the %#x-byte page holding the old table's first byte (zeroed)", page)},
		Part{Name: "new segment's page padding", New: int64(newVM - newSize), Note: MachOPclntabSegment + " is a whole number of pages"},
		Part{Name: "code signature", Old: int64(uint64(len(data)) - end), New: int64(sigNew + (alignUp(uint64(int64(end)+d2), 16) - uint64(int64(end)+d2))), Note: "rebuilt: one SHA-256 hash per page, and 16-byte alignment"},
		Part{Name: "load command", Note: fmt.Sprintf("%d bytes, in the padding after the load commands: no file bytes", machoLinearCmdSize)},
	)
	if sigSize == 0 {
		res.Parts = append(res.Parts[:len(res.Parts)-2], res.Parts[len(res.Parts)-1])
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("new segment %s with section __gopclntab at address %#x, file offset %#x, %d bytes; %s keeps %#x bytes", MachOPclntabSegment, newAddr, newOff, newSize, T.name, cut-T.fileoff),
		fmt.Sprintf("file contents from %#x moved by %+d bytes, from %#x by %+d; segments from %s on moved up %#x bytes in memory", textEnd, d1, X, d2, W.name, vmShift),
		mdNote, symNote)
	if inlNote != "" {
		res.Notes = append(res.Notes, inlNote)
	}
	if sigSize > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("ad-hoc code signature rebuilt: %d bytes at %#x", sigNew, alignUp(uint64(int64(end)+d2), 16)))
	}
	return out, nil
}

// cstring returns b up to its first NUL.
func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// shiftFields moves the file offsets at the given byte positions of a load
// command; each comes with the position of its count or size, and an
// offset whose count is 0 is left alone.
func shiftFields(raw []byte, shift func(uint64) (uint64, error), fields ...[2]int) error {
	le := binary.LittleEndian
	for _, f := range fields {
		if f[1]+4 > len(raw) {
			return fmt.Errorf("command of %d bytes too short for its field at %d", len(raw), f[1])
		}
		if le.Uint32(raw[f[1]:]) == 0 {
			continue
		}
		v, err := shift(uint64(le.Uint32(raw[f[0]:])))
		if err != nil {
			return err
		}
		if v > 1<<32-1 {
			return fmt.Errorf("file offset %#x does not fit 32 bits", v)
		}
		le.PutUint32(raw[f[0]:], uint32(v))
	}
	return nil
}

// machoMoveSegment updates segment command raw (load command i): __TEXT
// (T) loses __gopclntab (section pj) and ends at cut; every segment's
// file offsets follow shift, and those from load command from on move up
// vmShift bytes in memory.
func machoMoveSegment(raw []byte, T *machoSeg, pj int, cut, page uint64, shift func(uint64) (uint64, error), i, from int, vmShift uint64) ([]byte, error) {
	le := binary.LittleEndian
	ns := uint64(le.Uint32(raw[64:]))
	if i == T.cmd {
		// Drop the section header, and end the segment at cut.
		h := machoSegCmdSize64 + uint64(pj)*machoSectSize64
		raw = append(raw[:h:h], raw[h+machoSectSize64:]...)
		ns--
		le.PutUint32(raw[4:], uint32(len(raw)))
		le.PutUint32(raw[64:], uint32(ns))
		le.PutUint64(raw[32:], cut-T.fileoff)
		le.PutUint64(raw[48:], cut-T.fileoff)
		return raw, nil
	}
	vm := uint64(0)
	if i >= from {
		vm = vmShift
	}
	if fo, fs := le.Uint64(raw[40:]), le.Uint64(raw[48:]); fs > 0 || fo > 0 {
		v, err := shift(fo)
		if err != nil {
			return nil, err
		}
		le.PutUint64(raw[40:], v)
	}
	if vm > 0 {
		le.PutUint64(raw[24:], le.Uint64(raw[24:])+vm)
	}
	for j := uint64(0); j < ns; j++ {
		h := raw[machoSegCmdSize64+j*machoSectSize64:]
		if vm > 0 {
			le.PutUint64(h[32:], le.Uint64(h[32:])+vm)
		}
		for _, at := range []int{48, 56} { // offset, reloff
			if at == 56 && le.Uint32(h[60:]) == 0 || at == 48 && le.Uint32(h[48:]) == 0 {
				continue
			}
			v, err := shift(uint64(le.Uint32(h[at:])))
			if err != nil {
				return nil, fmt.Errorf("section %s: %w", cstring(h[:16]), err)
			}
			le.PutUint32(h[at:], uint32(v))
		}
	}
	return raw, nil
}

// machoPclntabCmd returns the load command of the new segment: one
// section, __gopclntab, with the old section's alignment and flags.
func machoPclntabCmd(old *macho.Section, addr, size, vmsize, off uint64) []byte {
	le := binary.LittleEndian
	c := make([]byte, machoSegCmdSize64+machoSectSize64)
	le.PutUint32(c[0:], lcSegment64)
	le.PutUint32(c[4:], uint32(len(c)))
	copy(c[8:24], MachOPclntabSegment)
	le.PutUint64(c[24:], addr)
	le.PutUint64(c[32:], vmsize)
	le.PutUint64(c[40:], off)
	le.PutUint64(c[48:], size)
	le.PutUint32(c[56:], 1) // maxprot: read
	le.PutUint32(c[60:], 1) // initprot: read
	le.PutUint32(c[64:], 1) // nsects
	s := c[machoSegCmdSize64:]
	copy(s[0:16], "__gopclntab")
	copy(s[16:32], MachOPclntabSegment)
	le.PutUint64(s[32:], addr)
	le.PutUint64(s[40:], size)
	le.PutUint32(s[48:], uint32(off))
	le.PutUint32(s[52:], old.Align)
	le.PutUint32(s[64:], old.Flags)
	return c
}

// machoFixSymbols updates the nlist_64 entries of out (whose LC_SYMTAB
// is already updated): section numbers through renum, and the values of
// the symbols in section oldPcln (the old __gopclntab) through m.
func machoFixSymbols(out []byte, mf *macho.File, shift func(uint64) (uint64, error), renum func(int) int, oldPcln int, m remap) (int, error) {
	le := binary.LittleEndian
	raw := mf.Symtab.Raw() // debug/macho leaves Symtab.SymtabCmd zero
	if len(raw) < 24 {
		return 0, fmt.Errorf("LC_SYMTAB of %d bytes", len(raw))
	}
	nsyms := uint64(le.Uint32(raw[12:]))
	symoff, err := shift(uint64(le.Uint32(raw[8:])))
	if err != nil {
		return 0, fmt.Errorf("symbol table: %w", err)
	}
	if symoff+16*nsyms > uint64(len(out)) {
		return 0, fmt.Errorf("symbol table of %d entries at %#x runs past the file", nsyms, symoff)
	}
	moved := 0
	for k := uint64(0); k < nsyms; k++ {
		b := out[symoff+16*k:]
		typ, sect := b[4], int(b[5])
		if sect == 0 || typ&0x0e != 0x0e && typ&0xe0 == 0 {
			continue // NO_SECT, or not N_SECT and not a stab
		}
		if sect == oldPcln {
			v := le.Uint64(b[8:])
			nv, in, err := m.addr(v)
			if err != nil || !in {
				return 0, fmt.Errorf("symbol %d at %#x in __gopclntab: cannot move it (%v)", k, v, err)
			}
			le.PutUint64(b[8:], nv)
			moved++
		}
		ns := renum(sect)
		if ns > 255 {
			return 0, fmt.Errorf("symbol %d: section number %d does not fit n_sect", k, ns)
		}
		b[5] = byte(ns)
	}
	return moved, nil
}

// machoSetSignature sets LC_CODE_SIGNATURE to size bytes at off in out,
// and makes __LINKEDIT end with them (its vmsize a whole number of pages).
func machoSetSignature(out []byte, off, size, page uint64) error {
	le := binary.LittleEndian
	ncmd := le.Uint32(out[16:])
	at := uint64(machoHeaderSize64)
	for range ncmd {
		if at+8 > uint64(len(out)) {
			return errors.New("internal error: load commands run past the file")
		}
		cmd, sz := le.Uint32(out[at:]), uint64(le.Uint32(out[at+4:]))
		c := out[at : at+sz]
		switch {
		case cmd == lcCodeSignature:
			le.PutUint32(c[8:], uint32(off))
			le.PutUint32(c[12:], uint32(size))
		case cmd == lcSegment64 && cstring(c[8:24]) == "__LINKEDIT":
			fo := le.Uint64(c[40:])
			le.PutUint64(c[48:], off+size-fo)
			le.PutUint64(c[32:], alignUp(off+size-fo, page))
		}
		at += sz
	}
	return nil
}

// machoResign rebuilds the embedded signature sig for the file whose
// bytes before the signature are out[:limit]: its code directory gets
// the new code limit, page count, page hashes and __TEXT size
// (execSegBase textOff, execSegLimit textEnd-textOff); the other blobs
// (requirements, entitlements) are kept.
func machoResign(sig, out []byte, limit, textOff, textEnd uint64) ([]byte, error) {
	be := binary.BigEndian
	if len(sig) < 12 || be.Uint32(sig) != csMagicEmbedded {
		return nil, errors.New("code signature: not an embedded signature superblob")
	}
	n := uint64(be.Uint32(sig[8:]))
	if 12+8*n > uint64(len(sig)) {
		return nil, fmt.Errorf("code signature: %d blobs do not fit %d bytes", n, len(sig))
	}
	type blob struct {
		typ  uint32
		data []byte
	}
	var blobs []blob
	for i := uint64(0); i < n; i++ {
		typ, off := be.Uint32(sig[12+8*i:]), uint64(be.Uint32(sig[16+8*i:]))
		if off+8 > uint64(len(sig)) {
			return nil, fmt.Errorf("code signature: blob %d at %#x outside the %d-byte signature", i, off, len(sig))
		}
		l := uint64(be.Uint32(sig[off+4:]))
		if l < 8 || off+l > uint64(len(sig)) {
			return nil, fmt.Errorf("code signature: blob %d (%d bytes at %#x) outside the signature", i, l, off)
		}
		b := blob{typ, sig[off : off+l]}
		if be.Uint32(b.data) == csMagicCodeDir {
			cd, err := rebuildCodeDirectory(b.data, out, limit, textOff, textEnd)
			if err != nil {
				return nil, err
			}
			b.data = cd
		}
		blobs = append(blobs, b)
	}
	hdr := 12 + 8*n
	total := hdr
	for _, b := range blobs {
		total += uint64(len(b.data))
	}
	s := make([]byte, hdr, total)
	be.PutUint32(s[0:], csMagicEmbedded)
	be.PutUint32(s[4:], uint32(total))
	be.PutUint32(s[8:], uint32(n))
	for i, b := range blobs {
		be.PutUint32(s[12+8*i:], b.typ)
		be.PutUint32(s[16+8*i:], uint32(len(s)))
		s = append(s, b.data...)
	}
	return s, nil
}

// rebuildCodeDirectory returns code directory cd with code limit limit and
// the SHA-256 hashes of out's pages below it.
func rebuildCodeDirectory(cd, out []byte, limit, textOff, textEnd uint64) ([]byte, error) {
	be := binary.BigEndian
	if len(cd) < 44 {
		return nil, errors.New("code directory shorter than its header")
	}
	version := be.Uint32(cd[8:])
	hashOff, nCode := uint64(be.Uint32(cd[16:])), uint64(be.Uint32(cd[28:]))
	hashSize, hashType, ps := uint64(cd[36]), cd[37], uint64(cd[39])
	if hashType != csHashTypeSHA256 || hashSize != sha256.Size || ps == 0 || ps > 20 {
		return nil, fmt.Errorf("code directory: hash type %d of %d bytes, page size 2^%d: only SHA-256 is supported", hashType, hashSize, ps)
	}
	if hashOff+nCode*hashSize != uint64(len(cd)) {
		return nil, fmt.Errorf("code directory: %d bytes, but its %d hashes at %#x end at %#x: data after the hashes is not supported", len(cd), nCode, hashOff, hashOff+nCode*hashSize)
	}
	if version >= 0x20100 && len(cd) >= 48 && be.Uint32(cd[44:]) != 0 {
		return nil, errors.New("code directory: scatter vectors are not supported")
	}
	if version >= 0x20300 && len(cd) >= 64 && be.Uint64(cd[56:]) != 0 {
		return nil, errors.New("code directory: a 64-bit code limit is not supported")
	}
	pageSize := uint64(1) << ps
	slots := (limit + pageSize - 1) / pageSize
	if limit > 1<<32-1 || hashOff+slots*hashSize > 1<<32-1 {
		return nil, fmt.Errorf("code directory: code limit %#x does not fit 32 bits", limit)
	}
	n := append([]byte(nil), cd[:hashOff]...)
	be.PutUint32(n[4:], uint32(hashOff+slots*hashSize))
	be.PutUint32(n[28:], uint32(slots))
	be.PutUint32(n[32:], uint32(limit))
	if version >= 0x20400 && len(n) >= 80 && be.Uint64(n[64:]) == textOff {
		be.PutUint64(n[72:], textEnd-textOff)
	}
	for i := uint64(0); i < slots; i++ {
		h := sha256.Sum256(out[i*pageSize : min((i+1)*pageSize, limit)])
		n = append(n, h[:]...)
	}
	return n, nil
}
