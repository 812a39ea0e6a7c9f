package runtimeshim

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
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
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := NewModule(f)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, 8*uint64(len(data)); alloc > limit {
		t.Errorf("NewModule allocated %d bytes for a %d-byte binary, more than %d", alloc, len(data), limit)
	}
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
