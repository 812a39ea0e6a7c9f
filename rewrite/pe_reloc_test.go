package rewrite

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
)

// TestReplacePEBaseRelocs rewrites Go 1.18-1.25 PE files, whose pclntab
// has a base relocation of pcHeader.textStart, and checks the result with
// a base relocation reader of its own, debug/pe and objdump: the one
// relocation of the new pcHeader's textStart word, which holds the text
// start, no relocation left in the old table or pointing into it, and the
// directory inside its section's bytes.
func TestReplacePEBaseRelocs(t *testing.T) {
	for _, tc := range []struct {
		cfg  testbuild.Config
		full bool // fill .reloc's padding first, so that it must grow
	}{
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.25.14"}},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.25.14"}, full: true},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "arm64", Toolchain: "go1.25.14"}},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "386", Toolchain: "go1.25.14"}},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "386", Toolchain: "go1.25.14"}, full: true},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.22.12"}},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.18.10"}},
		{cfg: testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "386", Toolchain: "go1.18.10"}},
	} {
		cfg := tc.cfg
		t.Run(cfg.GOARCH+"-"+cfg.Toolchain+map[bool]string{true: "-full"}[tc.full], func(t *testing.T) {
			in := testbuild.Build(t, cfg)
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.full {
				data = fillRelocPadding(t, data, 6)
			}
			out, res, err := Rewrite(data, Options{Mode: Replace, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
				t.Fatalf("verify: %+v", res.Verify)
			}
			i := slices.IndexFunc(res.Parts, func(p Part) bool { return p.Name == peRelocPart })
			if i < 0 || (res.Parts[i].Delta() > 0) != tc.full {
				t.Errorf("base relocation part %v, want a growth: %v", res.Parts, tc.full)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			checkSizes(t, res, orig)
			f, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if f.Magic != objscan.LinearMagic {
				t.Fatalf("objscan reads magic %#x", f.Magic)
			}
			newTS := checkPERelocs(t, data, out, orig.PclntabAddr, uint64(len(orig.Pclntab())), f.PclntabAddr)
			if f.TextStart != newTS {
				t.Errorf("objscan's text start %#x, the relocated word holds %#x", f.TextStart, newTS)
			}
			path := filepath.Join(t.TempDir(), "out.exe")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			llvmReadobjClean(t, path)
			objdumpReloc(t, path, f.PclntabAddr+8+2*uint64(f.PtrSize))
			t.Logf("%d -> %d bytes (%+d)", res.InBytes, res.OutBytes, res.DeltaBytes)
		})
	}
}

// peReloc is a base relocation: the RVA it applies to and its type.
type peReloc struct {
	rva uint32
	typ uint16
}

// peRelocsOf reads the base relocation directory of a PE file, skipping
// ABSOLUTE (padding) entries, and checks that it lies in one section's
// file bytes and virtual size. It returns the image base too.
func peRelocsOf(t *testing.T, data []byte) (*pe.File, uint64, []peReloc) {
	t.Helper()
	pf, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	var dir pe.DataDirectory
	switch oh := pf.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		base, dir = oh.ImageBase, oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_BASERELOC]
	case *pe.OptionalHeader32:
		base, dir = uint64(oh.ImageBase), oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_BASERELOC]
	}
	var b []byte
	for _, s := range pf.Sections {
		if dir.VirtualAddress >= s.VirtualAddress && dir.VirtualAddress+dir.Size <= s.VirtualAddress+min(s.Size, s.VirtualSize) {
			sd, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			b = sd[dir.VirtualAddress-s.VirtualAddress:][:dir.Size]
		}
	}
	if b == nil {
		t.Fatalf("base relocations (RVA %#x, %d bytes) are not in one section's file bytes and virtual size", dir.VirtualAddress, dir.Size)
	}
	le := binary.LittleEndian
	var rs []peReloc
	for len(b) >= 8 {
		page, size := le.Uint32(b), le.Uint32(b[4:])
		if size < 8 || int(size) > len(b) {
			t.Fatalf("base relocation block for page %#x: size %d", page, size)
		}
		for k := uint32(8); k < size; k += 2 {
			if e := le.Uint16(b[k:]); e>>12 != 0 {
				rs = append(rs, peReloc{page + uint32(e&0xfff), e >> 12})
			}
		}
		b = b[size:]
	}
	return pf, base, rs
}

// peWord reads the word of size n at RVA rva of pf.
func peWord(t *testing.T, pf *pe.File, rva uint32, n int) uint64 {
	t.Helper()
	for _, s := range pf.Sections {
		if rva >= s.VirtualAddress && rva+uint32(n) <= s.VirtualAddress+min(s.Size, s.VirtualSize) {
			b := make([]byte, n)
			if _, err := s.ReadAt(b, int64(rva-s.VirtualAddress)); err != nil {
				t.Fatal(err)
			}
			if n == 8 {
				return binary.LittleEndian.Uint64(b)
			}
			return uint64(binary.LittleEndian.Uint32(b))
		}
	}
	t.Fatalf("RVA %#x is in no section's file bytes", rva)
	return 0
}

// checkPERelocs checks the base relocations of out, the rewrite of in
// (pclntab of oldSize bytes at oldPcln, now at newPcln), and returns the
// value of the new pcHeader's textStart word.
func checkPERelocs(t *testing.T, in, out []byte, oldPcln, oldSize, newPcln uint64) uint64 {
	t.Helper()
	ipf, base, irs := peRelocsOf(t, in)
	opf, _, ors := peRelocsOf(t, out)
	ps := 4
	if _, ok := ipf.OptionalHeader.(*pe.OptionalHeader64); ok {
		ps = 8
	}
	var text uint64
	for _, s := range ipf.Symbols {
		if s.Name == "runtime.text" && s.SectionNumber > 0 {
			text = base + uint64(ipf.Sections[s.SectionNumber-1].VirtualAddress) + uint64(s.Value)
		}
	}
	if text == 0 {
		t.Fatal("no runtime.text symbol")
	}
	oldTS, newTS := uint32(oldPcln-base)+8+2*uint32(ps), uint32(newPcln-base)+8+2*uint32(ps)
	at := func(rs []peReloc, rva uint32) []peReloc {
		var got []peReloc
		for _, r := range rs {
			if r.rva == rva {
				got = append(got, r)
			}
		}
		return got
	}
	want := at(irs, oldTS)
	if len(want) != 1 || peWord(t, ipf, oldTS, ps) != text {
		t.Fatalf("input: relocations of pcHeader.textStart at RVA %#x: %v, want one; the word holds %#x, want %#x", oldTS, want, peWord(t, ipf, oldTS, ps), text)
	}
	if got := at(ors, newTS); len(got) != 1 || got[0].typ != want[0].typ {
		t.Errorf("output: relocations of the new pcHeader.textStart at RVA %#x: %v, want one of type %d", newTS, got, want[0].typ)
	}
	if w := peWord(t, opf, newTS, ps); w != text {
		t.Errorf("the new pcHeader.textStart holds %#x, want the text start %#x", w, text)
	}
	if len(ors) != len(irs) {
		t.Errorf("%d base relocations, had %d", len(ors), len(irs))
	}
	oldStart, oldEnd := uint32(oldPcln-base), uint32(oldPcln-base+oldSize)
	for _, r := range ors {
		if r.rva >= oldStart && r.rva < oldEnd {
			t.Errorf("base relocation at RVA %#x lies in the old table (%#x..%#x)", r.rva, oldStart, oldEnd)
			continue
		}
		if v := peWord(t, opf, r.rva, ps); v > oldPcln && v < oldPcln+oldSize {
			t.Errorf("base relocation at RVA %#x: the word %#x points into the old table", r.rva, v)
		}
	}
	return text
}

// objdumpReloc checks, when objdump reads PE files of this architecture,
// that it lists a relocation at address ts (the new textStart word).
func objdumpReloc(t *testing.T, path string, ts uint64) {
	t.Helper()
	od, err := exec.LookPath("objdump")
	if err != nil {
		return
	}
	msg, err := exec.Command(od, "-p", path).CombinedOutput()
	if err != nil || !bytes.Contains(msg, []byte("PE File Base Relocations")) {
		t.Logf("objdump -p does not read %s here: %v", path, err)
		return
	}
	pf, err := pe.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var base uint64
	switch oh := pf.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		base = oh.ImageBase
	case *pe.OptionalHeader32:
		base = uint64(oh.ImageBase)
	}
	if want := fmt.Sprintf("[%x]", ts-base); !strings.Contains(string(msg), want) {
		t.Errorf("objdump -p lists no base relocation %s", want)
	}
}

// fillRelocPadding returns a copy of data, a PE file, with a block of
// ABSOLUTE entries (page 0) added to its base relocations so that only
// leave bytes of its section's file alignment padding stay free.
func fillRelocPadding(t *testing.T, data []byte, leave uint32) []byte {
	t.Helper()
	le := binary.LittleEndian
	data = slices.Clone(data)
	coff := uint64(le.Uint32(data[0x3c:])) + 4
	opt := coff + 20
	sectAt := opt + uint64(le.Uint16(data[coff+16:]))
	dirAt := opt + 96 + 8*pe.IMAGE_DIRECTORY_ENTRY_BASERELOC
	if le.Uint16(data[opt:]) == 0x20b { // PE32+
		dirAt += 16
	}
	va, size := le.Uint32(data[dirAt:]), le.Uint32(data[dirAt+4:])
	for i := uint64(0); i < uint64(le.Uint16(data[coff+2:])); i++ {
		h := data[sectAt+40*i:]
		sva, vsize, raw, off := le.Uint32(h[12:]), le.Uint32(h[8:]), le.Uint32(h[16:]), le.Uint32(h[20:])
		if va < sva || va >= sva+raw {
			continue
		}
		end := va - sva + size
		n := raw - end - leave
		if raw-end < leave+8 || n%2 != 0 {
			t.Fatalf("%d bytes of padding after the base relocations: cannot leave %d", raw-end, leave)
		}
		le.PutUint32(data[off+end:], 0)
		le.PutUint32(data[off+end+4:], n)
		le.PutUint32(data[dirAt+4:], size+n)
		le.PutUint32(h[8:], max(vsize, end+n))
		return data
	}
	t.Fatal("no section holds the base relocations")
	return nil
}

// TestReplacePERelocNoRoom checks the refusal of a PE file whose .reloc
// has no padding left for the new block and cannot grow: the next
// section starts right after its raw data.
func TestReplacePERelocNoRoom(t *testing.T) {
	cfg := testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.25.14"}
	data, err := os.ReadFile(testbuild.Build(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	data = fillRelocPadding(t, data, 6)
	// Move the section after .reloc in memory to the end of .reloc's raw
	// data (it is .symtab, which is not loaded).
	le := binary.LittleEndian
	coff := uint64(le.Uint32(data[0x3c:])) + 4
	sectAt := coff + 20 + uint64(le.Uint16(data[coff+16:]))
	n := uint64(le.Uint16(data[coff+2:]))
	for i := uint64(0); i+1 < n; i++ {
		h := data[sectAt+40*i:]
		if cstring(h[:8]) == ".reloc" {
			le.PutUint32(data[sectAt+40*(i+1)+12:], le.Uint32(h[12:])+le.Uint32(h[16:]))
		}
	}
	_, _, err = Rewrite(data, Options{Mode: Replace})
	if want := "cannot grow by 512 bytes: section .symtab starts at RVA"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}
