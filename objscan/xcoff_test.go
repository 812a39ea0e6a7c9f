package objscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// synthXCOFF wraps a big-endian, 8-byte-pointer pclntab in a minimal 64-bit
// XCOFF file laid out as Go's linker lays out aix/ppc64 builds: the
// pclntab inside .text, after 512 bytes of code at synthText; an empty
// .data and a .bss section; and, with syms, a symbol table naming
// runtime.pclntab and runtime.epclntab (each with one auxiliary entry, as
// csect symbols have) and its string table.
func synthXCOFF(pcln []byte, syms bool) []byte {
	be := binary.BigEndian
	const nscns, textCode = 3, 512
	textOff := uint64(xcoffFileHdrSize + nscns*xcoffSectHdrSize)
	textSize := uint64(textCode + len(pcln))
	symOff := textOff + textSize
	b := be.AppendUint16(nil, xcoffMagic64)
	b = be.AppendUint16(b, nscns)
	b = be.AppendUint32(b, 0) // f_timdat
	if syms {
		b = be.AppendUint64(b, symOff)
	} else {
		b = be.AppendUint64(b, 0)
	}
	b = be.AppendUint16(b, 0) // f_opthdr
	b = be.AppendUint16(b, 2) // f_flags: F_EXEC
	if syms {
		b = be.AppendUint32(b, 4) // two symbols, each with an auxiliary entry
	} else {
		b = be.AppendUint32(b, 0)
	}
	sect := func(name string, vaddr, size, scnptr uint64, flags uint32) {
		var n [8]byte
		copy(n[:], name)
		b = append(b, n[:]...)
		b = be.AppendUint64(b, vaddr) // s_paddr
		b = be.AppendUint64(b, vaddr)
		b = be.AppendUint64(b, size)
		b = be.AppendUint64(b, scnptr)
		b = append(b, make([]byte, 16)...) // s_relptr, s_lnnoptr
		b = append(b, make([]byte, 8)...)  // s_nreloc, s_nlnno
		b = be.AppendUint32(b, flags)
		b = append(b, make([]byte, 4)...)
	}
	sect(".text", synthText, textSize, textOff, xcoffStypText)
	sect(".data", 0x20000000, 0, 0, xcoffStypData)
	sect(".bss", 0x20000000, 64, 0, xcoffStypBss)
	b = append(b, make([]byte, textCode)...)
	b = append(b, pcln...)
	if !syms {
		return b
	}
	strs := []byte("\x00\x00\x00\x00runtime.pclntab\x00runtime.epclntab\x00")
	be.PutUint32(strs, uint32(len(strs)))
	sym := func(value uint64, nameOff uint32) {
		b = be.AppendUint64(b, value)
		b = be.AppendUint32(b, nameOff)
		b = be.AppendUint16(b, 1) // n_scnum: .text
		b = be.AppendUint16(b, 0)
		b = append(b, 0x6b, 1)             // n_sclass C_HIDEXT, n_numaux 1
		b = append(b, make([]byte, 18)...) // the csect auxiliary entry
	}
	pclnAddr := uint64(synthText + textCode)
	sym(pclnAddr, 4)
	sym(pclnAddr+uint64(len(pcln)), 4+uint32(len("runtime.pclntab\x00")))
	return append(b, strs...)
}

// xcoffLayouts returns the synthetic layouts an aix/ppc64 build can have:
// big-endian with 8-byte pointers.
func xcoffLayouts() []synthLayout {
	var ls []synthLayout
	for _, l := range synthLayouts {
		if l.order == order(binary.BigEndian) && l.ptrSize == 8 {
			ls = append(ls, l)
		}
	}
	return ls
}

// TestXCOFF opens synthetic XCOFF files of every layout an aix/ppc64 build
// has: with symbols the pclntab is found by them, without (-s) by the scan
// for its magic, which reads .text in an XCOFF file (Go's linker puts the
// read-only data there on AIX). TestPorts and TestOldPorts (PCTAB_LONG=1)
// read real builds.
func TestXCOFF(t *testing.T) {
	for _, l := range xcoffLayouts() {
		for _, syms := range []bool{true, false} {
			f, err := NewFile(bytes.NewReader(synthXCOFF(buildSynth(l, synthFuncs(l.magic)), syms)))
			if err != nil {
				t.Fatalf("%v, symbols %v: %v", l, syms, err)
			}
			want := "magic scan in .text"
			if syms {
				want = "symbols runtime.pclntab"
			}
			if f.Format != "xcoff" || f.GOOS != "aix" || f.GOARCH != "ppc64" || f.ByteOrder != binary.BigEndian || f.PtrSize != 8 ||
				len(f.Funcs) != 3 || f.Funcs[0].Name != "main.a" || f.Funcs[0].Entry != synthText || f.PclntabSource != want {
				t.Errorf("%v, symbols %v: %s %s/%s %v %d-byte pointers, %d functions (%q at %#x), pclntab from %q; want xcoff aix/ppc64 big-endian 8, 3 (main.a at %#x) from %q",
					l, syms, f.Format, f.GOOS, f.GOARCH, f.ByteOrder, f.PtrSize, len(f.Funcs), f.Funcs[0].Name, f.Funcs[0].Entry, f.PclntabSource, synthText, want)
			}
		}
	}
}

// TestXCOFFHostile sets the counts and offsets of a synthetic XCOFF file's
// headers to hostile values and cuts it at every byte: each must fail
// with an error (a read past the end wrapping ErrTruncated) or open
// without its symbols, never panic, and allocate at most 16 times the file
// plus 1 MiB.
func TestXCOFFHostile(t *testing.T) {
	l := xcoffLayouts()[0]
	good := synthXCOFF(buildSynth(l, synthFuncs(l.magic)), true)
	be := binary.BigEndian
	set := func(off int, width int, v uint64) []byte {
		b := bytes.Clone(good)
		switch width {
		case 1:
			b[off] = byte(v)
		case 2:
			be.PutUint16(b[off:], uint16(v))
		case 4:
			be.PutUint32(b[off:], uint32(v))
		default:
			be.PutUint64(b[off:], v)
		}
		return b
	}
	text := xcoffFileHdrSize // the .text section header
	strtab := len(good) - len("\x00\x00\x00\x00runtime.pclntab\x00runtime.epclntab\x00")
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" if the file opens (without its symbols)
	}{
		{"nscns 0xffff", set(2, 2, 0xffff), "65535 section headers"},
		{"opthdr 0xffff", set(16, 2, 0xffff), "section headers of 72 bytes at offset 0x10017"},
		{"section size 2^40", set(text+24, 8, 1<<40), "section 0 .text"},
		{"section size 2^64-1", set(text+24, 8, 1<<64-1), "section 0 .text"},
		{"section offset 2^64-1", set(text+32, 8, 1<<64-1), "section 0 .text"},
		{"symptr 2^64-1", set(8, 8, 1<<64-1), "symbols of 18 bytes and a string table at file offset 0xffffffffffffffff"},
		{"symptr past the end", set(8, 8, uint64(len(good))), "run past the end"},
		{"nsyms 2^31-1", set(20, 4, 1<<31-1), "2147483647 symbols"},
		{"string table 2^32-1 bytes", set(strtab, 4, 0xffffffff), "claims 4294967295 bytes"},
		{"string table 3 bytes", set(strtab, 4, 3), "claims 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkXCOFFHostile(t, tc.data, tc.want, ErrTruncated)
		})
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"nsyms -1", set(20, 4, 0xffffffff), "negative"},
		{"name offset 2^32-1", set(strtab-2*2*xcoffSymSize+8, 4, 0xffffffff), "name offset 0xffffffff is outside the 37-byte string table"},
		{"numaux 255", set(strtab-2*2*xcoffSymSize+17, 1, 255), ""}, // skips every symbol: found by its magic
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkXCOFFHostile(t, tc.data, tc.want, nil)
		})
	}
	truncatedErrs := 0
	for cut := range len(good) {
		_, err := NewFile(bytes.NewReader(good[:cut]))
		if err == nil {
			t.Fatalf("cut at %d of %d: opened", cut, len(good))
		}
		if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: %v: an end-of-file error that does not wrap ErrTruncated", cut, len(good), err)
		}
		if errors.Is(err, ErrTruncated) {
			truncatedErrs++
		}
	}
	t.Logf("%d of %d cuts: ErrTruncated", truncatedErrs, len(good))
}

// checkXCOFFHostile opens data, which must allocate at most 16 times its
// size plus 1 MiB, and fail with an error containing want and wrapping
// sentinel (if not nil); or open if want is "".
func checkXCOFFHostile(t *testing.T, data []byte, want string, sentinel error) {
	t.Helper()
	var f *File
	var err error
	alloc := allocs.Least(3, func() { f, err = NewFile(bytes.NewReader(data)) })
	if limit := uint64(16*len(data) + 1<<20); alloc > limit {
		t.Errorf("allocated %d bytes, more than %d", alloc, limit)
	}
	switch {
	case want == "" && err != nil:
		t.Errorf("error %v, want the file to open", err)
	case want == "":
		t.Logf("opened; pclntab from %s", f.PclntabSource)
	case err == nil || !strings.Contains(err.Error(), want) || sentinel != nil && !errors.Is(err, sentinel):
		t.Errorf("error %v, want one containing %q (and wrapping %v)", err, want, sentinel)
	}
}
