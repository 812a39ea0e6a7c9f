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
		{"table past its function", synthELF(buildSynth(l, huge), false), "past the function's extent"},
		// Issue 26, item 12: nfunc 0 gave a negative functab size.
		{"nfunc 0", setHeaderWord(synthELF(buildSynth(l, synthFuncs(l.magic)), false), l.magic, 8, 0), "nfunc is 0"},
		{"nfunc 0, Go 1.2 layout", setHeaderWord(synthELF(buildSynth(synthLayout{Go12Magic, binary.LittleEndian, 8, 1}, synthFuncs(Go12Magic)), false), Go12Magic, 8, 0), "nfunc is 0"},
		{"nfiles past the file table", setHeaderWord(synthELF(buildSynth(l, synthFuncs(l.magic)), false), l.magic, 16, 1<<40), "files cannot fit"},
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
