package objscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// locate finds the pclntab bytes and their address.
func (f *File) locate(fileSize int64) error {
	im := f.im
	if s := im.section(".gopclntab", ".data.rel.ro.gopclntab", "__gopclntab"); s != nil {
		data, err := s.data(fileSize)
		if err != nil {
			return err
		}
		f.pcln, f.PclntabAddr, f.PclntabSource = data, s.addr, "section "+s.name
		return nil
	}
	for _, pair := range [][2]string{{"runtime.pclntab", "runtime.epclntab"}, {"pclntab", "epclntab"}} {
		start, ok1 := im.sym(pair[0])
		end, ok2 := im.sym(pair[1])
		if !ok1 || !ok2 {
			continue
		}
		if end <= start {
			return formatErr("symbols", -1, "%s (%#x) is not below %s (%#x)", pair[0], start, pair[1], end)
		}
		s := im.sectionAt(start)
		if s == nil {
			return formatErr("symbols", -1, "%s at %#x is not in a section with file data", pair[0], start)
		}
		if end-start > s.filesize || int64(end-start) > fileSize {
			return formatErr("symbols", -1, "%s..%s (%d bytes) runs past section %s", pair[0], pair[1], end-start, s.name)
		}
		data, err := im.readAddr(start, end-start)
		if err != nil {
			return fmt.Errorf("reading pclntab from symbols: %w", err)
		}
		f.pcln, f.PclntabAddr, f.PclntabSource = data, start, "symbols "+pair[0]
		return nil
	}
	return f.scanMagic(fileSize)
}

// scanMagic looks for a valid pcHeader in the non-executable sections. It is
// how a stripped PE binary, or an ELF binary without section headers, is read.
// Each section is read once; a header of an obfuscator's own magic is
// looked for only once no section holds one of Go's.
func (f *File) scanMagic(fileSize int64) error {
	var c candidates
	type section struct {
		s    *segment
		data []byte
	}
	var read []section
	for i := range f.im.sections {
		s := &f.im.sections[i]
		if !f.scannable(s) {
			continue
		}
		data, err := s.data(fileSize)
		if err != nil {
			c.reject(err)
			continue
		}
		if at := f.scanGoMagics(s, data, &c); at >= 0 {
			f.pcln, f.PclntabAddr, f.PclntabSource = data[at:], s.addr+uint64(at), "magic scan in "+s.name
			return nil
		}
		read = append(read, section{s, data})
	}
	// A magic of an obfuscator's own (garble's): a Go 1.18+ header by its
	// other fields.
	if m := goMinor(f.GoVersion); m < 0 || m >= 18 {
		for _, r := range read {
			if at := f.scanForeign(r.s, r.data, &c); at >= 0 {
				f.pcln, f.PclntabAddr, f.PclntabSource = r.data[at:], r.s.addr+uint64(at), "magic scan in "+r.s.name
				return nil
			}
		}
	}
	if c.n > 0 {
		return c.err()
	}
	if f.im.gccgo {
		return formatErr("binary", -1, "no pclntab: built by gccgo (it has a .go_export section), which writes DWARF line tables instead of a pclntab; pctab reads binaries of the gc toolchain")
	}
	return formatErr("binary", -1, "no pclntab: no .gopclntab/__gopclntab section, no runtime.pclntab symbols, and no pcHeader magic in any data section (is this a Go binary?)")
}

// scanGoMagics looks in the data section s for a pcHeader of one of Go's
// magics, in either byte order, and returns the offset of the first that
// parses, or -1.
func (f *File) scanGoMagics(s *segment, data []byte, c *candidates) int {
	var cand File
	for _, magic := range []uint32{Go120Magic, Go118Magic, Go116Magic, Go12Magic, LinearMagic, LinearDerivedMagic} {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			var pat [6]byte
			order.PutUint32(pat[:], magic)
			for off := 0; off+16 <= len(data) && !c.full(); {
				j := bytes.Index(data[off:], pat[:])
				if j < 0 {
					break
				}
				at := off + j
				off = at + 1
				if at%4 != 0 {
					continue
				}
				cand = File{im: f.im, pcln: data[at:], GoVersion: f.GoVersion}
				if err := cand.parseHeader(); err != nil {
					c.rejectAt(s, at, err)
					continue
				}
				if at%cand.PtrSize != 0 {
					continue
				}
				cand.PclntabAddr = s.addr + uint64(at)
				c.parsed++
				if err := cand.parse(); err != nil {
					c.rejectAt(s, at, err)
					continue
				}
				return at
			}
		}
	}
	return -1
}

// maxCandidates bounds how many places holding a plausible pcHeader a
// scan parses whole, so that a file full of them costs time in proportion
// to its size; maxCandidateErrs is how many of their errors it keeps.
const (
	maxCandidates    = 16
	maxCandidateErrs = 3
)

// candidates is what a scan for a pcHeader rejected: how many places, how
// many of them it parsed whole, and the first few errors, for the message.
type candidates struct {
	n, parsed int
	first     []error
}

// full reports whether the scan has parsed as many candidates as it may.
func (c *candidates) full() bool { return c.parsed >= maxCandidates }

// reject records a rejected place (or a section that could not be read).
func (c *candidates) reject(err error) {
	c.n++
	if len(c.first) < maxCandidateErrs {
		c.first = append(c.first, err)
	}
}

// rejectAt records the candidate at offset at of section s; the error is
// wrapped with the place only if it is kept.
func (c *candidates) rejectAt(s *segment, at int, err error) {
	if len(c.first) < maxCandidateErrs {
		err = fmt.Errorf("candidate at %s+%#x: %w", s.name, at, err)
	}
	c.reject(err)
}

// err is the error of a scan that found no pclntab.
func (c *candidates) err() error {
	if c.full() {
		return fmt.Errorf("objscan: no pclntab: no pclntab section or symbols, and none of the first %d places in the data sections that hold a pcHeader starts a valid pclntab, where the scan stops after parsing %d whole (is its pclntab removed?); the first %d: %w",
			c.n, maxCandidates, len(c.first), oneLine(c.first))
	}
	return fmt.Errorf("objscan: no pclntab: no pclntab section or symbols, and none of the %d places in the data sections that hold a pcHeader magic starts a valid pclntab (is its pclntab removed?); the first %d: %w",
		c.n, len(c.first), oneLine(c.first))
}

// scannable reports whether scanMagic looks for a pcHeader in section s:
// a data section of at least a header's size (Go's linker puts read-only
// data in the text segment on AIX and Plan 9).
func (f *File) scannable(s *segment) bool {
	return (!s.exec || f.im.format == "xcoff" || f.im.format == "plan9") && s.filesize >= 16
}

// oneLine is errors.Join on one line: a command prints it as one message.
type oneLine []error

// Error joins the errors' messages with "; ".
func (e oneLine) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (e oneLine) Unwrap() []error { return e }

// textBase derives the address that Go 1.18+ entry offsets are relative to,
// the way the runtime does: moduledata.text, or the runtime.text symbol.
func (f *File) textBase(hdrText uint64) error {
	if md := f.findModuledata(); md != nil {
		f.TextStart, f.TextSource = md.text, "moduledata.text"
		return nil
	}
	if v, ok := f.im.sym("runtime.text"); ok {
		f.TextStart, f.TextSource = v, "runtime.text symbol"
		return nil
	}
	if hdrText != 0 {
		f.TextStart, f.TextSource = hdrText, "pcHeader.textStart"
		return nil
	}
	if f.im.textSect != 0 {
		f.TextStart, f.TextSource = f.im.textSect, "first executable section (no symbol or moduledata found)"
		return nil
	}
	return formatErr("binary", -1, "cannot find the text base: no runtime.text symbol, no moduledata, no executable section")
}

// MaxModuledataWords bounds how many pointer-sized words of the runtime's
// moduledata objscan reads, and rewrite updates: enough for every field up
// to itablinks in Go 1.16 to 1.27 (the whole struct is 74 words on Go 1.26), the fields
// that point at the pclntab and the sections after it.
const MaxModuledataWords = 96

// minModuledataWords is the prefix every Go 1.16+ moduledata shares,
// pcHeader through etext; a candidate with fewer words before the end of
// its section is not one. minOldModuledataWords is the prefix of the Go
// 1.5-1.15 moduledata: pclntable, ftab and filetab slices, findfunctab,
// minpc, maxpc, text, etext.
const (
	minModuledataWords    = 24
	minOldModuledataWords = 14
)

// Moduledata returns the address of the runtime's moduledata for this
// pclntab and how many of its words objscan read (at least the prefix up
// to etext, at most MaxModuledataWords, fewer when its section ends
// earlier). ok is false when there is none: no data word points at the
// pcHeader followed by the funcnametab (Go 1.16+ layout), or at the
// pclntab followed, three words later, by the functab (the Go 1.5-1.15
// moduledata, whose first fields are the pclntable, ftab and filetab
// slices; Go 1.2-1.4 have no moduledata).
func (f *File) Moduledata() (addr uint64, words int, ok bool) {
	m := f.findModuledata()
	if m == nil {
		return 0, 0, false
	}
	return m.addr, m.prefix + len(m.words), true
}

// ModuleText returns moduledata.text, the address of the first function
// (runtime.text), for any layout whose moduledata objscan finds. Before
// Go 1.18 entry PCs are absolute and TextStart is 0; rewrite converts them
// to offsets from this address.
func (f *File) ModuleText() (uint64, bool) {
	m := f.findModuledata()
	if m == nil {
		return 0, false
	}
	return m.text, true
}

type moduledata struct {
	addr        uint64
	text        uint64
	findfunctab uint64
	// prefix is the number of words up to etext: minModuledataWords, or
	// minOldModuledataWords in the Go 1.5-1.15 layout.
	prefix int
	// words holds the moduledata words after etext, up to
	// MaxModuledataWords in all. Their layout changes
	// between releases (Go 1.27 added fields before gofunc), so gofunc is
	// picked from them by validation, not by a fixed index.
	words []uint64
	// textsects is moduledata.textsectmap when the text is split into
	// several sections (external linking of very large ARM, PPC64 and
	// darwin/arm64 programs); nil otherwise.
	textsects []textsect
}

// textsect is the runtime's textsect: a text section's pre-link offset
// range and its final address.
type textsect struct {
	vaddr, end, baseaddr uint64
}

// findTextSects looks among the moduledata words for the textsectmap slice:
// a (pointer, len, cap) triple whose entries start at offset 0 at the text
// base and increase. It returns the map only when it has several sections.
func (f *File) findTextSects(m *moduledata) []textsect {
	ps := uint64(f.PtrSize)
	for i := 0; i+2 < len(m.words); i++ {
		ptr, n, c := m.words[i], m.words[i+1], m.words[i+2]
		if n < 2 || n > c || c > 256 || f.im.sectionAt(ptr) == nil {
			continue
		}
		raw, err := f.im.readAddr(ptr, n*3*ps)
		if err != nil {
			continue
		}
		word := func(j uint64) uint64 {
			if ps == 4 {
				return uint64(f.ByteOrder.Uint32(raw[j*4:]))
			}
			return f.ByteOrder.Uint64(raw[j*8:])
		}
		sects := make([]textsect, n)
		ok := true
		for j := range sects {
			s := textsect{word(uint64(j) * 3), word(uint64(j)*3 + 1), word(uint64(j)*3 + 2)}
			if s.end < s.vaddr || (j > 0 && (s.vaddr < sects[j-1].end || s.baseaddr < sects[j-1].baseaddr)) {
				ok = false
				break
			}
			sects[j] = s
		}
		if ok && sects[0].vaddr == 0 && sects[0].baseaddr == m.text {
			return sects
		}
	}
	return nil
}

// textAddr converts a Go 1.18+ entry offset into an address, the way
// runtime.(*moduledata).textAddr does. In a wasm functab of function
// indexes (wasmIndexes), a PC is the function's number (the text base
// plus its index) shifted left 16 bits above the resume point's.
func (f *File) textAddr(off uint64) uint64 {
	if f.wasmIndexes {
		return (f.TextStart + off) << 16
	}
	if f.md != nil && len(f.md.textsects) > 1 {
		ts := f.md.textsects
		for i, s := range ts {
			if off >= s.vaddr && off < s.end || (i == len(ts)-1 && off == s.end) {
				return s.baseaddr + off - s.vaddr
			}
		}
	}
	return f.TextStart + off
}

// findModuledata finds the runtime's moduledata for this pclntab: the data
// word that points at the pcHeader, followed by a funcnametab slice that
// points at the function names (Go 1.16+), or by the pclntable slice's
// length and capacity and then an ftab slice that points at the functab
// (Go 1.5-1.15; in a replace-mode rewrite of such a binary, the pclntable
// and ftab words point at the new pcHeader and functab).
func (f *File) findModuledata() *moduledata {
	if f.md != nil {
		return f.md
	}
	ps := uint64(f.PtrSize)
	word := func(b []byte, i uint64) uint64 {
		if ps == 4 {
			return uint64(f.ByteOrder.Uint32(b[i*4:]))
		}
		return f.ByteOrder.Uint64(b[i*8:])
	}
	var pat [8]byte
	if ps == 4 {
		f.ByteOrder.PutUint32(pat[:], uint32(f.PclntabAddr))
	} else {
		f.ByteOrder.PutUint64(pat[:], f.PclntabAddr)
	}
	funcnameOff := f.namesOff
	// Candidate sections: the dedicated moduledata sections first, then any
	// writable data.
	var order []*segment
	for i := range f.im.sections {
		s := &f.im.sections[i]
		if s.name == ".go.module" || s.name == "__go_module" {
			order = append([]*segment{s}, order...)
		} else if s.write && !s.exec {
			order = append(order, s)
		}
	}
	for _, s := range order {
		if s.filesize > 1<<30 {
			continue
		}
		data, err := f.im.readAddr(s.addr, s.filesize)
		if err != nil {
			continue
		}
		for off := 0; ; {
			j := bytes.Index(data[off:], pat[:ps])
			if j < 0 {
				break
			}
			at := uint64(off + j)
			off += j + 1
			if at%ps != 0 || at+minOldModuledataWords*ps > uint64(len(data)) {
				continue
			}
			md := data[at:]
			m := &moduledata{addr: s.addr + at}
			switch {
			case f.Magic != Go12Magic && at+minModuledataWords*ps <= uint64(len(data)) && word(md, 1) == f.PclntabAddr+funcnameOff:
				m.prefix, m.findfunctab, m.text = minModuledataWords, word(md, 19), word(md, 22)
			case (f.Magic == Go12Magic || f.Linear != nil) && f.ftabOff != 0 && word(md, 3) == f.PclntabAddr+f.ftabOff && word(md, 1) == word(md, 2):
				m.prefix, m.findfunctab, m.text = minOldModuledataWords, word(md, 9), word(md, 12)
			default:
				continue
			}
			n := min(MaxModuledataWords, (uint64(len(data))-at)/ps)
			for i := uint64(m.prefix); i < n; i++ {
				m.words = append(m.words, word(md, i))
			}
			m.textsects = f.findTextSects(m)
			f.md = m
			return m
		}
	}
	return nil
}

// resolveGoFunc finds the address of go:func.*, which Go 1.18+ funcdata
// offsets are relative to. It tries the moduledata words that point into the
// image, then the symbols, and keeps the first address under which the inline
// trees of a sample of functions decode to real names and parent PCs.
//
// A replace-mode pclntab made from a Go 1.2-1.17 layout, whose funcdata
// were absolute pointers, holds them as offsets from the text start
// (rewrite-binary converts them; see linear.go): GoFuncAddr is TextStart.
func (f *File) resolveGoFunc() {
	if f.Magic != Go118Magic && f.Magic != Go120Magic {
		return
	}
	if rm := f.releaseMagic(); rm == Go12Magic || rm == Go116Magic {
		f.GoFuncAddr = f.TextStart
		return
	}
	var cands []uint64
	if md := f.findModuledata(); md != nil {
		for _, w := range md.words {
			if w != 0 && f.im.sectionAt(w) != nil {
				cands = append(cands, w)
			}
		}
	}
	for _, c := range cands {
		if f.validGoFunc(c) {
			f.GoFuncAddr = c
			return
		}
	}
	// Only now pay for loading the symbol table.
	for _, name := range []string{"go:func.*", "go.func.*"} {
		if v, ok := f.im.sym(name); ok && f.validGoFunc(v) {
			f.GoFuncAddr = v
			return
		}
	}
}

// validGoFunc reports whether the first inline tree entries of up to 64
// functions, read under base, have valid names and parent PCs.
func (f *File) validGoFunc(base uint64) bool {
	size := uint64(inlEntrySizeOld)
	nameAt, pcAt := 12, 16
	switch {
	case f.newInlLayout():
		size, nameAt, pcAt = inlEntrySize, 4, 8
	case f.inlLayout19():
		size, pcAt = inlEntrySize19, -1 // no parent PC
	}
	slot, idx := f.inlTreeSlot(), f.inlIndex()
	if slot < 0 || idx < 0 {
		return false
	}
	checked := 0
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if len(fn.FuncData) <= slot || fn.FuncData[slot] == NoFuncData ||
			len(fn.PCData) <= idx || fn.PCData[idx] == 0 {
			continue
		}
		e, err := f.im.readAddr(base+fn.FuncData[slot], size)
		if err != nil {
			return false
		}
		nameOff := uint64(f.ByteOrder.Uint32(e[nameAt:]))
		parentPC := uint64(0)
		if pcAt >= 0 {
			parentPC = uint64(f.ByteOrder.Uint32(e[pcAt:]))
		}
		if nameOff >= uint64(len(f.names)) || (nameOff > 0 && f.names[nameOff-1] != 0) || parentPC >= max(fn.Size, fn.End-fn.Entry) {
			return false
		}
		if checked++; checked == 64 {
			break
		}
	}
	return checked > 0
}
