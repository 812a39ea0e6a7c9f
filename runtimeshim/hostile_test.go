package runtimeshim

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/varintpc"
)

// TestHostileFileIndex gives a pcfile table of a real binary a file index
// of 2^26 - 1 (the old sanity bound) and checks that NewModule's rebuilt
// file table stays bounded by the binary's own cutab instead of allocating
// 256 MB, and that the file resolves to "?" as the runtime would print it.
func TestHostileFileIndex(t *testing.T) {
	data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features"}))
	if err != nil {
		t.Fatal(err)
	}
	f, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the first pcfile table of 6 bytes or more as one run of value
	// 2^26-1 (a 4-byte varint delta), 1 unit long, then the terminator.
	var victim *objscan.Table
	for i := range f.Tabs {
		tb := &f.Tabs[i]
		if len(tb.Data) >= 6 && tb.Refs[0].Kind == objscan.KindPCFile {
			victim = tb
			break
		}
	}
	if victim == nil {
		t.Fatal("no pcfile table of 6 bytes or more")
	}
	const idx = 1<<26 - 1
	d := int64(idx + 1) // from the initial -1
	b := binary.AppendUvarint(nil, uint64(d<<1))
	b = append(b, 1, 0)
	copy(victim.Data, b)
	for i := len(b); i < len(victim.Data); i++ {
		victim.Data[i] = 0
	}
	m, _ := newModuleBounded(t, f, len(data))
	if n, most := len(m.cutab), f.Sizes.CUTab/4; int64(n) > most {
		t.Errorf("rebuilt cutab has %d entries, the binary's has %d", n, most)
	}
	fn := &f.Funcs[victim.Refs[0].Func]
	s, err := m.NewShim(Encodings()[0])
	if err != nil {
		t.Fatal(err)
	}
	fi := s.findfunc(fn.Entry)
	if got := s.funcfile(fi, idx); got != "?" {
		t.Errorf("file %d of %s = %q, want \"?\"", idx, fn.Name, got)
	}
}

// TestSharedFileNames makes every file name of a real binary one long
// string, each cutab entry naming it or a suffix of it, and checks that
// NewModule costs about the binary, not the string's length per file
// (the shim copied each name once per distinct name), and that every
// file a pcfile table names resolves to the name objscan reads. The
// binary is the local go command, whose tables are large enough for a
// cost per file to show.
func TestSharedFileNames(t *testing.T) {
	data, err := os.ReadFile(testbuild.GoBinary())
	if err != nil {
		t.Fatal(err)
	}
	for _, suffixes := range []bool{false, true} {
		f, err := objscan.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if f.Magic == objscan.Go12Magic || f.PtrSize != 8 {
			t.Skipf("want a Go 1.16+ pclntab of 8-byte pointers, have magic %#x", f.Magic)
		}
		pcln := f.Pclntab()
		word := func(i int) uint64 { return binary.LittleEndian.Uint64(pcln[8+8*i:]) }
		cuOff, ftOff, pcOff := word(4), word(5), word(6) // nfunc, nfiles, textStart, funcname, cu, filetab, pctab
		filetab := pcln[ftOff:pcOff]
		for i := range filetab {
			filetab[i] = 'a'
		}
		filetab[len(filetab)-1] = 0
		cutab := pcln[cuOff:ftOff]
		for i := 0; i+4 <= len(cutab); i += 4 {
			if binary.LittleEndian.Uint32(cutab[i:]) == ^uint32(0) {
				continue // a removed file
			}
			off := uint32(0)
			if suffixes {
				off = uint32(i/4) % uint32(len(filetab)-1)
			}
			binary.LittleEndian.PutUint32(cutab[i:], off)
		}
		m, alloc := newModuleBounded(t, f, len(data))
		t.Logf("suffixes %v: %d files of one %d-byte name, %d bytes allocated", suffixes, len(cutab)/4, len(filetab)-1, alloc)
		s, err := m.NewShim(Encodings()[0])
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for i := range f.Funcs {
			fn := &f.Funcs[i]
			if fn.PCFile == 0 || fn.CUOffset == ^uint32(0) || checked == 200 {
				continue
			}
			dec, _, err := varintpc.Decode(f.Table(fn.PCFile).Data)
			if err != nil || len(dec.Runs) == 0 || dec.Runs[0].Value < 0 {
				continue
			}
			file := dec.Runs[0].Value
			want, err := f.FileName(fn, file)
			if err != nil {
				continue
			}
			if got := s.funcfile(s.findfunc(fn.Entry), file); got != want {
				t.Fatalf("suffixes %v: file %d of %s: %d bytes, want %d", suffixes, file, fn.Name, len(got), len(want))
			}
			checked++
		}
		if checked == 0 {
			t.Fatal("no function's file checked")
		}
	}
}

// newModuleBounded returns NewModule(f) and the bytes it allocated, and
// fails the test if that is more than 8 times the size of the binary.
func newModuleBounded(t *testing.T, f *objscan.File, size int) (*Module, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := NewModule(f)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	if limit := 8 * uint64(size); alloc > limit {
		t.Errorf("NewModule allocated %d bytes for a %d-byte binary, more than %d", alloc, size, limit)
	}
	return m, alloc
}
