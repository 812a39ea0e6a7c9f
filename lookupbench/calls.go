package lookupbench

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/pctab/pctab/internal/par"
	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// codeSection is an executable section's file bytes at its virtual address.
type codeSection struct {
	name string
	addr uint64
	data []byte
}

// Mach-O section attributes that mark code.
const (
	machoPureInstructions = 0x80000000
	machoSomeInstructions = 0x00000400
)

// readCode returns the executable sections of the ELF, Mach-O or PE binary
// read from r.
func readCode(r io.ReaderAt) ([]codeSection, error) {
	var out []codeSection
	if ef, err := elf.NewFile(r); err == nil {
		for _, s := range ef.Sections {
			if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 || s.Flags&elf.SHF_ALLOC == 0 {
				continue
			}
			d, err := s.Data()
			if err != nil {
				return nil, fmt.Errorf("ELF section %s: %w", s.Name, err)
			}
			out = append(out, codeSection{s.Name, s.Addr, d})
		}
	} else if mf, err := macho.NewFile(r); err == nil {
		for _, s := range mf.Sections {
			if s.Seg != "__TEXT" || s.Flags&(machoPureInstructions|machoSomeInstructions) == 0 {
				continue
			}
			d, err := s.Data()
			if err != nil {
				return nil, fmt.Errorf("Mach-O section %s: %w", s.Name, err)
			}
			out = append(out, codeSection{s.Name, s.Addr, d})
		}
	} else if pf, err := pe.NewFile(r); err == nil {
		var base uint64
		switch oh := pf.OptionalHeader.(type) {
		case *pe.OptionalHeader64:
			base = oh.ImageBase
		case *pe.OptionalHeader32:
			base = uint64(oh.ImageBase)
		}
		for _, s := range pf.Sections {
			if s.Characteristics&(pe.IMAGE_SCN_CNT_CODE|pe.IMAGE_SCN_MEM_EXECUTE) == 0 {
				continue
			}
			d, err := s.Data()
			if err != nil {
				return nil, fmt.Errorf("PE section %s: %w", s.Name, err)
			}
			if uint32(len(d)) > s.VirtualSize {
				d = d[:s.VirtualSize] // the rest is file alignment padding
			}
			out = append(out, codeSection{s.Name, base + uint64(s.VirtualAddress), d})
		}
	} else {
		return nil, errors.New("not an ELF, Mach-O or PE file")
	}
	if len(out) == 0 {
		return nil, errors.New("no executable section with file data")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out, nil
}

// code returns the bytes of [lo, hi), clipped to the section holding lo,
// or nil if no section holds lo.
func code(secs []codeSection, lo, hi uint64) []byte {
	i := sort.Search(len(secs), func(i int) bool { return secs[i].addr+uint64(len(secs[i].data)) > lo })
	if i == len(secs) || secs[i].addr > lo {
		return nil
	}
	s := &secs[i]
	end := min(hi, s.addr+uint64(len(s.data)))
	return s.data[lo-s.addr : end-s.addr]
}

// returnAddresser finds the return addresses in one function's code, as
// offsets from its entry, in ascending order.
type returnAddresser func(code []byte) []uint32

// disassembler returns the return-address finder for goarch and its name,
// or nil if there is none.
func disassembler(goarch string) (returnAddresser, string) {
	switch goarch {
	case "amd64":
		return func(c []byte) []uint32 { return x86Calls(c, 64) }, "x86asm"
	case "386":
		return func(c []byte) []uint32 { return x86Calls(c, 32) }, "x86asm"
	case "arm64":
		return arm64Calls, "arm64asm"
	}
	return nil, ""
}

// x86Calls decodes c instruction by instruction and returns the offset
// after every CALL. Bytes that do not decode are skipped one at a time, as
// Go's objdump does.
func x86Calls(c []byte, mode int) []uint32 {
	var ras []uint32
	for off := 0; off < len(c); {
		inst, err := x86asm.Decode(c[off:], mode)
		if err != nil || inst.Len == 0 {
			off++
			continue
		}
		off += inst.Len
		if inst.Op == x86asm.CALL {
			ras = append(ras, uint32(off))
		}
	}
	return ras
}

// BL and BLR encodings: only words that match one of them can be calls, so
// only those are handed to the disassembler.
const (
	arm64BLMask, arm64BL   = 0xfc000000, 0x94000000
	arm64BLRMask, arm64BLR = 0xfffffc1f, 0xd63f0000
)

// arm64Calls returns the offset after every BL and BLR in c (4-byte,
// little-endian instructions). Each candidate word is confirmed by arm64asm.
func arm64Calls(c []byte) []uint32 {
	var ras []uint32
	for off := 0; off+4 <= len(c); off += 4 {
		w := binary.LittleEndian.Uint32(c[off:])
		if w&arm64BLMask != arm64BL && w&arm64BLRMask != arm64BLR {
			continue
		}
		inst, err := arm64asm.Decode(c[off : off+4])
		if err == nil && (inst.Op == arm64asm.BL || inst.Op == arm64asm.BLR) {
			ras = append(ras, uint32(off+4))
		}
	}
	return ras
}

// findCalls disassembles every function. Without a disassembler for the
// architecture or without readable code it records why and returns nil:
// the return-address samples then fall back to random PCs.
func (b *Bench) findCalls() error {
	find, name := disassembler(b.f.GOARCH)
	if find == nil {
		b.noCalls = fmt.Sprintf("no disassembler for GOARCH=%s", b.f.GOARCH)
		return nil
	}
	r, done, err := b.openCode()
	if err != nil {
		b.noCalls = err.Error()
		return nil
	}
	defer done()
	secs, err := readCode(r)
	if err != nil {
		b.noCalls = fmt.Sprintf("reading code: %v", err)
		return nil
	}
	funcs := b.f.Funcs
	b.calls = make([][]uint32, len(funcs))
	par.For(len(funcs), b.opt.Workers, func(_, i int) error {
		fn := &funcs[i]
		end := max(fn.End, fn.Entry+fn.Size)
		if c := code(secs, fn.Entry, end); c != nil {
			b.calls[i] = find(c)
		}
		return nil
	})
	for _, c := range b.calls {
		b.numCalls += len(c)
	}
	if b.numCalls == 0 {
		b.calls = nil
		b.noCalls = "disassembly found no call instructions"
		return nil
	}
	b.disasm = name
	return nil
}
