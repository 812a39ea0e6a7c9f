package objscan

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// varintTable encodes runs of (value, units) in Go's varint format.
func varintTable(runs ...[2]int64) []byte {
	var b []byte
	prev := int64(-1)
	for _, r := range runs {
		d := r[0] - prev
		b = binary.AppendUvarint(b, uint64(d<<1)^uint64(d>>63))
		b = binary.AppendUvarint(b, uint64(r[1]))
		prev = r[0]
	}
	return append(b, 0)
}

// sharedInlTreeELF builds a Go 1.2-layout ELF whose nfunc functions all
// name one inline tree of entries entries through one InlTreeIndex table
// (the shape of the review's 187 KB file that allocated 269 MB).
func sharedInlTreeELF(nfunc, entries int) []byte {
	l := synthLayout{Go12Magic, binary.LittleEndian, 8, 1}
	inl := varintTable([2]int64{int64(entries - 1), 4})
	sp := varintTable([2]int64{0, 4})
	file := varintTable([2]int64{1, 4})
	ln := varintTable([2]int64{10, 4})
	pc := varintTable([2]int64{-1, 4})
	funcs := make([]synthFunc, nfunc)
	for i := range funcs {
		funcs[i] = synthFunc{name: "main.f", off: uint64(4 * i), end: uint64(4 * (i + 1)),
			tables: [][]byte{sp, file, ln, pc, pc, inl}, fdata: []uint64{0, 0, 0, 0, 0}}
	}
	pcln := buildSynth(l, funcs)
	// The tree: zeroed entries after the pclntab, inside its section.
	treeAddr := uint64(0x800000 + len(pcln))
	for i := range funcs {
		funcs[i].fdata[4] = treeAddr
	}
	pcln = buildSynth(l, funcs)
	pcln = append(pcln, make([]byte, entries*inlEntrySizeOld)...)
	return synthELFText(pcln, false, uint64(4*nfunc))
}

// sharedNamePclntab returns a Go 1.20-layout pclntab whose nfunc functab
// entries all point at one _func record, whose name is nameLen bytes long:
// read one by one, the names cost nfunc times nameLen.
func sharedNamePclntab(nfunc, nameLen int) []byte {
	o := binary.LittleEndian
	out := o.AppendUint32(nil, Go120Magic)
	out = append(out, 0, 0, 1, 8)
	funcnameOff := 8 + 8*8
	cuOff := (funcnameOff + nameLen + 1 + 7) &^ 7
	// No compilation units, files or tables: the functab follows the names.
	for _, v := range []int{nfunc, 0, 0, funcnameOff, cuOff, cuOff, cuOff, cuOff} {
		out = o.AppendUint64(out, uint64(v))
	}
	out = append(out, strings.Repeat("a", nameLen)...)
	out = append(out, make([]byte, cuOff-len(out))...)
	recOff := (2*nfunc + 1) * 4
	for range nfunc {
		out = o.AppendUint32(o.AppendUint32(out, 0), uint32(recOff))
	}
	out = o.AppendUint32(out, 0)
	rec := make([]byte, 44) // entryOff 0, nameOff 0, no tables, pcdata or funcdata
	o.PutUint32(rec[36:], ^uint32(0))
	return append(out, rec...)
}

// inlStringsELF returns a Go 1.2-layout ELF of one function whose inline
// tree of entries entries names, at successive offsets, the suffixes of
// one runLen-byte string (or, with files, whose every entry's file is that
// string): read one by one, the strings cost entries times runLen.
func inlStringsELF(entries, runLen int, files bool) []byte {
	l := synthLayout{Go12Magic, binary.LittleEndian, 8, 1}
	pc := varintTable([2]int64{-1, 4})
	funcs := []synthFunc{{name: "main.f", end: 4, fdata: []uint64{0, 0, 0, 0, 0},
		tables: [][]byte{varintTable([2]int64{0, 4}), varintTable([2]int64{1, 4}), varintTable([2]int64{10, 4}), pc, pc, varintTable([2]int64{int64(entries - 1), 4})}}}
	funcs[0].fdata[4] = uint64(0x800000 + len(buildSynth(l, funcs)))
	pcln := buildSynth(l, funcs)
	treeAt := len(pcln)
	pcln = append(pcln, make([]byte, entries*inlEntrySizeOld)...)
	runAt := len(pcln)
	pcln = append(append(pcln, strings.Repeat("a", runLen)...), 0)
	for j := range entries {
		e := pcln[treeAt+j*inlEntrySizeOld:]
		binary.LittleEndian.PutUint32(e[4:], 1) // file 1
		if !files {
			binary.LittleEndian.PutUint32(e[12:], uint32(runAt+j))
		}
	}
	if files {
		// File 1's offset, the file table's second word.
		filetab := bytes.LastIndex(pcln[:treeAt], []byte("a.go\x00")) - 12
		binary.LittleEndian.PutUint32(pcln[filetab+4:], uint32(runAt))
	}
	return synthELFText(pcln, false, 4)
}

// badInlFilesELF returns a Go 1.2-layout ELF of one function with a
// nameLen-byte name whose inline tree's entries entries all name a file
// that does not exist: formatting the name into each entry's dropped
// error cost entries times nameLen.
func badInlFilesELF(entries, nameLen int) []byte {
	l := synthLayout{Go12Magic, binary.LittleEndian, 8, 1}
	pc := varintTable([2]int64{-1, 4})
	funcs := []synthFunc{{name: strings.Repeat("a", nameLen), end: 4, fdata: []uint64{0, 0, 0, 0, 0},
		tables: [][]byte{varintTable([2]int64{0, 4}), varintTable([2]int64{1, 4}), varintTable([2]int64{10, 4}), pc, pc, varintTable([2]int64{int64(entries - 1), 4})}}}
	funcs[0].fdata[4] = uint64(0x800000 + len(buildSynth(l, funcs)))
	pcln := buildSynth(l, funcs)
	treeAt := len(pcln)
	pcln = append(pcln, make([]byte, entries*inlEntrySizeOld)...)
	for j := range entries {
		binary.LittleEndian.PutUint32(pcln[treeAt+j*inlEntrySizeOld+4:], 99) // file 99 of 3
	}
	return synthELFText(pcln, false, 4)
}

// TestHostileInput opens small hostile files and checks that each gives an
// error or a result, never a panic, allocating at most a small multiple of
// its size.
func TestHostileInput(t *testing.T) {
	l := synthLayout{Go120Magic, binary.LittleEndian, 8, 1}
	// A pcsp table covering 2^32-16 PC units in 7 bytes, in a 128-byte
	// function (the review's 664-byte ELF that made pctab-stats use 928 MB).
	huge := synthFuncs(l.magic)
	huge[0].tables = [][]byte{varintTable([2]int64{0, 1<<32 - 16}), synthPCFile, synthPCLn}
	tests := []struct {
		name    string
		data    []byte
		wantErr string // "" means the file must open
	}{
		{"shared inline tree", sharedInlTreeELF(2000, 8000), ""},
		// 8,000 functions sharing a 64,000-byte name: 525 MB and 1.7 s
		// before names were read through strtab.
		{"functions sharing a long name", synthELF(sharedNamePclntab(8000, 64000), false), ""},
		// 4,000 inline entries naming the suffixes of a 100,000-byte
		// string, or sharing it as their file: 408 MB and 427 MB.
		{"inline names inside a long name", inlStringsELF(4000, 100000, false), ""},
		{"inline files sharing a long name", inlStringsELF(4000, 100000, true), ""},
		// 4,000 inline entries of a function with a 100,000-byte name, each
		// naming a file that does not exist: 1.2 GB before the entries'
		// errors were formatted only when printed.
		{"inline entries' missing files, long function name", badInlFilesELF(4000, 100000), ""},
		{"table past its function", synthELF(buildSynth(l, huge), false), "past the function's extent"},
		// Issue 26, item 12: nfunc 0 gave a negative functab size.
		{"nfunc 0", setHeaderWord(synthELF(buildSynth(l, synthFuncs(l.magic)), false), l.magic, 8, 0), "nfunc is 0"},
		{"nfunc 0, Go 1.2 layout", setHeaderWord(synthELF(buildSynth(synthLayout{Go12Magic, binary.LittleEndian, 8, 1}, synthFuncs(Go12Magic)), false), Go12Magic, 8, 0), "nfunc is 0"},
		{"nfiles past the file table", setHeaderWord(synthELF(buildSynth(l, synthFuncs(l.magic)), false), l.magic, 16, 1<<40), "files cannot fit"},
		// A stripped file's 1 MB of data full of places a scan tries, a
		// magic or a plausible pcHeader every 8 bytes: 132 MB and 155 MB
		// before the scan kept only its first errors and parsed at most
		// maxCandidates whole; 11.5 MB and 1.1 MB after.
		{"data full of pcHeader magics", headersELF(1<<20, 8, func(b []byte) { binary.LittleEndian.PutUint32(b, Go120Magic) }), "none of the 131065 places"},
		{"data full of pcHeaders", headersELF(1<<20, 8, func(b []byte) { copy(b, buildSynth(l, synthFuncs(l.magic))[:64]) }), "none of the first 16 places"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var f *File
			alloc := allocs.Least(3, func() { f, err = NewFile(bytes.NewReader(tc.data)) })
			if limit := 64*uint64(len(tc.data)) + 8<<20; alloc > limit {
				t.Errorf("opening %d bytes allocated %d bytes, more than the ceiling %d", len(tc.data), alloc, limit)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("NewFile: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("NewFile error = %v, want one containing %q", err, tc.wantErr)
			}
			if f != nil {
				t.Logf("%d bytes, %d functions, allocated %d bytes", len(tc.data), len(f.Funcs), alloc)
			} else {
				t.Logf("%d bytes: %v (allocated %d bytes)", len(tc.data), err, alloc)
			}
		})
	}
}

// headersELF returns an ELF file with no pclntab section whose data
// section of size bytes holds, every stride bytes, what put writes.
func headersELF(size, stride int, put func([]byte)) []byte {
	data := make([]byte, size)
	for at := 0; at+64 <= size; at += stride {
		put(data[at:])
	}
	return bytes.Replace(synthELF(data, false), []byte("\x00.gopclntab\x00"), []byte("\x00.rodata.go\x00"), 1)
}

// TestSharedStrings checks the strings of files whose functions and
// inline entries share them, which strtab reads from one copy of their
// table once they have scanned more than twice its size.
func TestSharedStrings(t *testing.T) {
	f, err := NewFile(bytes.NewReader(synthELF(sharedNamePclntab(100, 1000), false)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Funcs {
		if got := f.Funcs[i].Name; got != strings.Repeat("a", 1000) || f.Funcs[i].NameOff != 0 {
			t.Fatalf("function %d: name of %d bytes %.10q... at %#x, want 1000 a's at 0", i, len(got), got, f.Funcs[i].NameOff)
		}
	}
	for _, files := range []bool{false, true} {
		f, err := NewFile(bytes.NewReader(inlStringsELF(100, 200, files)))
		if err != nil {
			t.Fatal(err)
		}
		tree := f.Funcs[0].InlTree
		if len(tree) != 100 {
			t.Fatalf("files %v: %d inline entries, want 100", files, len(tree))
		}
		for j, c := range tree {
			if files && c.File != strings.Repeat("a", 200) || !files && (c.File != "a.go" || c.Name != strings.Repeat("a", 200-j) || c.NameOff != tree[0].NameOff+uint32(j)) {
				t.Fatalf("files %v: entry %d: name %.10q... (%d bytes, at %#x), file %.10q... (%d bytes)", files, j, c.Name, len(c.Name), c.NameOff, c.File, len(c.File))
			}
		}
	}
}

// sharedFilesELF returns a Go 1.2-layout ELF whose file table has nfiles
// entries naming one runLen-byte string, or, with suffixes set, its
// suffixes at successive offsets: read one by one (FileName), the names
// cost nfiles times runLen.
func sharedFilesELF(nfiles, runLen int, suffixes bool) []byte {
	l := synthLayout{Go12Magic, binary.LittleEndian, 8, 1}
	funcs := synthFuncs(Go12Magic)
	pcln := buildSynth(l, funcs)
	pcln = append(pcln, make([]byte, -len(pcln)&3)...)
	tabAt := len(pcln)
	runAt := tabAt + 4*nfiles
	pcln = binary.LittleEndian.AppendUint32(pcln, uint32(nfiles))
	for i := 1; i < nfiles; i++ {
		off := runAt
		if suffixes {
			off += i
		}
		pcln = binary.LittleEndian.AppendUint32(pcln, uint32(off))
	}
	pcln = append(append(pcln, strings.Repeat("a", runLen)...), 0)
	binary.LittleEndian.PutUint32(pcln[8+8+(2*len(funcs)+1)*8:], uint32(tabAt))
	return synthELF(pcln, false)
}

// TestFileNames reads every name of file tables whose entries share one
// long string, or name its suffixes, through FileNames: the names and
// their offsets must be right, and reading them must cost about the
// table, not the string's size per entry (FileName allocates 256 MB).
func TestFileNames(t *testing.T) {
	const nfiles, runLen = 4000, 64000
	for _, suffixes := range []bool{false, true} {
		data := sharedFilesELF(nfiles, runLen, suffixes)
		f, err := NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		runAt := uint32(len(f.Pclntab()) - runLen - 1)
		fn := &f.Funcs[0]
		var names []string
		var offs []uint32
		alloc := allocs.Least(3, func() {
			names, offs = names[:0], offs[:0]
			r := f.FileNames()
			for i := 1; i < nfiles; i++ {
				name, off, err := r.Name(fn, int32(i))
				if err != nil {
					t.Fatalf("suffixes %v: file %d: %v", suffixes, i, err)
				}
				names, offs = append(names, name), append(offs, off)
			}
		})
		for j := range names {
			want := runAt
			if suffixes {
				want += uint32(j + 1)
			}
			if offs[j] != want || len(names[j]) != runLen-int(want-runAt) || strings.Trim(names[j], "a") != "" {
				t.Fatalf("suffixes %v: file %d at %#x, %d bytes; want %#x, %d a's", suffixes, j+1, offs[j], len(names[j]), want, runLen-int(want-runAt))
			}
		}
		if limit := 16*uint64(len(data)) + 1<<20; alloc > limit {
			t.Errorf("suffixes %v: reading %d names of a %d-byte file allocated %d bytes, more than %d", suffixes, nfiles-1, len(data), alloc, limit)
		}
		t.Logf("suffixes %v: %d bytes, %d names read, %d bytes allocated", suffixes, len(data), nfiles-1, alloc)
	}
}

// TestInlTreeShared checks that functions naming the same tree share it.
func TestInlTreeShared(t *testing.T) {
	f, err := NewFile(bytes.NewReader(sharedInlTreeELF(10, 100)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Funcs {
		if got := len(f.Funcs[i].InlTree); got != 100 {
			t.Fatalf("function %d: %d inline entries, want 100", i, got)
		}
		if &f.Funcs[i].InlTree[0] != &f.Funcs[0].InlTree[0] {
			t.Fatalf("function %d has its own copy of the shared tree", i)
		}
	}
}

// TestInlineTrees decodes the trees of functions that share one through
// InlineTrees: one slice for all, equal to the tree objscan decoded, and
// to what InlineTree decodes for each.
func TestInlineTrees(t *testing.T) {
	f, err := NewFile(bytes.NewReader(sharedInlTreeELF(10, 100)))
	if err != nil {
		t.Fatal(err)
	}
	r := f.InlineTrees()
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		tree, err := r.Tree(fn, len(fn.InlTree))
		if err != nil {
			t.Fatal(err)
		}
		first, _ := r.Tree(&f.Funcs[0], len(fn.InlTree))
		if !slices.Equal(tree, fn.InlTree) || &tree[0] != &first[0] {
			t.Fatalf("function %d: a tree of %d entries, not the one shared slice equal to the %d objscan decoded", i, len(tree), len(fn.InlTree))
		}
		if one, err := f.InlineTree(fn, len(fn.InlTree)); err != nil || !slices.Equal(one, tree) {
			t.Fatalf("function %d: InlineTree gives %d entries (%v), InlineTrees %d", i, len(one), err, len(tree))
		}
	}
}

// setHeaderWord sets the 8-byte little-endian word at offset off of the
// pcHeader (found by its magic) in an ELF file.
func setHeaderWord(elfData []byte, magic uint32, off int, v uint64) []byte {
	var pat [8]byte
	binary.LittleEndian.PutUint32(pat[:], magic)
	pat[6], pat[7] = 1, 8 // PC quantum 1, pointer size 8, as the synthetic layouts have
	at := bytes.Index(elfData, pat[:])
	if at < 0 {
		panic("no pcHeader")
	}
	binary.LittleEndian.PutUint64(elfData[at+off:], v)
	return elfData
}

// TestTruncatedInput opens a synthetic ELF file cut short at every byte:
// each must fail, and a failure from reading past the end must wrap
// ErrTruncated and say where (issue 26, item 14).
func TestTruncatedInput(t *testing.T) {
	l := synthLayout{Go120Magic, binary.LittleEndian, 8, 1}
	data := synthELF(buildSynth(l, synthFuncs(l.magic)), false)
	truncatedErrs := 0
	for cut := range len(data) {
		_, err := NewFile(bytes.NewReader(data[:cut]))
		if err == nil {
			t.Fatalf("cut at %d of %d: opened", cut, len(data))
		}
		if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: %v: an end-of-file error that does not wrap ErrTruncated", cut, len(data), err)
		}
		if strings.HasSuffix(err.Error(), ": EOF") {
			t.Fatalf("cut at %d of %d: %v: EOF without where", cut, len(data), err)
		}
		if errors.Is(err, ErrTruncated) {
			truncatedErrs++
		}
	}
	if truncatedErrs == 0 {
		t.Error("no cut gave ErrTruncated")
	}
	t.Logf("%d of %d cuts: ErrTruncated", truncatedErrs, len(data))
}

// TestOtherFormats checks that a file in a container format objscan does
// not read is refused with the format's name: the c-archive and package
// archives (ar), 32-bit XCOFF, universal
// Mach-O files (with their architectures), Java class files, compressed
// data and scripts; and that an empty file is called empty, not truncated.
func TestOtherFormats(t *testing.T) {
	for _, tc := range []struct {
		head []byte
		want string
	}{
		{[]byte("!<arch>\n__.PKGDEF"), "ar archive"},
		{[]byte{0x01, 0xdf, 0x00, 0x03, 0, 0, 0, 0}, "32-bit XCOFF"},
		{[]byte("#!/bin/sh\necho hi\n"), "script"},
		{[]byte{0x1f, 0x8b, 0x08, 0x00}, "gzip"},
		{[]byte("\xfd7zXZ\x00"), "xz"},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd"},
		{[]byte("BZh91AY"), "bzip2"},
		{[]byte("PK\x03\x04"), "zip archive"},
		{[]byte{0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x34}, "Java class"},
		{[]byte{0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x00}, "Java class"},
		{fatHeader(false, macho.CpuAmd64, macho.CpuArm64), "universal (fat) Mach-O file of 2 architectures, amd64 (4096 bytes at offset 0x1000), arm64 (4096 bytes at offset 0x2000)"},
		{fatHeader(true, macho.CpuArm64), "universal (fat) Mach-O file of 1 architectures, arm64 (4096 bytes at offset 0x1000)"},
		{fatHeader(false, 0x77, macho.CpuPpc64), "cpu 0x77 (4096 bytes at offset 0x1000), ppc64"},
	} {
		data := append(tc.head, make([]byte, 64)...)
		_, err := NewFile(bytes.NewReader(data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ELF, Mach-O, PE, XCOFF, Plan 9 a.out and WebAssembly") {
			t.Errorf("% x: error %v, want one naming %q and the formats read (ELF, Mach-O, PE, XCOFF, Plan 9 a.out and WebAssembly)", tc.head[:4], err, tc.want)
		}
	}
	if _, err := NewFile(bytes.NewReader(nil)); err == nil || !strings.Contains(err.Error(), "empty file") || errors.Is(err, ErrTruncated) {
		t.Errorf("empty file: error %v, want \"empty file\", not ErrTruncated", err)
	}
}

// fatHeader returns the header of a universal Mach-O file of the given
// architectures, 4096 bytes each from offset 4096, with 64-bit fat_arch
// records if wide.
func fatHeader(wide bool, cpus ...macho.Cpu) []byte {
	b := binary.BigEndian.AppendUint32(nil, macho.MagicFat)
	if wide {
		b = binary.BigEndian.AppendUint32(nil, 0xcafebabf)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(cpus)))
	for i, c := range cpus {
		b = binary.BigEndian.AppendUint32(b, uint32(c))
		b = binary.BigEndian.AppendUint32(b, 0)
		if wide {
			b = binary.BigEndian.AppendUint64(b, uint64(i+1)<<12)
			b = binary.BigEndian.AppendUint64(b, 4096)
			b = binary.BigEndian.AppendUint32(b, 12)
			b = binary.BigEndian.AppendUint32(b, 0)
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(i+1)<<12)
			b = binary.BigEndian.AppendUint32(b, 4096)
			b = binary.BigEndian.AppendUint32(b, 12)
		}
	}
	return b
}

// TestFatTruncated checks that a universal Mach-O header cut inside its
// fat_arch records is reported as truncated.
func TestFatTruncated(t *testing.T) {
	b := fatHeader(false, macho.CpuAmd64, macho.CpuArm64)
	_, err := NewFile(bytes.NewReader(b[:30]))
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "universal header: 2 architectures") {
		t.Errorf("error %v, want ErrTruncated for the universal header's 2 architectures", err)
	}
}

// TestPclntabRemoved checks the error for a binary whose pclntab section
// is gone (objcopy --remove-section .gopclntab on a -s -w build leaves a few
// pcHeader magics in its data, in tables of the runtime): one line, naming
// where each rejected candidate lies.
func TestPclntabRemoved(t *testing.T) {
	pcln := make([]byte, 64)
	for _, at := range []int{8, 40} {
		binary.LittleEndian.PutUint32(pcln[at:], Go120Magic) // PC quantum 0
	}
	b := bytes.Replace(synthELF(pcln, false), []byte("\x00.gopclntab\x00"), []byte("\x00.rodata.go\x00"), 1)
	_, err := NewFile(bytes.NewReader(b))
	if err == nil {
		t.Fatal("opened")
	}
	for _, want := range []string{"no pclntab", "none of the 2 places", "candidate at .rodata.go+0x8: ", "; candidate at .rodata.go+0x28: ", "PC quantum 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q has several lines", err)
	}
}

// TestGccgo checks that an ELF file with gccgo's .go_export section and no
// pclntab is refused as a gccgo build, and one without it as a file with
// no pclntab.
func TestGccgo(t *testing.T) {
	elf := synthELF(make([]byte, 64), false)
	rename := func(name string) []byte {
		b := bytes.Replace(elf, []byte("\x00.gopclntab\x00"), []byte("\x00"+name+"\x00"), 1)
		if bytes.Equal(b, elf) {
			t.Fatal("no .gopclntab name to replace")
		}
		return b
	}
	gccgo, plain := rename(".go_export"), rename(".rodata.go")
	_, err := NewFile(bytes.NewReader(gccgo))
	if err == nil || !strings.Contains(err.Error(), "built by gccgo") {
		t.Errorf("gccgo-like ELF: error %v, want one naming gccgo", err)
	}
	_, err = NewFile(bytes.NewReader(plain))
	if err == nil || strings.Contains(err.Error(), "gccgo") || !strings.Contains(err.Error(), "no pclntab") {
		t.Errorf("ELF without a pclntab: error %v, want \"no pclntab\" and no gccgo", err)
	}
}
