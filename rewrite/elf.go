package rewrite

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/pctab/pctab/objscan"
)

// elfFile is the raw view of an ELF file that the rewriter edits: the header
// fields it changes, and every program and section header, decoded. The
// standard library's debug/elf reads ELF but cannot write it; this type
// writes back exactly the fields it read.
type elfFile struct {
	data  []byte
	order binary.ByteOrder
	is64  bool
	typ   elf.Type
	mach  elf.Machine

	phoff, shoff         uint64
	phentsize, shentsize uint64
	shstrndx             int

	progs []elfProg
	sects []elfSect
}

// elfProg is a program header.
type elfProg struct {
	Type, Flags                             uint32
	Off, Vaddr, Paddr, Filesz, Memsz, Align uint64
}

// elfSect is a section header, with its name resolved.
type elfSect struct {
	Name                   string
	NameOff                uint32
	Type                   uint32
	Flags, Addr, Off, Size uint64
	Link, Info             uint32
	Addralign, Entsize     uint64
}

// nobits reports whether the section occupies no file bytes.
func (s *elfSect) nobits() bool { return s.Type == uint32(elf.SHT_NOBITS) }

// alloc reports whether the section is loaded.
func (s *elfSect) alloc() bool { return s.Flags&uint64(elf.SHF_ALLOC) != 0 }

// fileEnd is the end of the section's file bytes.
func (s *elfSect) fileEnd() uint64 {
	if s.nobits() {
		return s.Off
	}
	return s.Off + s.Size
}

// parseELF decodes data's ELF headers. It checks them with debug/elf first,
// then rereads the raw fields with bounds checks of its own.
func parseELF(data []byte) (*elfFile, error) {
	if _, err := safeELF(data); err != nil {
		return nil, err
	}
	e := &elfFile{data: data}
	switch elf.Class(data[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
		e.is64 = true
	case elf.ELFCLASS32:
	default:
		return nil, fmt.Errorf("ELF: unknown class %d", data[elf.EI_CLASS])
	}
	switch elf.Data(data[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		e.order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		e.order = binary.BigEndian
	default:
		return nil, fmt.Errorf("ELF: unknown data encoding %d", data[elf.EI_DATA])
	}
	o := e.order
	e.typ = elf.Type(o.Uint16(data[16:]))
	e.mach = elf.Machine(o.Uint16(data[18:]))
	var phnum, shnum uint64
	if e.is64 {
		if len(data) < 64 {
			return nil, errors.New("ELF: file shorter than its header")
		}
		e.phoff, e.shoff = o.Uint64(data[32:]), o.Uint64(data[40:])
		e.phentsize, phnum = uint64(o.Uint16(data[54:])), uint64(o.Uint16(data[56:]))
		e.shentsize, shnum = uint64(o.Uint16(data[58:])), uint64(o.Uint16(data[60:]))
		e.shstrndx = int(o.Uint16(data[62:]))
	} else {
		if len(data) < 52 {
			return nil, errors.New("ELF: file shorter than its header")
		}
		e.phoff, e.shoff = uint64(o.Uint32(data[28:])), uint64(o.Uint32(data[32:]))
		e.phentsize, phnum = uint64(o.Uint16(data[42:])), uint64(o.Uint16(data[44:]))
		e.shentsize, shnum = uint64(o.Uint16(data[46:])), uint64(o.Uint16(data[48:]))
		e.shstrndx = int(o.Uint16(data[50:]))
	}
	wantPh, wantSh := uint64(32), uint64(40)
	if e.is64 {
		wantPh, wantSh = 56, 64
	}
	n := uint64(len(data))
	if phnum > 0 && (e.phentsize != wantPh || e.phoff > n || (n-e.phoff)/wantPh < phnum) {
		return nil, fmt.Errorf("ELF: program header table (%d entries of %d bytes at %#x) is malformed or outside the file", phnum, e.phentsize, e.phoff)
	}
	if shnum == 0 || e.shentsize != wantSh || e.shoff > n || (n-e.shoff)/wantSh < shnum {
		return nil, fmt.Errorf("ELF: section header table (%d entries of %d bytes at %#x) is missing, malformed or outside the file (extended section numbering is not supported)", shnum, e.shentsize, e.shoff)
	}
	if e.shstrndx <= 0 || uint64(e.shstrndx) >= shnum {
		return nil, fmt.Errorf("ELF: section name table index %d out of range", e.shstrndx)
	}
	for i := uint64(0); i < phnum; i++ {
		at := e.phoff + i*wantPh
		p := e.readProg(data[at:])
		if err := checkAlign(fmt.Sprintf("ELF: program header %d (at %#x): alignment", i, at), p.Align, n); err != nil {
			return nil, err
		}
		if p.Filesz > 0 && !inFile(p.Off, p.Filesz, n) {
			return nil, fmt.Errorf("ELF: %w: program header %d (at %#x): %d bytes at file offset %#x lie outside the %d-byte file", objscan.ErrTruncated, i, at, p.Filesz, p.Off, n)
		}
		e.progs = append(e.progs, p)
	}
	for i := uint64(0); i < shnum; i++ {
		at := e.shoff + i*wantSh
		s := e.readSect(data[at:])
		if !s.nobits() && !inFile(s.Off, s.Size, n) {
			return nil, fmt.Errorf("ELF: %w: section %d (header at %#x): %d bytes at file offset %#x lie outside the %d-byte file", objscan.ErrTruncated, i, at, s.Size, s.Off, n)
		}
		if err := checkAlign(fmt.Sprintf("ELF: section %d (header at %#x): alignment", i, at), s.Addralign, n); err != nil {
			return nil, err
		}
		e.sects = append(e.sects, s)
	}
	strs := &e.sects[e.shstrndx]
	if strs.nobits() {
		return nil, errors.New("ELF: section name table has no data")
	}
	names := data[strs.Off : strs.Off+strs.Size]
	for i := range e.sects {
		s := &e.sects[i]
		if uint64(s.NameOff) >= uint64(len(names)) {
			if i == 0 && s.NameOff == 0 {
				continue
			}
			return nil, fmt.Errorf("ELF: section %d: name offset %#x outside the %d-byte name table", i, s.NameOff, len(names))
		}
		end := bytes.IndexByte(names[s.NameOff:], 0)
		if end < 0 {
			return nil, fmt.Errorf("ELF: section %d: name is not NUL-terminated", i)
		}
		s.Name = string(names[s.NameOff : int(s.NameOff)+end])
	}
	return e, nil
}

// safeELF runs debug/elf on data, turning a parser panic into an error.
func safeELF(data []byte) (f *elf.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ELF: malformed file (debug/elf failed: %v)", p)
		}
	}()
	f, err = elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("ELF: %w", err)
	}
	return f, nil
}

func (e *elfFile) readProg(b []byte) elfProg {
	o := e.order
	if e.is64 {
		return elfProg{Type: o.Uint32(b[0:]), Flags: o.Uint32(b[4:]), Off: o.Uint64(b[8:]), Vaddr: o.Uint64(b[16:]),
			Paddr: o.Uint64(b[24:]), Filesz: o.Uint64(b[32:]), Memsz: o.Uint64(b[40:]), Align: o.Uint64(b[48:])}
	}
	return elfProg{Type: o.Uint32(b[0:]), Off: uint64(o.Uint32(b[4:])), Vaddr: uint64(o.Uint32(b[8:])),
		Paddr: uint64(o.Uint32(b[12:])), Filesz: uint64(o.Uint32(b[16:])), Memsz: uint64(o.Uint32(b[20:])),
		Flags: o.Uint32(b[24:]), Align: uint64(o.Uint32(b[28:]))}
}

func (e *elfFile) putProg(b []byte, p *elfProg) {
	o := e.order
	if e.is64 {
		o.PutUint32(b[0:], p.Type)
		o.PutUint32(b[4:], p.Flags)
		o.PutUint64(b[8:], p.Off)
		o.PutUint64(b[16:], p.Vaddr)
		o.PutUint64(b[24:], p.Paddr)
		o.PutUint64(b[32:], p.Filesz)
		o.PutUint64(b[40:], p.Memsz)
		o.PutUint64(b[48:], p.Align)
		return
	}
	o.PutUint32(b[0:], p.Type)
	o.PutUint32(b[4:], uint32(p.Off))
	o.PutUint32(b[8:], uint32(p.Vaddr))
	o.PutUint32(b[12:], uint32(p.Paddr))
	o.PutUint32(b[16:], uint32(p.Filesz))
	o.PutUint32(b[20:], uint32(p.Memsz))
	o.PutUint32(b[24:], p.Flags)
	o.PutUint32(b[28:], uint32(p.Align))
}

func (e *elfFile) readSect(b []byte) elfSect {
	o := e.order
	if e.is64 {
		return elfSect{NameOff: o.Uint32(b[0:]), Type: o.Uint32(b[4:]), Flags: o.Uint64(b[8:]), Addr: o.Uint64(b[16:]),
			Off: o.Uint64(b[24:]), Size: o.Uint64(b[32:]), Link: o.Uint32(b[40:]), Info: o.Uint32(b[44:]),
			Addralign: o.Uint64(b[48:]), Entsize: o.Uint64(b[56:])}
	}
	return elfSect{NameOff: o.Uint32(b[0:]), Type: o.Uint32(b[4:]), Flags: uint64(o.Uint32(b[8:])), Addr: uint64(o.Uint32(b[12:])),
		Off: uint64(o.Uint32(b[16:])), Size: uint64(o.Uint32(b[20:])), Link: o.Uint32(b[24:]), Info: o.Uint32(b[28:]),
		Addralign: uint64(o.Uint32(b[32:])), Entsize: uint64(o.Uint32(b[36:]))}
}

func (e *elfFile) putSect(b []byte, s *elfSect) {
	o := e.order
	if e.is64 {
		o.PutUint32(b[0:], s.NameOff)
		o.PutUint32(b[4:], s.Type)
		o.PutUint64(b[8:], s.Flags)
		o.PutUint64(b[16:], s.Addr)
		o.PutUint64(b[24:], s.Off)
		o.PutUint64(b[32:], s.Size)
		o.PutUint32(b[40:], s.Link)
		o.PutUint32(b[44:], s.Info)
		o.PutUint64(b[48:], s.Addralign)
		o.PutUint64(b[56:], s.Entsize)
		return
	}
	o.PutUint32(b[0:], s.NameOff)
	o.PutUint32(b[4:], s.Type)
	o.PutUint32(b[8:], uint32(s.Flags))
	o.PutUint32(b[12:], uint32(s.Addr))
	o.PutUint32(b[16:], uint32(s.Off))
	o.PutUint32(b[20:], uint32(s.Size))
	o.PutUint32(b[24:], s.Link)
	o.PutUint32(b[28:], s.Info)
	o.PutUint32(b[32:], uint32(s.Addralign))
	o.PutUint32(b[36:], uint32(s.Entsize))
}

// putHeader writes the header fields the rewriter may change: the offsets
// and counts of the two header tables.
func (e *elfFile) putHeader(b []byte) {
	o := e.order
	if e.is64 {
		o.PutUint64(b[32:], e.phoff)
		o.PutUint64(b[40:], e.shoff)
		o.PutUint16(b[56:], uint16(len(e.progs)))
		o.PutUint16(b[60:], uint16(len(e.sects)))
		o.PutUint16(b[62:], uint16(e.shstrndx))
		return
	}
	o.PutUint32(b[28:], uint32(e.phoff))
	o.PutUint32(b[32:], uint32(e.shoff))
	o.PutUint16(b[44:], uint16(len(e.progs)))
	o.PutUint16(b[48:], uint16(len(e.sects)))
	o.PutUint16(b[50:], uint16(e.shstrndx))
}

// ehsize is the size of the ELF header.
func (e *elfFile) ehsize() uint64 {
	if e.is64 {
		return 64
	}
	return 52
}

// ptrSize is the size of an address in the file's class.
func (e *elfFile) ptrSize() uint64 {
	if e.is64 {
		return 8
	}
	return 4
}

// section returns the index of the named section, or -1.
func (e *elfFile) section(name string) int {
	for i := range e.sects {
		if e.sects[i].Name == name {
			return i
		}
	}
	return -1
}

// firstDataOff returns the lowest file offset of any section's bytes that
// lies at or after off, ignoring the section header table itself, or the
// file size if there is none.
func (e *elfFile) firstDataOff(off uint64) uint64 {
	first := uint64(len(e.data))
	for i := range e.sects {
		s := &e.sects[i]
		if i == 0 || s.nobits() || s.Size == 0 {
			continue
		}
		if s.Off >= off && s.Off < first {
			first = s.Off
		}
	}
	return first
}

// placeTables decides where the program and section header tables of the
// output go. The program header table stays where it is (the PT_PHDR
// segment and the loader find it there) and, if it follows the ELF header,
// must have room for its entries before the first section's bytes (replace
// mode may have moved it elsewhere). The section header table goes right
// after it when it fits before the first section's bytes, as the Go linker
// places it, and otherwise at the end of the output, whose current size is
// end. It returns the section header table's offset.
func (e *elfFile) placeTables(end uint64) (uint64, error) {
	phEnd := e.phoff + uint64(len(e.progs))*e.phentsize
	limit := e.firstDataOff(e.ehsize())
	if len(e.progs) > 0 && e.phoff < limit && phEnd > limit {
		return 0, fmt.Errorf("ELF: no room for %d program headers at %#x: section data starts at %#x", len(e.progs), e.phoff, limit)
	}
	shAt := alignUp(max(phEnd, e.ehsize()), 8)
	if shAt+uint64(len(e.sects))*e.shentsize <= limit {
		return shAt, nil
	}
	return alignUp(end, 8), nil
}

// writeTables writes the header, program headers and section headers into
// out, which must be large enough.
func (e *elfFile) writeTables(out []byte) {
	e.putHeader(out)
	for i := range e.progs {
		e.putProg(out[e.phoff+uint64(i)*e.phentsize:], &e.progs[i])
	}
	for i := range e.sects {
		e.putSect(out[e.shoff+uint64(i)*e.shentsize:], &e.sects[i])
	}
}

// sortedLoads returns the indexes of the PT_LOAD segments in e.progs,
// sorted by address.
func (e *elfFile) sortedLoads() []int {
	var idx []int
	for i := range e.progs {
		if e.progs[i].Type == uint32(elf.PT_LOAD) {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return e.progs[idx[a]].Vaddr < e.progs[idx[b]].Vaddr })
	return idx
}

// alignUp rounds x up to a multiple of a (a power of two, or 0 or 1).
func alignUp(x, a uint64) uint64 {
	if a <= 1 {
		return x
	}
	return (x + a - 1) &^ (a - 1)
}
