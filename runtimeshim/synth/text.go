package synth

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"fmt"
	"io"
)

// maxText bounds the size of a text section this package reads.
const maxText = 1 << 30

// readText returns the bytes of the executable section of the binary in r
// that holds the address lo, and the section's address. It understands
// ELF, Mach-O and PE.
func readText(r io.ReaderAt, format string, lo uint64) (base uint64, data []byte, err error) {
	defer func() {
		// The debug/* parsers may panic on malformed files.
		if p := recover(); p != nil {
			base, data, err = 0, nil, fmt.Errorf("synth: reading %s text: %v", format, p)
		}
	}()
	var (
		addr, size uint64
		sr         io.ReaderAt
	)
	found := false
	switch format {
	case "elf":
		f, err := elf.NewFile(r)
		if err != nil {
			return 0, nil, fmt.Errorf("synth: %w", err)
		}
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type != elf.SHT_NOBITS && s.Addr <= lo && lo < s.Addr+s.Size {
				addr, size, sr, found = s.Addr, s.Size, s, true
				break
			}
		}
	case "macho":
		f, err := macho.NewFile(r)
		if err != nil {
			return 0, nil, fmt.Errorf("synth: %w", err)
		}
		for _, s := range f.Sections {
			if s.Seg == "__TEXT" && s.Addr <= lo && lo < s.Addr+s.Size {
				addr, size, sr, found = s.Addr, s.Size, s, true
				break
			}
		}
	case "pe":
		f, err := pe.NewFile(r)
		if err != nil {
			return 0, nil, fmt.Errorf("synth: %w", err)
		}
		var imageBase uint64
		switch oh := f.OptionalHeader.(type) {
		case *pe.OptionalHeader64:
			imageBase = oh.ImageBase
		case *pe.OptionalHeader32:
			imageBase = uint64(oh.ImageBase)
		}
		const cntCode = 0x20 // IMAGE_SCN_CNT_CODE
		for _, s := range f.Sections {
			a := imageBase + uint64(s.VirtualAddress)
			n := uint64(min(s.VirtualSize, s.Size))
			if s.Characteristics&cntCode != 0 && a <= lo && lo < a+n {
				addr, size, sr, found = a, n, s, true
				break
			}
		}
	default:
		return 0, nil, fmt.Errorf("synth: unknown executable format %q", format)
	}
	if !found {
		return 0, nil, fmt.Errorf("synth: no executable section holds %#x", lo)
	}
	if size > maxText {
		return 0, nil, fmt.Errorf("synth: text section of %d bytes is too large", size)
	}
	if sz, ok := r.(interface{ Size() int64 }); ok && size > uint64(sz.Size()) {
		return 0, nil, fmt.Errorf("synth: text section of %d bytes is larger than the file (%d bytes)", size, sz.Size())
	}
	data = make([]byte, size)
	if _, err := sr.ReadAt(data, 0); err != nil {
		return 0, nil, fmt.Errorf("synth: reading the text section at %#x: %w", addr, err)
	}
	return addr, data, nil
}
