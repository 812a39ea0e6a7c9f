package objscan

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"debug/plan9obj"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
)

// bigEndian lists the GOARCHes whose byte order is big-endian; ptr4 those
// with 4-byte pointers.
var (
	bigEndian = map[string]bool{"ppc64": true, "mips": true, "mips64": true, "s390x": true}
	ptr4      = map[string]bool{"386": true, "arm": true, "mips": true, "mipsle": true}
)

// TestPorts builds the features program for every port of the local
// toolchain (go tool dist list) with cgo off, and checks that objscan
// either reads it right (the target, byte order and pointer size of the
// port; every function, file and line against debug/gosym; the entry of
// every function the container's symbol table names, for ELF, Mach-O and
// PE, through debug/plan9obj for Plan 9, and from the name section for
// WebAssembly). Ports that
// the go command links only externally (android/386, amd64 and arm, ios)
// are skipped; ios/amd64 builds with -buildmode=exe.
func TestPorts(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds the features program for every port of the local toolchain")
	out, err := exec.Command("go", "tool", "dist", "list", "-json").Output()
	if err != nil {
		t.Fatalf("go tool dist list: %v", err)
	}
	var ports []struct{ GOOS, GOARCH string }
	if err := json.Unmarshal(out, &ports); err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		cfg := testbuild.Config{Archive: "features", GOOS: p.GOOS, GOARCH: p.GOARCH}
		if p.GOOS == "ios" && p.GOARCH == "amd64" {
			cfg.BuildMode = "exe" // its default, pie, links externally
		}
		t.Run(p.GOOS+"-"+p.GOARCH, func(t *testing.T) {
			checkPort(t, cfg)
		})
	}
}

// TestOldPorts builds cmd/gofmt with older toolchains for ports the
// local tests build with the local one only, and for ports their release
// added (ppc64 big-endian in go1.5, mips64le in go1.6, s390x in go1.7,
// mips in go1.8, riscv64 in go1.14, windows/arm64 in go1.17, loong64 in
// go1.19, openbsd/riscv64 in go1.23), and checks them as TestPorts does.
// The GOOS of the solaris and dragonfly builds, whose build info (before
// Go 1.18) and OSABI byte do not record it, comes from their file tables.
func TestOldPorts(t *testing.T) {
	testenv.SkipUnlessLong(t, "cross-compiles cmd/gofmt with older toolchains")
	for _, tc := range []struct {
		toolchain string
		ports     []string
	}{
		// The ports whose reading a fix depends on (GOOS from the file
		// table or rt0 file; XCOFF; Plan 9 a.out; WebAssembly, whose
		// Go 1.2 layout debug/gosym checks line by line; a PC past the
		// pcln table), and an old big-endian one: a sweep of 36 builds on 40 ports took 25
		// minutes (hardening-binaries.md), too long for every CI run.
		{"go1.5.4", []string{"linux/ppc64", "plan9/386"}},
		{"go1.7.6", []string{"plan9/amd64", "plan9/arm"}},
		{"go1.9.7", []string{"solaris/amd64"}},
		{"go1.10.8", []string{"dragonfly/amd64"}},
		{"go1.12.17", []string{"aix/ppc64", "js/wasm"}},
		{"go1.13.15", []string{"illumos/amd64"}},
		{"go1.21.13", []string{"wasip1/wasm"}},
		{"go1.25.14", []string{"linux/s390x"}},
	} {
		for _, port := range tc.ports {
			goos, goarch, _ := strings.Cut(port, "/")
			cfg := testbuild.Config{Package: "cmd/gofmt", Toolchain: tc.toolchain, GOOS: goos, GOARCH: goarch}
			t.Run(tc.toolchain+"-"+goos+"-"+goarch, func(t *testing.T) {
				checkPort(t, cfg)
			})
		}
	}
}

// checkPort builds cfg and checks what objscan makes of it; see TestPorts.
// It downloads a missing toolchain, as testbuild.Build does outside
// -short: on a machine whose module cache lacks go1.5.4, TestOldPorts
// failed ("toolchain not in the module cache").
func checkPort(t *testing.T, cfg testbuild.Config) {
	cfg.AllowDownload = !testing.Short()
	path, err := testbuild.Compile(t.Context(), cfg)
	if err != nil {
		if strings.Contains(err.Error(), "requires external (cgo) linking") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.GOOS != cfg.GOOS || f.GOARCH != cfg.GOARCH {
		t.Errorf("target %s/%s, want %s/%s", f.GOOS, f.GOARCH, cfg.GOOS, cfg.GOARCH)
	}
	if want := binary.ByteOrder(binary.LittleEndian); bigEndian[cfg.GOARCH] && f.ByteOrder != binary.BigEndian || !bigEndian[cfg.GOARCH] && f.ByteOrder != want {
		t.Errorf("byte order %v", f.ByteOrder)
	}
	if want := map[bool]int{true: 4, false: 8}[ptr4[cfg.GOARCH]]; f.PtrSize != want {
		t.Errorf("pointer size %d, want %d", f.PtrSize, want)
	}
	checkGosym(t, f, 3)
	if f.Format != "xcoff" { // no reader of XCOFF symbols outside objscan
		checkContainerSymbols(t, f, path)
	}
}

// checkContainerSymbols checks the entry of every function of f against
// the function symbols of the container's symbol table, an independent
// record of where the linker put them: every function the table names
// must be at one of the addresses it gives for the name (or for the name
// with ".abi0", the assembly function a pclntab entry stands for).
func checkContainerSymbols(t *testing.T, f *File, path string) {
	t.Helper()
	syms, err := containerSymbols(path)
	if err != nil {
		t.Fatal(err)
	}
	found, bad := 0, 0
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		addrs, ok := syms[fn.Name]
		if !ok {
			continue
		}
		found++
		if !addrs[fn.Entry] && !syms[fn.Name+".abi0"][fn.Entry] {
			if bad++; bad <= 5 {
				t.Errorf("%s at %#x, the symbol table has it at %v", fn.Name, fn.Entry, addrs)
			}
		}
	}
	t.Logf("%d of %d functions in the symbol table, %d at another address", found, len(f.Funcs), bad)
}

// containerSymbols reads the function symbols of the ELF, Mach-O, PE,
// Plan 9 a.out or WebAssembly file at path: each name with its addresses.
func containerSymbols(path string) (map[string]map[uint64]bool, error) {
	m := map[string]map[uint64]bool{}
	add := func(name string, addr uint64) {
		if m[name] == nil {
			m[name] = map[uint64]bool{}
		}
		m[name][addr] = true
	}
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		syms, err := f.Symbols()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return nil, err
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				add(s.Name, s.Value)
			}
		}
		return m, nil
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		if f.Symtab != nil {
			for _, s := range f.Symtab.Syms {
				if s.Sect > 0 && int(s.Sect) <= len(f.Sections) && f.Sections[s.Sect-1].Name == "__text" {
					add(strings.TrimPrefix(s.Name, "_"), s.Value)
				}
			}
		}
		return m, nil
	}
	if data, err := os.ReadFile(path); err == nil && bytes.HasPrefix(data, []byte("\x00asm")) {
		return m, wasmNames(data, add)
	}
	if f, err := plan9obj.Open(path); err == nil {
		defer f.Close()
		syms, err := f.Symbols()
		if err != nil && !errors.Is(err, plan9obj.ErrNoSymbols) {
			return nil, err
		}
		for _, s := range syms {
			if s.Type == 'T' || s.Type == 't' {
				add(s.Name, s.Value)
			}
		}
		return m, nil
	}
	f, err := pe.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var base uint64
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		base = uint64(oh.ImageBase)
	case *pe.OptionalHeader64:
		base = oh.ImageBase
	}
	for _, s := range f.Symbols {
		if s.SectionNumber > 0 && int(s.SectionNumber) <= len(f.Sections) && f.Sections[s.SectionNumber-1].Name == ".text" {
			add(s.Name, base+uint64(f.Sections[s.SectionNumber-1].VirtualAddress)+uint64(s.Value))
		}
	}
	return m, nil
}

// wasmNames reads a WebAssembly module's function names from its name
// section (custom section "name", subsection 1) and adds each at the PC
// Go's linker gives the function: its index past the imported functions,
// plus 0x1000 (funcValueOffset), shifted left 16 bits
// (cmd/link/internal/wasm's assignAddress).
func wasmNames(data []byte, add func(string, uint64)) error {
	d := data[8:]
	uleb := func() uint64 {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			panic("bad LEB128")
		}
		d = d[n:]
		return v
	}
	name := func() string {
		n := uleb()
		s := string(d[:n])
		d = d[n:]
		return s
	}
	imports := uint64(0)
	var names []byte
	for len(d) > 0 {
		id := d[0]
		d = d[1:]
		size := uleb()
		body, rest := d[:size], d[size:]
		switch d = body; {
		case id == 2: // imports: module, field, kind, and for a function its type
			for n := uleb(); n > 0; n-- {
				name()
				name()
				if kind := d[0]; kind != 0 {
					return fmt.Errorf("import of kind %d", kind)
				}
				d = d[1:]
				uleb()
				imports++
			}
		case id == 0 && name() == "name":
			names = d
		}
		d = rest
	}
	for d = names; len(d) > 0; {
		sub := d[0]
		d = d[1:]
		size := uleb()
		body, rest := d[:size], d[size:]
		if d = body; sub == 1 {
			for n := uleb(); n > 0; n-- {
				idx := uleb()
				nm := name()
				if idx >= imports {
					add(nm, (0x1000+idx-imports)<<16)
				}
			}
		}
		d = rest
	}
	return nil
}
