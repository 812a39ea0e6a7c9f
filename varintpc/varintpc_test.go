package varintpc

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/pcgen"
	"github.com/pctab/pctab/pcvalue"
)

func runs(rs ...int64) []pcvalue.Run {
	var out []pcvalue.Run
	for i := 0; i < len(rs); i += 2 {
		out = append(out, pcvalue.Run{PC: uint32(rs[i]), Value: int32(rs[i+1])})
	}
	return out
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want pcvalue.Table
		n    int
	}{
		{"one run", []byte{0x02, 0x05, 0x00}, pcvalue.Table{Runs: runs(0, 0), Len: 5}, 3},
		{"starts at -1", []byte{0x00, 0x03, 0x04, 0x02, 0x00}, pcvalue.Table{Runs: runs(0, -1, 3, 1), Len: 5}, 5},
		// The runtime treats a zero byte as a delta while the PC is
		// still the entry, so a second zero delta after an empty first
		// run is a delta too.
		{"empty first run", []byte{0x00, 0x00, 0x00, 0x05, 0x00}, pcvalue.Table{Runs: runs(0, -1, 0, -1), Len: 5}, 5},
		{"empty middle run", []byte{0x02, 0x02, 0x02, 0x00, 0x02, 0x03, 0x00}, pcvalue.Table{Runs: runs(0, 0, 2, 1, 2, 2), Len: 5}, 7},
		{"multi-byte", []byte{0x90, 0x03, 0xac, 0x02, 0x00}, pcvalue.Table{Runs: runs(0, 199), Len: 300}, 5},
		{"negative", []byte{0x05, 0x01, 0x00}, pcvalue.Table{Runs: runs(0, -4), Len: 1}, 3},
		{"max delta", []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x00}, pcvalue.Table{Runs: runs(0, 2147483646), Len: 1}, 7},
		{"trailing bytes", []byte{0x02, 0x05, 0x00, 0xff, 0xff}, pcvalue.Table{Runs: runs(0, 0), Len: 5}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := Decode(tc.in)
			if err != nil {
				t.Fatalf("Decode(% x): %v", tc.in, err)
			}
			if n != tc.n || got.Len != tc.want.Len || !slices.Equal(got.Runs, tc.want.Runs) {
				t.Fatalf("Decode(% x) = %v, %d; want %v, %d", tc.in, got, n, tc.want, tc.n)
			}
			if enc := Encode(got); !bytes.Equal(enc, tc.in[:n]) {
				t.Errorf("Encode(Decode(% x)) = % x", tc.in[:n], enc)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string // substring of the error
		is   error
	}{
		{"empty", nil, "value delta 0 at offset 0", ErrTruncated},
		{"no pc delta", []byte{0x02}, "pc delta 0 at offset 1", ErrTruncated},
		{"no terminator", []byte{0x02, 0x05}, "value delta 1 at offset 2", ErrTruncated},
		{"cut varint", []byte{0x02, 0x85}, "varint at offset 1", ErrTruncated},
		{"six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x01, 0x00}, "overflows uint32", nil},
		{"overflow", []byte{0xff, 0xff, 0xff, 0xff, 0x1f, 0x01, 0x00}, "byte 0x1f at offset 4", nil},
		{"not minimal", []byte{0x80, 0x00, 0x01, 0x00}, "not minimal", nil},
		{"length overflow", []byte{0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x02, 0x01, 0x00}, "exceeds 32 bits", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(tc.in)
			if err == nil {
				t.Fatalf("Decode(% x) succeeded", tc.in)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode(% x) error %q does not mention %q", tc.in, err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Decode(% x) error %q is not %v", tc.in, err, tc.is)
			}
		})
	}
}

func TestEncodeEmpty(t *testing.T) {
	if got := Encode(pcvalue.Table{}); len(got) != 0 {
		t.Errorf("Encode(empty) = % x, want nothing", got)
	}
	if got := AppendEncode([]byte{1, 2}, pcvalue.Table{Runs: runs(0, 0), Len: 3}); !bytes.Equal(got, []byte{1, 2, 0x02, 0x03, 0x00}) {
		t.Errorf("AppendEncode = % x", got)
	}
}

func TestRoundTripGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		tab := pcgen.Table(r)
		enc := Encode(tab)
		got, n, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(%v)): %v", tab, err)
		}
		if n != len(enc) || got.Len != tab.Len || !slices.Equal(got.Runs, tab.Runs) {
			t.Fatalf("Decode(Encode(t)) = %v, %d; want %v, %d", got, n, tab, len(enc))
		}
	}
}

// checkLookup compares Lookup with the decoded table at pc (quantum units)
// for every byte offset of that unit.
func checkLookup(t *testing.T, data []byte, tab pcvalue.Table, pc uint32, q uint32) {
	t.Helper()
	want, ok := tab.Lookup(pc)
	// Start of the run holding pc.
	var start uint32
	for _, r := range tab.Runs {
		if r.PC <= pc && r.PC < tab.Len {
			start = r.PC
		}
	}
	for b := range q {
		off := uintptr(pc)*uintptr(q) + uintptr(b)
		for _, strict := range []bool{false, true} {
			v, s, err := Lookup(data, off, q, strict)
			switch {
			case ok && (err != nil || v != want || s != uintptr(start)*uintptr(q)):
				t.Fatalf("Lookup(pcOff %d, q %d, strict %v) = %d, %d, %v; want %d, %d", off, q, strict, v, s, err, want, uintptr(start)*uintptr(q))
			case !ok && !strict && (err != nil || v != -1 || s != 0):
				t.Fatalf("Lookup(pcOff %d, q %d) past the end = %d, %d, %v; want -1, 0, nil", off, q, v, s, err)
			case !ok && strict && !errors.Is(err, ErrNotCovered):
				t.Fatalf("strict Lookup(pcOff %d, q %d) past the end: err %v, want ErrNotCovered", off, q, err)
			}
		}
	}
}

func TestLookupGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		tab := pcgen.Table(r)
		enc := Encode(tab)
		for _, q := range []uint32{1, 2, 4} {
			pcs := []uint32{0, tab.Len - 1, tab.Len, tab.Len + 7}
			for k := range min(len(tab.Runs), 40) {
				run := tab.Runs[k]
				if len(tab.Runs) > 40 {
					run = tab.Runs[r.IntN(len(tab.Runs))]
				}
				pcs = append(pcs, run.PC, run.PC+1)
				if run.PC > 0 {
					pcs = append(pcs, run.PC-1)
				}
			}
			for range 20 {
				pcs = append(pcs, r.Uint32N(tab.Len+1))
			}
			for _, pc := range pcs {
				if uint64(pc)*uint64(q) >= 1<<32 {
					continue // the runtime's uint32 arithmetic wraps there
				}
				checkLookup(t, enc, tab, pc, q)
			}
		}
	}
}

func TestLookupRuntimeQuirks(t *testing.T) {
	// Overlong varints: the runtime reads them (shifts modulo 32) where
	// Decode refuses them.
	overlong := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x05, 0x00}
	if _, _, err := Decode(overlong); err == nil {
		t.Errorf("Decode accepted an overlong varint")
	}
	if v, s, err := Lookup(overlong, 0, 1, true); v != 7 || s != 0 || err != nil {
		t.Errorf("Lookup(overlong) = %d, %d, %v; want 7, 0, nil", v, s, err)
	}
	// A lookup that ends before the missing terminator succeeds; one that
	// needs more data reports truncation.
	cut := []byte{0x02, 0x05}
	if v, _, err := Lookup(cut, 4, 1, true); v != 0 || err != nil {
		t.Errorf("Lookup(cut, 4) = %d, %v; want 0, nil", v, err)
	}
	if _, _, err := Lookup(cut, 5, 1, false); !errors.Is(err, ErrTruncated) {
		t.Errorf("Lookup(cut, 5): err %v, want ErrTruncated", err)
	}
	// PC deltas are multiplied in uint32: 2^30 units of 4 bytes wrap to 0.
	wrap := []byte{0x02, 0x80, 0x80, 0x80, 0x80, 0x04, 0x02, 0x01, 0x00}
	if v, s, err := Lookup(wrap, 0, 4, true); v != 1 || s != 0 || err != nil {
		t.Errorf("Lookup(wrap, 0) = %d, %d, %v; want 1, 0, nil", v, s, err)
	}
}

func TestCache(t *testing.T) {
	tab := pcvalue.Table{Runs: runs(0, 10, 100, 20), Len: 200}
	data := Encode(tab)
	c := NewCache(1)
	const entry = 0x1000
	if v, s, err := c.Lookup(0, data, entry, entry+5, 1, true); v != -1 || s != 0 || err != nil || c.Hits+c.Misses != 0 {
		t.Fatalf("offset 0: %d, %d, %v, %d hits %d misses", v, s, err, c.Hits, c.Misses)
	}
	v, s, err := c.Lookup(7, data, entry, entry+150, 1, true)
	if v != 20 || s != entry+100 || err != nil || c.Misses != 1 || c.Hits != 0 {
		t.Fatalf("first lookup: %d, %#x, %v, %d hits %d misses", v, s, err, c.Hits, c.Misses)
	}
	if e := c.entries[((entry+150)/8)%2][0]; e.targetpc != entry+150 || e.off != 7 || e.val != 20 || e.valPC != entry+100 {
		t.Fatalf("slot 0 after miss = %+v", e)
	}
	v, s, err = c.Lookup(7, data, entry, entry+150, 1, true)
	if v != 20 || s != entry+100 || err != nil || c.Hits != 1 {
		t.Fatalf("second lookup: %d, %#x, %v, %d hits", v, s, err, c.Hits)
	}
	// Same PC, other table: a miss.
	c.Lookup(9, data, entry, entry+150, 1, true)
	if c.Misses != 2 {
		t.Fatalf("other offset: %d misses, want 2", c.Misses)
	}
	// Uncovered PCs are not cached.
	for range 2 {
		if _, _, err := c.Lookup(7, data, entry, entry+300, 1, false); err != nil {
			t.Fatal(err)
		}
	}
	if c.Misses != 4 {
		t.Fatalf("uncovered: %d misses, want 4", c.Misses)
	}
	if _, _, err := c.Lookup(7, data, entry, entry+300, 1, true); !errors.Is(err, ErrNotCovered) {
		t.Fatalf("strict uncovered: %v", err)
	}
}

func TestCacheSets(t *testing.T) {
	for _, tc := range []struct {
		ptr      uintptr
		pc0, pc1 uintptr
		sameSet  bool
	}{
		{8, 0x1000, 0x1007, true},
		{8, 0x1000, 0x1008, false},
		{4, 0x1000, 0x1004, false},
		{4, 0x1000, 0x1003, true},
	} {
		c := &Cache{PtrSize: tc.ptr}
		data := Encode(pcvalue.Table{Runs: runs(0, 1), Len: 0x100})
		c.Lookup(1, data, 0x1000, tc.pc0, 1, true)
		c.Lookup(1, data, 0x1000, tc.pc1, 1, true)
		s0, s1 := (tc.pc0/tc.ptr)%2, (tc.pc1/tc.ptr)%2
		if (s0 == s1) != tc.sameSet || c.entries[s1][0].targetpc != tc.pc1 {
			t.Errorf("ptr %d: pcs %#x %#x: sets %d %d", tc.ptr, tc.pc0, tc.pc1, s0, s1)
		}
	}
}

// TestCacheReplacement checks the runtime's replacement rule against a
// direct model and that results stay exact under eviction.
func TestCacheReplacement(t *testing.T) {
	tab := pcvalue.Table{Runs: runs(0, 3, 50, 4, 90, 5), Len: 1 << 12}
	data := Encode(tab)
	c := NewCache(42)
	model := NewCache(42) // only its PRNG is used
	var sets [CacheSets][CacheWays]cacheEnt
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		pc := uintptr(r.IntN(64)) * 4
		off := uint32(1 + r.IntN(3))
		v, s, err := c.Lookup(off, data, 0, pc, 1, true)
		want, _ := tab.Lookup(uint32(pc))
		if err != nil || v != want {
			t.Fatalf("pc %d: %d, %v; want %d", pc, v, err, want)
		}
		set := &sets[(pc/8)%2]
		hit := false
		for _, e := range set {
			if e.off == off && e.targetpc == pc {
				hit = true
			}
		}
		if !hit {
			ci := model.randn(CacheWays)
			set[ci] = set[0]
			set[0] = cacheEnt{targetpc: pc, off: off, val: v, valPC: s}
		}
	}
	if sets != c.entries {
		t.Errorf("cache contents differ from the model")
	}
	if c.Hits == 0 || c.Misses == 0 || c.Hits+c.Misses != 5000 {
		t.Errorf("hits %d misses %d", c.Hits, c.Misses)
	}
	c.Reset(42)
	if c.Hits != 0 || c.entries != ([CacheSets][CacheWays]cacheEnt{}) {
		t.Errorf("Reset left state")
	}
}
