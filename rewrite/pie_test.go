package rewrite

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
)

// TestReplacePIE rewrites Go 1.18-1.25 PIEs (and a c-shared library),
// whose pclntab is in .data.rel.ro.gopclntab, or the end of .data.rel.ro
// when gcc linked them, with a dynamic relocation of pcHeader.textStart,
// and checks the result against debug/elf, readelf, the dynamic loader
// and, where the binary runs here, the Go runtime itself: its refusal of
// the new magic prints pcHeader.textStart after the loader relocated it,
// next to moduledata.text (the library is loaded with dlopen).
func TestReplacePIE(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  testbuild.Config
	}{
		{"go1.25-amd64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.25.14", BuildMode: "pie"}},
		{"go1.25-arm64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "arm64", Toolchain: "go1.25.14", BuildMode: "pie"}},
		{"go1.25-ppc64le", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "ppc64le", Toolchain: "go1.25.14", BuildMode: "pie"}},
		{"go1.25-loong64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "loong64", Toolchain: "go1.25.14", BuildMode: "pie"}},
		{"go1.24-amd64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.24.13", BuildMode: "pie"}},
		{"go1.22-amd64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.22.12", BuildMode: "pie"}},
		{"go1.18-amd64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.18.10", BuildMode: "pie"}},
		{"go1.18-arm64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "arm64", Toolchain: "go1.18.10", BuildMode: "pie"}},
		// Linked by gcc: the table is the end of .data.rel.ro, before
		// .dynamic, .got and .data in the same segment, which is split.
		{"go1.25-amd64-external", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.25.14", BuildMode: "pie", LinkMode: "external"}},
		{"go1.22-amd64-external", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.22.12", BuildMode: "pie", LinkMode: "external"}},
		{"go1.18-amd64-external", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.18.10", BuildMode: "pie", LinkMode: "external"}},
		// A shared library, loaded with dlopen.
		{"go1.25-amd64-c-shared", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.25.14", BuildMode: "c-shared", LinkMode: "external"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath("gcc"); err != nil && tc.cfg.LinkMode == "external" {
				t.Skip("no gcc for external linking")
			}
			in := testbuild.Build(t, tc.cfg)
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "replaced")
			res, err := RewriteFile(in, out, Options{Mode: Replace, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
				t.Fatalf("verification: %+v", res.Verify)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			checkSizes(t, res, orig)
			outData, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			text := checkPIE(t, data, outData)
			readelfClean(t, out)
			checkLoads(t, tc.cfg, out, text)
			t.Logf("%d -> %d bytes (%+d)", res.InBytes, res.OutBytes, res.DeltaBytes)
		})
	}
}

// pieReloc is a dynamic relocation as the test reads it, independently
// of the rewriter: where it applies, its type, and its addend (for REL,
// the word at off).
type pieReloc struct {
	off, addend uint64
	typ         uint32
}

// pieRelocs reads the dynamic relocations (SHT_RELA and SHT_REL sections)
// of f, whose bytes are data.
func pieRelocs(t *testing.T, f *elf.File, data []byte) []pieReloc {
	t.Helper()
	is64 := f.Class == elf.ELFCLASS64
	var rs []pieReloc
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL {
			continue
		}
		b, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		rela := s.Type == elf.SHT_RELA
		ent := map[[2]bool]int{{true, true}: 24, {true, false}: 16, {false, true}: 12, {false, false}: 8}[[2]bool{is64, rela}]
		for p := 0; p+ent <= len(b); p += ent {
			var r pieReloc
			if is64 {
				info := f.ByteOrder.Uint64(b[p+8:])
				r.off, r.typ = f.ByteOrder.Uint64(b[p:]), uint32(info)
				if rela {
					r.addend = f.ByteOrder.Uint64(b[p+16:])
				}
			} else {
				info := f.ByteOrder.Uint32(b[p+4:])
				r.off, r.typ = uint64(f.ByteOrder.Uint32(b[p:])), info&0xff
				if rela {
					r.addend = uint64(f.ByteOrder.Uint32(b[p+8:]))
				}
			}
			if !rela {
				w, ok := wordAt(f, data, r.off)
				if !ok {
					t.Fatalf("REL relocation at %#x: no file bytes", r.off)
				}
				r.addend = w
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// wordAt reads the pointer-sized word at address addr of f from data.
func wordAt(f *elf.File, data []byte, addr uint64) (uint64, bool) {
	ps := uint64(4)
	if f.Class == elf.ELFCLASS64 {
		ps = 8
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr+ps > p.Vaddr+p.Filesz {
			continue
		}
		o := p.Off + addr - p.Vaddr
		if ps == 8 {
			return f.ByteOrder.Uint64(data[o:]), true
		}
		return uint64(f.ByteOrder.Uint32(data[o:])), true
	}
	return 0, false
}

// checkPIE checks a replace-mode PIE (out) against its input (in): the
// textStart relocation moved to the new pcHeader with the text start as
// its value, no relocation or RELATIVE target left in the old table's
// bytes, every relocation in a writable segment, valid segments, RELRO
// over what it covered before but the table, the old table's bytes gone
// from the file, and objscan's reading. It returns the text start.
func checkPIE(t *testing.T, in, out []byte) uint64 {
	t.Helper()
	ie, err := elf.NewFile(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	oe, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := objscan.NewFile(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	f, err := objscan.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	oldS, newS := tableAt{orig.PclntabAddr, uint64(len(orig.Pclntab()))}, tableAt{f.PclntabAddr, uint64(len(f.Pclntab()))}
	syms, err := ie.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var text uint64
	for _, s := range syms {
		if s.Name == "runtime.text" {
			text = s.Value
		}
	}
	if text == 0 {
		t.Fatal("no runtime.text symbol")
	}
	ps := uint64(4)
	if ie.Class == elf.ELFCLASS64 {
		ps = 8
	}
	oldTS, newTS := oldS.Addr+8+2*ps, newS.Addr+8+2*ps
	at := func(rs []pieReloc, addr uint64) []pieReloc {
		var got []pieReloc
		for _, r := range rs {
			if r.off == addr {
				got = append(got, r)
			}
		}
		return got
	}
	irs, ors := pieRelocs(t, ie, in), pieRelocs(t, oe, out)
	want := at(irs, oldTS)
	if len(want) != 1 || want[0].addend != text {
		t.Fatalf("input: relocations of pcHeader.textStart at %#x: %+v, want one to the text start %#x", oldTS, want, text)
	}
	if got := at(ors, newTS); len(got) != 1 || got[0].typ != want[0].typ || got[0].addend != text {
		t.Errorf("output: relocations of the new pcHeader.textStart at %#x: %+v, want one of type %d to %#x", newTS, got, want[0].typ, text)
	}
	if len(ors) != len(irs) {
		t.Errorf("%d relocations, had %d", len(ors), len(irs))
	}
	oldEnd := oldS.Addr + oldS.Size
	for _, r := range ors {
		if r.off >= oldS.Addr && r.off < oldEnd {
			t.Errorf("relocation at %#x lies in the old table's bytes (%#x..%#x)", r.off, oldS.Addr, oldEnd)
		}
		if r.addend > oldS.Addr && r.addend < oldEnd {
			t.Errorf("relocation at %#x stores %#x, in the old table's bytes", r.off, r.addend)
		}
		if p := loadOf(oe, r.off); p == nil || p.Flags&elf.PF_W == 0 {
			t.Errorf("relocation at %#x is not in a writable PT_LOAD (%v)", r.off, p)
		}
	}
	checkSegments(t, ie, oe, oldS, newS)
	// The old table's bytes left the file: it grew by less than the
	// table did, plus a page of alignment and, where they moved, the
	// program header table and one more section header.
	headers := int64(len(oe.Progs))*56 + 64
	if grow, table := int64(len(out)-len(in)), int64(newS.Size)-int64(oldS.Size); grow > table+int64(loadOf(oe, newS.Addr).Align)+headers {
		t.Errorf("the file grew by %d bytes, the table by %d", grow, table)
	}
	if f.Magic != objscan.LinearMagic || f.PclntabAddr != newS.Addr || f.TextStart != text {
		t.Errorf("objscan: magic %#x, pclntab at %#x, text %#x; want %#x, %#x, %#x", f.Magic, f.PclntabAddr, f.TextStart, objscan.LinearMagic, newS.Addr, text)
	}
	return text
}

// tableAt is where a pclntab is, as objscan finds it.
type tableAt struct{ Addr, Size uint64 }

// loadOf returns the PT_LOAD of f whose memory holds addr, or nil.
func loadOf(f *elf.File, addr uint64) *elf.Prog {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			return p
		}
	}
	return nil
}

// checkSegments checks the output's segments: PT_LOADs congruent modulo
// their alignment and apart in memory pages, none mapping file bytes at
// the old table's addresses; one PT_GNU_RELRO, whose pages writable
// PT_LOADs map, covering every section it covered in the input but the
// table (oldS, now newS), and not the new table, which is in a writable
// PT_LOAD's file bytes.
func checkSegments(t *testing.T, ie, oe *elf.File, oldS, newS tableAt) {
	t.Helper()
	var loads []*elf.Prog
	var relro []*elf.Prog
	for _, p := range oe.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			if p.Align > 1 && p.Off%p.Align != p.Vaddr%p.Align || p.Filesz > p.Memsz {
				t.Errorf("PT_LOAD at %#x: offset %#x, align %#x, filesz %#x, memsz %#x", p.Vaddr, p.Off, p.Align, p.Filesz, p.Memsz)
			}
			for _, q := range loads {
				a := max(p.Align, q.Align, 1)
				if p.Vaddr&^(a-1) < alignUp(q.Vaddr+q.Memsz, a) && q.Vaddr&^(a-1) < alignUp(p.Vaddr+p.Memsz, a) {
					t.Errorf("PT_LOADs at %#x and %#x share memory pages", p.Vaddr, q.Vaddr)
				}
				if q.Vaddr > p.Vaddr {
					t.Errorf("PT_LOAD at %#x follows the one at %#x: not in address order", p.Vaddr, q.Vaddr)
				}
			}
			if p.Vaddr < oldS.Addr+oldS.Size && oldS.Addr < p.Vaddr+p.Filesz {
				t.Errorf("PT_LOAD at %#x maps file bytes at the old table's addresses (%#x+%#x)", p.Vaddr, oldS.Addr, oldS.Size)
			}
			loads = append(loads, p)
		case elf.PT_GNU_RELRO:
			relro = append(relro, p)
		}
	}
	if len(relro) != 1 {
		t.Fatalf("%d PT_GNU_RELRO segments", len(relro))
	}
	r := relro[0]
	for a := r.Vaddr; a < r.Vaddr+r.Memsz; {
		var l *elf.Prog
		for _, p := range loads {
			pg := max(p.Align, 1)
			if a >= p.Vaddr&^(pg-1) && a < alignUp(p.Vaddr+p.Memsz, pg) {
				l = p
			}
		}
		if l == nil || l.Flags&elf.PF_W == 0 {
			t.Errorf("PT_GNU_RELRO %#x+%#x: %#x is not in a writable PT_LOAD's pages (%v)", r.Vaddr, r.Memsz, a, l)
			break
		}
		a = alignUp(l.Vaddr+l.Memsz, max(l.Align, 1))
	}
	var ir *elf.Prog
	for _, p := range ie.Progs {
		if p.Type == elf.PT_GNU_RELRO {
			ir = p
		}
	}
	for _, s := range ie.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || s.Addr < ir.Vaddr || s.Addr+s.Size > ir.Vaddr+ir.Memsz || s.Addr == oldS.Addr {
			continue
		}
		if s.Addr < r.Vaddr || s.Addr+s.Size > r.Vaddr+r.Memsz {
			t.Errorf("section %s (%#x+%#x) is no longer in PT_GNU_RELRO (%#x+%#x)", s.Name, s.Addr, s.Size, r.Vaddr, r.Memsz)
		}
	}
	if r.Vaddr < newS.Addr+newS.Size && newS.Addr < r.Vaddr+r.Memsz {
		t.Errorf("PT_GNU_RELRO %#x+%#x overlaps the new table, in a segment of its own", r.Vaddr, r.Memsz)
	}
	if l := loadOf(oe, newS.Addr); l == nil || l.Flags&elf.PF_W == 0 || newS.Addr+newS.Size > l.Vaddr+l.Filesz {
		t.Errorf("the new table (%#x+%#x) is not in a writable PT_LOAD's file bytes (%v)", newS.Addr, newS.Size, l)
	}
}

// textStartRE matches what the Go 1.18+ runtime prints when it refuses a
// pcHeader: the relocated textStart word and moduledata.text.
var textStartRE = regexp.MustCompile(`magic= (0x[0-9a-f]+) .*pcHeader\.textStart= (0x[0-9a-f]+) text= (0x[0-9a-f]+)`)

// checkLoads has the dynamic loader of the host load out, a PIE built for
// cfg with text start text, when it can run here: ld.so --verify accepts
// it, and run, the runtime (which the loader starts after relocating)
// refuses the linear magic and prints the new textStart word, which must
// equal moduledata.text, both moved by the same load bias.
func checkLoads(t *testing.T, cfg testbuild.Config, out string, text uint64) {
	t.Helper()
	if cfg.GOOS != runtime.GOOS || cfg.GOARCH != runtime.GOARCH {
		t.Logf("not loading %s/%s binaries here", cfg.GOOS, cfg.GOARCH)
		return
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	var run *exec.Cmd
	if interp == "" && f.Type == elf.ET_DYN {
		run = dlopener(t, out) // a shared library
	} else {
		if _, err := os.Stat(interp); err != nil {
			t.Logf("no dynamic loader %q here: %v", interp, err)
			return
		}
		if msg, err := exec.Command(interp, "--verify", out).CombinedOutput(); err != nil {
			t.Errorf("%s --verify %s: %v\n%s", interp, out, err, msg)
		}
		run = exec.Command(out)
	}
	msg, err := run.CombinedOutput()
	m := textStartRE.FindSubmatch(msg)
	if err == nil || m == nil {
		t.Fatalf("running the rewritten binary (%v): %v, want the runtime to refuse its pcHeader:\n%.600s", run.Args, err, msg)
	}
	if string(m[1]) != fmt.Sprintf("%#x", objscan.LinearMagic) || !bytes.Equal(m[2], m[3]) {
		t.Fatalf("the runtime read magic %s, pcHeader.textStart %s, text %s: want the linear magic and the text start", m[1], m[2], m[3])
	}
	var ts uint64
	fmt.Sscanf(string(m[2]), "0x%x", &ts)
	if ts == text || (ts-text)%4096 != 0 {
		t.Fatalf("pcHeader.textStart %#x at run time is not the text start %#x moved by a load bias", ts, text)
	}
	t.Logf("the loader relocated pcHeader.textStart to %s, = moduledata.text", m[2])
}

// dlopener returns a command that loads the shared library lib with
// dlopen(3) and waits for the Go runtime, which a c-shared library starts
// on a thread of its own, to initialize (or die), built with gcc here.
func dlopener(t *testing.T, lib string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "dl.c")
	prog := `#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	if (!dlopen(argv[1], RTLD_NOW)) { printf("dlopen: %s\\n", dlerror()); return 1; }
	sleep(5);
	return 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dl")
	if msg, err := exec.Command("gcc", "-o", bin, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, msg)
	}
	return exec.Command(bin, lib)
}
