package varintpc

import (
	"testing"

	"github.com/pctab/pctab/internal/testenv"
)

// TestPCValueReal checks the runtime-shaped PCValue, and Cache.PCValue
// with repeated keys (hits and misses), against the decoded tables of the
// local go binary: at the first and last PC of every run, every fifth PC in
// between (not in -short mode), and just past each table's end.
func TestPCValueReal(t *testing.T) {
	f := realFile(t)
	q := uint32(f.PCQuantum)
	pctab := f.PCTab()
	c := NewCache(1)
	c.PtrSize = uintptr(f.PtrSize)
	for _, tab := range f.Tabs {
		dec, _, err := Decode(tab.Data)
		if err != nil {
			t.Fatal(err)
		}
		entry := uintptr(1) << 20
		check := func(pc uint32, wantV int32, wantS uint32) {
			target := entry + uintptr(pc)*uintptr(q)
			v, s, ok := PCValue(pctab, tab.Offset, entry, target, q)
			if !ok || v != wantV || s != entry+uintptr(wantS)*uintptr(q) {
				t.Fatalf("PCValue: table at %#x pc %d: %d, %#x, %v; want %d, %#x", tab.Offset, pc, v, s, ok, wantV, entry+uintptr(wantS)*uintptr(q))
			}
			for range 2 { // the second may hit
				v, s, ok = c.PCValue(pctab, tab.Offset, entry, target, q)
				if !ok || v != wantV || s != entry+uintptr(wantS)*uintptr(q) {
					t.Fatalf("Cache.PCValue: table at %#x pc %d: %d, %#x, %v; want %d", tab.Offset, pc, v, s, ok, wantV)
				}
			}
		}
		for r, run := range dec.Runs {
			end := dec.Len
			if r+1 < len(dec.Runs) {
				end = dec.Runs[r+1].PC
			}
			check(run.PC, run.Value, run.PC)
			check(end-1, run.Value, run.PC)
			if !testenv.Full() {
				continue
			}
			// Every fifth PC in between: TestRealLookup covers every PC
			// with the walk, which shares readvarint's semantics.
			for pc := run.PC + 1; pc < end-1; pc += 5 {
				check(pc, run.Value, run.PC)
			}
		}
		if v, s, ok := PCValue(pctab, tab.Offset, entry, entry+uintptr(dec.Len)*uintptr(q), q); ok || v != -1 || s != 0 {
			t.Fatalf("table at %#x: pc %d past the end: %d, %#x, %v", tab.Offset, dec.Len, v, s, ok)
		}
		if _, _, ok := c.PCValue(pctab, tab.Offset, entry, entry+uintptr(dec.Len)*uintptr(q), q); ok {
			t.Fatalf("table at %#x: cache: pc %d past the end found", tab.Offset, dec.Len)
		}
	}
	if c.Hits == 0 || c.Misses == 0 {
		t.Errorf("cache: %d hits, %d misses; want both", c.Hits, c.Misses)
	}
	if v, s, ok := PCValue(pctab, 0, 1, 2, q); ok || v != -1 || s != 0 {
		t.Errorf("offset 0: %d, %d, %v; want -1, 0, false", v, s, ok)
	}
}

// TestPCValueQuantum checks the quantum in step on a hand-made table:
// values 5 (pc 0-2), 3 (pc 3-) over 4 units with quantum 4.
func TestPCValueQuantum(t *testing.T) {
	// uvdelta zigzag(6)=12 then pcdelta 3; uvdelta zigzag(-2)=3 then 1; end.
	tabBytes := []byte{0, 12, 3, 3, 1, 0}
	for _, c := range []struct {
		target uintptr
		v      int32
		s      uintptr
		ok     bool
	}{{100, 5, 100, true}, {111, 5, 100, true}, {112, 3, 112, true}, {115, 3, 112, true}, {116, -1, 0, false}} {
		v, s, ok := PCValue(tabBytes, 1, 100, c.target, 4)
		if v != c.v || s != c.s || ok != c.ok {
			t.Errorf("pc %d: %d, %d, %v; want %d, %d, %v", c.target, v, s, ok, c.v, c.s, c.ok)
		}
	}
}
