package rewrite

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
)

// hostileCeiling is what a rewrite of n bytes may allocate: objscan's
// ceiling for reading it, the tables (a few times the pclntab, at most
// the file), the output and a verification.
func hostileCeiling(n int) uint64 { return 64*uint64(n) + 64<<20 }

// hostileTargets are the builds the hostile tests mutate: one of each
// container format.
var hostileTargets = []testbuild.Config{
	{Archive: "features", GOOS: "linux", GOARCH: "amd64"},
	{Archive: "features", GOOS: "darwin", GOARCH: "arm64"},
	{Archive: "features", GOOS: "windows", GOARCH: "amd64"},
}

// rewriteBounded runs both modes on data, with verification, and fails
// the test if either panics or allocates more than hostileCeiling. It
// returns the two errors.
func rewriteBounded(t *testing.T, what string, data []byte) (errs [2]error) {
	t.Helper()
	for i, c := range rewriteCosts(t, what, data) {
		errs[i] = c.err
	}
	return errs
}

// rewriteCost is what rewriteCosts measured of one mode.
type rewriteCost struct {
	alloc, out uint64 // bytes allocated and written
	err        error
}

// rewriteCosts is rewriteBounded, returning what each mode allocated and
// wrote too.
func rewriteCosts(t *testing.T, what string, data []byte) (costs [2]rewriteCost) {
	t.Helper()
	for i, mode := range []Mode{Append, Replace} {
		var out []byte
		var err error
		alloc := allocs.Bytes(func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
					t.Errorf("%s, %s mode: panic: %v", what, mode, p)
				}
			}()
			out, _, err = Rewrite(data, Options{Mode: mode, Verify: true, Workers: 1})
		})
		if limit := hostileCeiling(len(data)); alloc > limit {
			t.Errorf("%s, %s mode: rewriting %d bytes allocated %d bytes (output %d bytes), more than the ceiling %d", what, mode, len(data), alloc, len(out), limit)
		}
		if err == nil && uint64(len(out)) > 4*uint64(len(data))+16<<20 {
			t.Errorf("%s, %s mode: a %d-byte input made a %d-byte output", what, mode, len(data), len(out))
		}
		costs[i] = rewriteCost{alloc, uint64(len(out)), err}
		if i == 0 && err != nil && !strings.HasPrefix(err.Error(), "rewrite: append mode:") {
			// Refused before the modes part: replace mode would be too.
			costs[1] = rewriteCost{err: err}
			break
		}
	}
	return costs
}

// TestTruncated rewrites real binaries cut short at many points (issue
// 26, item 14: they failed with a bare "ELF: EOF" or "Mach-O: EOF"): every
// one must fail, and a failure caused by reading past the end must wrap
// objscan.ErrTruncated and say where.
func TestTruncated(t *testing.T) {
	for _, cfg := range hostileTargets {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			n := len(data)
			cuts := []int{0, 1, 3, 4, 16, 63, 64, 100, 0x200, 0x1000, n / 8, n / 4, n / 2, 3 * n / 4, n - 4096, n - 1}
			for _, cut := range cuts {
				errs := rewriteBounded(t, fmt.Sprintf("cut at %d of %d", cut, n), data[:cut])
				for i, err := range errs {
					if err == nil {
						t.Errorf("cut at %d of %d: mode %d accepted it", cut, n, i)
						continue
					}
					eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
					if eof && !errors.Is(err, objscan.ErrTruncated) {
						t.Errorf("cut at %d of %d: %v: an end-of-file error that does not wrap objscan.ErrTruncated", cut, n, err)
					}
					if strings.HasSuffix(err.Error(), ": EOF") {
						t.Errorf("cut at %d of %d: %v: says EOF without where", cut, n, err)
					}
					if i == 0 {
						t.Logf("cut at %d: %v", cut, err)
					}
				}
			}
		})
	}
}

// pcHeaderAt returns the file offset of data's pcHeader.
func pcHeaderAt(t *testing.T, data []byte) (int, *objscan.File) {
	t.Helper()
	f, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, f.Pclntab()[:64])
	if at < 0 {
		t.Fatal("no pcHeader in the file")
	}
	return at, f
}

// TestNfuncZero rewrites real binaries whose pcHeader says they have no
// functions (issue 26, item 12: replace mode panicked in makeslice,
// objscan computed a negative functab size, and append mode reported
// "verify ok: 0 tables"): objscan must refuse them, saying why.
func TestNfuncZero(t *testing.T) {
	for _, cfg := range hostileTargets {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			at, f := pcHeaderAt(t, data)
			bad := bytes.Clone(data)
			for i := range f.PtrSize {
				bad[at+8+i] = 0
			}
			if _, err := objscan.NewFile(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "nfunc is 0") {
				t.Errorf("objscan: %v, want an error saying nfunc is 0", err)
			}
			for i, err := range rewriteBounded(t, "nfunc 0", bad) {
				if err == nil || !strings.Contains(err.Error(), "nfunc is 0") {
					t.Errorf("mode %d: %v, want an error saying nfunc is 0", i, err)
				}
			}
		})
	}
}

// TestPcHeaderCounts sets the pcHeader's counts of real binaries to
// hostile values: each rewrite must fail or write a file that verifies,
// never panic, and stay within the allocation ceiling.
func TestPcHeaderCounts(t *testing.T) {
	for _, cfg := range hostileTargets {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			at, f := pcHeaderAt(t, data)
			ps := f.PtrSize
			nfunc := uint64(len(f.Funcs))
			fields := []struct {
				name string
				off  int
				vals []uint64
			}{
				{"nfunc", 8, []uint64{nfunc + 1, 1 << 31, 1<<32 - 1, 1 << 63, 1<<64 - 1}},
				{"nfiles", 8 + ps, []uint64{uint64(f.Sizes.FileTab) + 1, 1<<32 - 1, 1<<64 - 1}},
			}
			if testenv.Full() {
				// Values a rewrite accepts: a whole rewrite and
				// verification each.
				fields = append(fields, struct {
					name string
					off  int
					vals []uint64
				}{"nfunc", 8, []uint64{1, nfunc - 1}}, struct {
					name string
					off  int
					vals []uint64
				}{"nfiles", 8 + ps, []uint64{0}})
			}
			for _, field := range fields {
				for _, v := range field.vals {
					bad := bytes.Clone(data)
					if ps == 4 {
						f.ByteOrder.PutUint32(bad[at+field.off:], uint32(v))
					} else {
						f.ByteOrder.PutUint64(bad[at+field.off:], v)
					}
					errs := rewriteBounded(t, fmt.Sprintf("%s %#x", field.name, v), bad)
					t.Logf("%s %#x: %v; %v", field.name, v, errs[0], errs[1])
				}
			}
		})
	}
}

// headerField is a field of a container header: where it is, its width in
// bytes and what it is.
type headerField struct {
	name  string
	off   int
	width int
	align bool // an alignment, not a count
	log2  bool // an alignment's exponent (Mach-O)
	long  bool // set only with PCTAB_LONG=1: a field the rewrite ignores, so each value costs a whole rewrite
}

// elfFields lists the counts and alignments of a 64-bit little-endian
// ELF file's header, program headers and section headers; with sizes set,
// also their offsets and sizes.
func elfFields(t *testing.T, data []byte, sizes bool) []headerField {
	e, err := parseELF(data)
	if err != nil {
		t.Fatal(err)
	}
	if !e.is64 {
		t.Fatal("elfFields reads 64-bit ELF")
	}
	fs := []headerField{{name: "e_phentsize", off: 54, width: 2}, {name: "e_phnum", off: 56, width: 2}, {name: "e_shentsize", off: 58, width: 2},
		{name: "e_shnum", off: 60, width: 2}, {name: "e_shstrndx", off: 62, width: 2}}
	if sizes {
		fs = append(fs, headerField{name: "e_phoff", off: 32, width: 8, long: true}, headerField{name: "e_shoff", off: 40, width: 8, long: true})
	}
	for i := range e.progs {
		at := int(e.phoff) + 56*i
		fs = append(fs, headerField{name: fmt.Sprintf("program header %d p_align", i), off: at + 48, width: 8, align: true})
		if sizes {
			fs = append(fs, headerField{name: fmt.Sprintf("program header %d p_offset", i), off: at + 8, width: 8, long: true},
				headerField{name: fmt.Sprintf("program header %d p_filesz", i), off: at + 32, width: 8, long: true},
				headerField{name: fmt.Sprintf("program header %d p_memsz", i), off: at + 40, width: 8, long: true})
		}
	}
	for i, s := range e.sects {
		at := int(e.shoff) + 64*i
		fs = append(fs, headerField{name: fmt.Sprintf("section %d (%s) sh_addralign", i, s.Name), off: at + 48, width: 8, align: true})
		if sizes {
			fs = append(fs, headerField{name: fmt.Sprintf("section %d (%s) sh_offset", i, s.Name), off: at + 24, width: 8, long: true},
				headerField{name: fmt.Sprintf("section %d (%s) sh_size", i, s.Name), off: at + 32, width: 8, long: true},
				headerField{name: fmt.Sprintf("section %d (%s) sh_entsize", i, s.Name), off: at + 56, width: 8, long: true})
		}
	}
	return fs
}

// machoFields lists the counts and alignments of a 64-bit little-endian
// Mach-O file's header and load commands; with sizes set, also their
// offsets and sizes.
func machoFields(t *testing.T, data []byte, sizes bool) []headerField {
	le := binary.LittleEndian
	fs := []headerField{{name: "ncmds", off: 16, width: 4}, {name: "sizeofcmds", off: 20, width: 4}}
	ncmds := int(le.Uint32(data[16:]))
	at := machoHeaderSize64
	for i := range ncmds {
		cmd, size := le.Uint32(data[at:]), int(le.Uint32(data[at+4:]))
		name := fmt.Sprintf("load command %d (%#x)", i, cmd)
		fs = append(fs, headerField{name: name + " cmdsize", off: at + 4, width: 4})
		switch cmd {
		case lcSegment64:
			seg := cstring(data[at+8 : at+24])
			nsects := int(le.Uint32(data[at+64:]))
			fs = append(fs, headerField{name: name + " " + seg + " nsects", off: at + 64, width: 4})
			if sizes {
				fs = append(fs, headerField{name: name + " " + seg + " vmsize", off: at + 32, width: 8, long: true},
					headerField{name: name + " " + seg + " fileoff", off: at + 40, width: 8, long: true},
					headerField{name: name + " " + seg + " filesize", off: at + 48, width: 8, long: true})
			}
			for j := range nsects {
				s := at + machoSegCmdSize64 + j*machoSectSize64
				sn := fmt.Sprintf("%s section %s,%s", name, seg, cstring(data[s:s+16]))
				fs = append(fs, headerField{name: sn + " align", off: s + 52, width: 4, align: true, log2: true},
					headerField{name: sn + " nreloc", off: s + 60, width: 4, long: true})
				if sizes {
					fs = append(fs, headerField{name: sn + " size", off: s + 40, width: 8, long: true},
						headerField{name: sn + " offset", off: s + 48, width: 4, long: true},
						headerField{name: sn + " reloff", off: s + 56, width: 4, long: true})
				}
			}
		case lcSymtab:
			fs = append(fs, headerField{name: name + " nsyms", off: at + 12, width: 4, long: true}, headerField{name: name + " strsize", off: at + 20, width: 4, long: true})
			if sizes {
				fs = append(fs, headerField{name: name + " symoff", off: at + 8, width: 4, long: true}, headerField{name: name + " stroff", off: at + 16, width: 4, long: true})
			}
		case lcDysymtab:
			for k := 8; k < 80; k += 4 {
				fs = append(fs, headerField{name: fmt.Sprintf("%s field at +%d", name, k), off: at + k, width: 4, long: true})
			}
		case lcCodeSignature, lcFunctionStarts, lcDataInCode, lcSegmentSplitInfo:
			fs = append(fs, headerField{name: name + " datasize", off: at + 12, width: 4, long: true})
			if sizes {
				fs = append(fs, headerField{name: name + " dataoff", off: at + 8, width: 4, long: true})
			}
		}
		at += size
	}
	return fs
}

// peFields lists the counts and alignments of a PE file's COFF header,
// optional header and section headers; with sizes set, also their offsets
// and sizes.
func peFields(t *testing.T, data []byte, sizes bool) []headerField {
	l, err := parsePELayout(data)
	if err != nil {
		t.Fatal(err)
	}
	coff := int(l.nsectAt) - 2
	opt := int(l.optAt)
	fs := []headerField{{name: "NumberOfSections", off: coff + 2, width: 2}, {name: "NumberOfSymbols", off: coff + 12, width: 4},
		{name: "SizeOfOptionalHeader", off: coff + 16, width: 2}, {name: "SectionAlignment", off: opt + 32, width: 4, align: true},
		{name: "FileAlignment", off: opt + 36, width: 4, align: true}, {name: "SizeOfImage", off: opt + 56, width: 4, long: true},
		{name: "SizeOfHeaders", off: opt + 60, width: 4}}
	if binary.LittleEndian.Uint16(data[opt:]) == 0x20b { // PE32+
		fs = append(fs, headerField{name: "NumberOfRvaAndSizes", off: opt + 108, width: 4})
	}
	if sizes {
		fs = append(fs, headerField{name: "PointerToSymbolTable", off: coff + 8, width: 4, long: true})
	}
	for i := range int(l.nsect) {
		at := int(l.sectAt) + 40*i
		name := fmt.Sprintf("section %d (%s)", i, cstring(data[at:at+8]))
		fs = append(fs, headerField{name: name + " NumberOfRelocations", off: at + 32, width: 2, long: true},
			headerField{name: name + " NumberOfLinenumbers", off: at + 34, width: 2, long: true})
		if sizes {
			fs = append(fs, headerField{name: name + " VirtualSize", off: at + 8, width: 4, long: true},
				headerField{name: name + " VirtualAddress", off: at + 12, width: 4, long: true},
				headerField{name: name + " SizeOfRawData", off: at + 16, width: 4, long: true},
				headerField{name: name + " PointerToRawData", off: at + 20, width: 4, long: true})
		}
	}
	return fs
}

// hostileValues are the values a field is set to.
func hostileValues(fd headerField) []uint64 {
	width, align := fd.width, fd.align
	switch {
	case fd.log2:
		return []uint64{22, 0xffffffff} // 2^22 is 4 MiB, above the files' sizes
	case width == 2:
		return []uint64{0xffff}
	case width == 4 && align:
		return []uint64{3, 1 << 30, 0xffffffff}
	case width == 4:
		return []uint64{0xffffffff}
	case align:
		return []uint64{3, 0xffffffff, 1 << 40}
	case fd.long:
		// Offsets and sizes (PCTAB_LONG=1): one value past any file.
		return []uint64{1 << 40}
	}
	return []uint64{1 << 40, 1<<64 - 1}
}

// TestHostileHeaders sets every count and alignment in the container
// headers of real ELF, Mach-O and PE builds to hostile values (issue 26,
// item 13: a section alignment of 0xffffffff made a 1.4 MB input write a
// 4.3 GB output, 2^40 ran out of memory, and a PE FileAlignment of 2^30
// took 11.7 GB): every rewrite must fail or write a file that verifies,
// never panic, and stay within the allocation ceiling and a small output.
// PCTAB_LONG=1 also sets every offset and size.
func TestHostileHeaders(t *testing.T) {
	long := testenv.Full()
	for _, cfg := range hostileTargets {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			var fields []headerField
			switch cfg.GOOS {
			case "darwin":
				fields = machoFields(t, data, long)
			case "windows":
				fields = peFields(t, data, long)
			default:
				fields = elfFields(t, data, long)
			}
			le := binary.LittleEndian
			runs, refused := 0, 0
			for _, fd := range fields {
				if fd.long && !long {
					continue
				}
				for _, v := range hostileValues(fd) {
					bad := bytes.Clone(data)
					switch fd.width {
					case 2:
						le.PutUint16(bad[fd.off:], uint16(v))
					case 4:
						le.PutUint32(bad[fd.off:], uint32(v))
					default:
						le.PutUint64(bad[fd.off:], v)
					}
					if bytes.Equal(bad, data) {
						continue
					}
					errs := rewriteBounded(t, fmt.Sprintf("%s = %#x", fd.name, v), bad)
					runs += 2
					if errs[0] == nil || errs[1] == nil {
						t.Logf("%s = %#x: accepted by a mode (%v; %v)", fd.name, v, errs[0], errs[1])
					}
					for _, err := range errs {
						if err != nil {
							refused++
						}
					}
				}
			}
			t.Logf("%d fields, %d rewrites, %d refused", len(fields), runs, refused)
		})
	}
}

// sharedNames is a Go 1.15 build (linux/amd64) cut to its first keep
// functions, whose pclntab bytes that freed hold a file table of nfiles
// entries and then a runLen-byte string, for names to point into. Its
// files name the string's last byte.
type sharedNames struct {
	data []byte                // the edited build
	at   int                   // the pclntab's file offset
	f    *objscan.File         // the build as it was
	off  func(addr uint64) int // the file offset of an address
	tab  uint64                // the file table's offset in the pclntab
	run  uint64                // the string's
}

// newSharedNames cuts a Go 1.15 build to keep functions and lays out the
// file table and string after what they use.
func newSharedNames(t *testing.T, keep, nfiles, runLen int) *sharedNames {
	data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.15.15"}))
	if err != nil {
		t.Fatal(err)
	}
	at, f := pcHeaderAt(t, data)
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	s := &sharedNames{data: data, at: at, f: f, off: fileOffset(t, ef)}
	s.tab = alignUp(usedByFuncs(f, keep), 8)
	s.run = s.tab + 4*uint64(nfiles)
	if s.run+uint64(runLen) >= uint64(len(f.Pclntab())) {
		t.Fatalf("%d files and a %d-byte string do not fit after the first %d functions (%#x of %#x bytes)", nfiles, runLen, keep, s.tab, len(f.Pclntab()))
	}
	o, p := f.ByteOrder, data[at:]
	// nfunc, and the file table's offset after the shorter ftab; the end
	// entry is the next function's entry, there already.
	o.PutUint64(p[8:], uint64(keep))
	o.PutUint32(p[8+8+(2*keep+1)*8:], uint32(s.tab))
	o.PutUint32(p[s.tab:], uint32(nfiles))
	for i := 1; i < nfiles; i++ {
		o.PutUint32(p[s.tab+4*uint64(i):], uint32(s.run)+uint32(runLen)-1)
	}
	copy(p[s.run:], strings.Repeat("a", runLen))
	p[s.run+uint64(runLen)] = 0
	// moduledata.filetab (words 6 to 8 of Go 1.5-1.15's) is the new table.
	md, _, ok := f.Moduledata()
	if !ok {
		t.Fatal("no moduledata")
	}
	for i, v := range []uint64{f.PclntabAddr + s.tab, uint64(nfiles), uint64(nfiles)} {
		o.PutUint64(data[s.off(md)+8*(6+i):], v)
	}
	return s
}

// usedByFuncs returns the end of what the first keep functions of a Go
// 1.2-layout pclntab use: the ftab, their records, tables and names.
func usedByFuncs(f *objscan.File, keep int) uint64 {
	ps := uint64(f.PtrSize)
	used := 8 + ps + (2*uint64(keep)+1)*ps + 4
	for i := range keep {
		fn := &f.Funcs[i]
		rec := alignUp(uint64(fn.Offset)+ps+32+4*uint64(len(fn.PCData)), ps) + ps*uint64(len(fn.FuncData))
		used = max(used, rec, uint64(fn.NameOff)+uint64(len(fn.Name))+1)
		for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
			if off := fn.TableOffset(k); off != 0 {
				used = max(used, uint64(off)+uint64(len(f.Table(off).Data)))
			}
		}
	}
	return used
}

// name returns the offset in the pclntab of the k'th name pointing into
// the string: the string itself, or with suffixes its k'th suffix.
func (s *sharedNames) name(k int, suffixes bool) uint32 {
	if suffixes {
		return uint32(s.run) + uint32(k)
	}
	return uint32(s.run)
}

// TestSharedNames rewrites Go 1.15 builds whose files, functions or inline
// tree entries all name one long string, or its suffixes. Replace mode
// rebuilds a Go 1.2 layout's names into a funcnametab and a filetab, and
// wrote each name whole: 1,999 files sharing a 100,000-byte name made a
// 2.1 MB input a 202 MB output and allocated 2.6 GB, reading them one by
// one for each pass. Both modes must stay within the ceilings, and replace
// mode must write a file that verifies.
func TestSharedNames(t *testing.T) {
	const keep, nfiles, runLen = 1000, 2000, 100000
	s := newSharedNames(t, keep, nfiles, runLen)
	ps, o := uint64(s.f.PtrSize), s.f.ByteOrder
	cases := []struct {
		name string
		edit func(b []byte, suffixes bool)
	}{
		{"files", func(b []byte, suffixes bool) {
			for i := 1; i < nfiles; i++ {
				o.PutUint32(b[s.at+int(s.tab)+4*i:], s.name(i, suffixes))
			}
		}},
		{"functions", func(b []byte, suffixes bool) {
			for i := range keep {
				o.PutUint32(b[s.at+int(uint64(s.f.Funcs[i].Offset)+ps):], s.name(i, suffixes))
			}
		}},
		{"inline entries", func(b []byte, suffixes bool) {
			k := 0
			for i := range keep {
				fn := &s.f.Funcs[i]
				addr, size, nameAt, ok, err := s.f.InlTreeAt(fn)
				if err != nil || !ok {
					continue
				}
				for j := range fn.InlTree {
					o.PutUint32(b[s.off(addr+uint64(j*size+nameAt)):], s.name(k%runLen, suffixes))
					k++
				}
			}
		}},
	}
	for _, tc := range cases {
		for _, suffixes := range []bool{false, true} {
			what := tc.name + " naming one long string"
			if suffixes {
				what = tc.name + " naming its suffixes"
			}
			bad := bytes.Clone(s.data)
			tc.edit(bad, suffixes)
			costs := rewriteCosts(t, what, bad)
			if costs[1].err != nil {
				t.Errorf("%s: replace mode: %v", what, costs[1].err)
			}
			for i, c := range costs {
				t.Logf("%s, %s mode: %d bytes: allocated %d bytes, wrote %d bytes (%v)", what, []Mode{Append, Replace}[i], len(bad), c.alloc, c.out, c.err)
			}
		}
	}
}
