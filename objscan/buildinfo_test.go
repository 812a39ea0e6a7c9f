package objscan

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

// TestBuildInfoNoSections checks that a PIE whose section headers are gone
// still has its Go version and target: debug/buildinfo looks for the blob
// at the start of the first writable segment only, and a PIE's is at the
// start of the second (after .data.rel.ro), so its version was unknown.
func TestBuildInfoNoSections(t *testing.T) {
	path := testbuild.Build(t, testbuild.Config{Archive: "features", BuildMode: "pie"})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	o := ef.ByteOrder
	if ef.Class != elf.ELFCLASS64 {
		t.Skip("not a 64-bit ELF file")
	}
	o.PutUint64(data[0x28:], 0) // e_shoff
	o.PutUint16(data[0x3c:], 0) // e_shnum
	o.PutUint16(data[0x3e:], 0) // e_shstrndx
	f, err := NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if f.GoVersion != bi.GoVersion || f.GOOS != "linux" || f.PclntabSource == "section .gopclntab" {
		t.Errorf("version %q, GOOS %q, pclntab from %q; want %q, linux, no section", f.GoVersion, f.GOOS, f.PclntabSource, bi.GoVersion)
	}
}

// TestDecodeBuildInfo decodes build info blobs in both formats, the
// strings inline (Go 1.18 and later) and behind pointers (before, in
// either byte order and pointer size), and refuses hostile ones: strings
// longer than 1 MiB, pointers outside the image, a bad pointer size.
func TestDecodeBuildInfo(t *testing.T) {
	const base = 0x10000
	mod := "\x30\x77\xaf\x0c\x92\x74\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6" +
		"path\texample.com/x\nbuild\tGOOS=aix\nbuild\tGOARCH=ppc64\n" +
		"\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2"
	inline := func(vers, mod string, varint []byte) []byte {
		b := append([]byte(nil), buildInfoMagic...)
		b = append(b, 8, 2)
		b = append(b, make([]byte, 16)...)
		if varint != nil {
			return append(b, varint...)
		}
		b = binary.AppendUvarint(b, uint64(len(vers)))
		b = append(b, vers...)
		b = binary.AppendUvarint(b, uint64(len(mod)))
		return append(b, mod...)
	}
	// pointers lays out the header at base, the two string headers at
	// base+64 and the strings at base+128; bad replaces the version's
	// string header.
	pointers := func(o binary.ByteOrder, ps int, vers, mod string, bad []byte) []byte {
		b := make([]byte, 128)
		copy(b, buildInfoMagic)
		b[14] = byte(ps)
		if o == binary.BigEndian {
			b[15] = 1
		}
		put := func(at int, v uint64) {
			if ps == 4 {
				o.PutUint32(b[at:], uint32(v))
			} else {
				o.PutUint64(b[at:], v)
			}
		}
		put(16, base+64)
		put(16+ps, base+64+2*uint64(ps))
		put(64, base+128)
		put(64+ps, uint64(len(vers)))
		put(64+2*ps, base+128+uint64(len(vers)))
		put(64+3*ps, uint64(len(mod)))
		if bad != nil {
			copy(b[64:], bad)
		}
		return append(append(b, vers...), mod...)
	}
	for _, tc := range []struct {
		name       string
		data       []byte
		vers, goos string
	}{
		{"inline", inline("go1.26.8", mod, nil), "go1.26.8", "aix"},
		{"inline, no module", inline("go1.18.10", "", nil), "go1.18.10", ""},
		{"pointers, little-endian, 8", pointers(binary.LittleEndian, 8, "go1.13.15", mod, nil), "go1.13.15", "aix"},
		{"pointers, big-endian, 4", pointers(binary.BigEndian, 4, "go1.16.15", mod, nil), "go1.16.15", "aix"},
		{"pointers, no module", pointers(binary.LittleEndian, 8, "go1.13.15", "", nil), "go1.13.15", ""},
		{"not a Go version", inline("gopher", mod, nil), "", ""},
		{"version of 2^40 bytes", inline("", "", binary.AppendUvarint(nil, 1<<40)), "", ""},
		{"version past the end", inline("", "", binary.AppendUvarint(nil, 100)), "", ""},
		{"varint of 11 bytes", inline("", "", bytes.Repeat([]byte{0xff}, 11)), "", ""},
		{"string pointer outside", pointers(binary.LittleEndian, 8, "go1.13.15", mod, binary.LittleEndian.AppendUint64(nil, 1<<40)), "", ""},
		{"string of 2^63 bytes", pointers(binary.LittleEndian, 8, "go1.13.15", mod, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, base+128), 1<<63)), "", ""},
		{"pointer size 3", append(append(append([]byte(nil), buildInfoMagic...), 3, 0), make([]byte, 32)...), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Before the blob, 16 bytes: a copy of the magic that starts
			// no valid blob (its pointer size is 0).
			data := append(append(append([]byte(nil), buildInfoMagic...), make([]byte, 2)...), tc.data...)
			im := &image{fileSize: int64(len(data)), sections: []segment{{
				name: ".data", addr: base - 16, size: uint64(len(data)), filesize: uint64(len(data)), write: true, r: bytes.NewReader(data),
			}}}
			vers, mod := im.scanBuildInfo()
			goos, _ := buildSettings(mod)
			if vers != tc.vers || goos != tc.goos {
				t.Errorf("version %q, GOOS %q; want %q, %q", vers, goos, tc.vers, tc.goos)
			}
		})
	}
}
