package linearpc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/pcgen"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/pcvalue"
)

// fastCase is one encoding placed for every path of the spec lookup.
type fastCase struct {
	tab    pcvalue.Table
	enc    []byte // exact standalone encoding: the bounded path
	padded []byte // enc, then garbage, len(padded) >= window: the fast path
	set    *Set   // a set holding the table among others
	off    uint32 // its offset in set
	last   *Set   // a set holding only this table: the window reaches the end
}

// newFastCase places tab in every way the lookups distinguish. The bytes
// after the encoding in padded are random, so that a lookup depending on
// what follows the table (zero padding in a Set) fails; padded has no
// spare capacity, so that a read past it panics.
func newFastCase(r *rand.Rand, tab pcvalue.Table, set *Set) fastCase {
	enc := Encode(tab)
	n := max(len(enc)+1+r.IntN(64), window)
	padded := make([]byte, n)
	copy(padded, enc)
	for i := len(enc); i < n; i++ {
		padded[i] = byte(r.Uint32())
	}
	fc := fastCase{tab: tab, enc: enc[:len(enc):len(enc)], padded: padded[:n:n], set: set, last: NewSet(Spec())}
	fc.off = set.Add(tab)
	fc.last.Add(tab)
	return fc
}

// check compares every spec lookup path with the table at pc.
func (fc *fastCase) check(t *testing.T, name string, pc uint32) {
	t.Helper()
	want, _ := fc.tab.Lookup(pc)
	got := [...]int32{
		fc.set.Lookup(fc.off, fc.tab.Len, pc),
		fc.last.Lookup(0, fc.tab.Len, pc),
		Lookup(fc.padded, fc.tab.Len, pc),
		Lookup(fc.enc, fc.tab.Len, pc),
		lookupBounded(fc.padded, fc.tab.Len, pc),
		fc.set.LookupBranchy(fc.off, fc.tab.Len, pc),
		fc.last.LookupBranchy(0, fc.tab.Len, pc),
	}
	for k, try := range []func(off, textLen, pc uint32) (int32, bool){fc.set.TryLookup, fc.last.TryLookup, fc.set.TryLookupBranchy, fc.last.TryLookupBranchy} {
		off := [...]uint32{fc.off, 0, fc.off, 0}[k]
		if g, ok := try(off, fc.tab.Len, pc); ok && g != want {
			path := [...]string{"Set.TryLookup", "Set.TryLookup (last table)", "Set.TryLookupBranchy", "Set.TryLookupBranchy (last table)"}[k]
			t.Fatalf("%s (len %d): pc %d: %s = %d, want %d", name, fc.tab.Len, pc, path, g, want)
		}
	}
	for k, g := range got {
		if g != want {
			path := [...]string{"Set.Lookup", "Set.Lookup (last table)", "Lookup (long data)", "Lookup (exact data)", "lookupBounded", "Set.LookupBranchy", "Set.LookupBranchy (last table)"}[k]
			t.Fatalf("%s (len %d): pc %d: %s = %d, want %d", name, fc.tab.Len, pc, path, g, want)
		}
	}
}

// fastTables returns tables that exercise the fast lookup's edge cases.
func fastTables() map[string]pcvalue.Table {
	tabs := specialTables()
	alt := func(a, b int32) func(uint32) int32 {
		return func(i uint32) int32 {
			if i%2 == 0 {
				return a
			}
			return b
		}
	}
	// More than 16 changes in a chunk, with every width of value.
	tabs["17 changes"] = denseTable(300, 3, 20, alt(1, 2))
	tabs["40 changes 4-byte"] = denseTable(600, 280, 320, func(i uint32) int32 { return int32(i) * 70001 })
	tabs["mixed widths"] = denseTable(256, 0, 256, func(i uint32) int32 {
		return []int32{1, -300, 1 << 20, -1, 127, -128, 32767, -32769}[i%8] * int32(1+i%3)
	})
	// 8 and 9 changes: the end of the first word.
	tabs["8 changes"] = denseTable(256, 10, 18, alt(5, -5))
	tabs["9 changes"] = denseTable(256, 10, 19, alt(5, -5))
	tabs["8 changes at end"] = denseTable(512, 248, 256, alt(-100000, 100000))
	// Lengths around one and two chunks.
	for _, n := range []uint32{255, 256, 257, 511, 512, 513} {
		tabs[fmt.Sprintf("len %d", n)] = pcvalue.Table{Len: n, Runs: runs(0, 1, int64(n)/2, 1000, int64(n)-1, -40000)}
	}
	// The longest tables the window covers, and one longer: values
	// change only in the first chunk, so the index has the 1-byte form.
	for _, n := range []uint32{fastMaxLen - 1, fastMaxLen, fastMaxLen + 1} {
		tabs[fmt.Sprintf("len %d", n)] = pcvalue.Table{Len: n, Runs: runs(0, 7, 5, 8, 200, 7)}
	}
	tabs["last chunk short"] = pcvalue.Table{Len: 256*40 + 1, Runs: runs(0, 1, 256*40, 2)}
	// The farthest chunk the window reaches: index entries of 255 in the
	// longest table the fast path takes, and in one chunk longer.
	for _, n := range []uint32{fastMaxLen, fastMaxLen + 1} {
		tabs[fmt.Sprintf("entry 255 len %d", n)] = farChunks(n)
	}
	return tabs
}

// farChunks returns a table of length n whose chunk 0 and chunk 1 encode
// in 255 bytes together, chunk 0 in fewer than 0xfe, followed by constant
// chunks: a 1-byte index whose entries from chunk 2 on are 255.
func farChunks(n uint32) pcvalue.Table {
	size := func(k int) int { return 2 + 2*k + (k+4)/4 } // k changes, 1-byte values
	for a := 1; a < 120; a++ {
		for b := 1; b < 120; b++ {
			if size(a)+size(b) != 255 || size(a) >= 0xfe {
				continue
			}
			t := pcvalue.Table{Len: n, Runs: runs(0, 1)}
			for i := 1; i <= a; i++ {
				t.Runs = append(t.Runs, pcvalue.Run{PC: uint32(i), Value: int32(1 + i%2)})
			}
			t.Runs = append(t.Runs, pcvalue.Run{PC: 256, Value: 5})
			for i := 1; i <= b; i++ {
				t.Runs = append(t.Runs, pcvalue.Run{PC: 256 + uint32(i), Value: int32(5 + i%2)})
			}
			t.Runs = append(t.Runs, pcvalue.Run{PC: 512, Value: 9})
			return t
		}
	}
	panic("no chunk sizes add up to 255")
}

// TestFastLookupTables checks every spec lookup path at every PC of the
// edge-case tables (at many PCs for the long ones) and of generated ones.
func TestFastLookupTables(t *testing.T) {
	r := rand.New(rand.NewPCG(61984, 256))
	set := NewSet(Spec())
	set.Add(pcvalue.Table{Len: 3000, Runs: runs(0, 1, 1000, 2)})
	var cases []fastCase
	var names []string
	for name, tab := range fastTables() {
		cases = append(cases, newFastCase(r, tab, set))
		names = append(names, name)
	}
	n := 1500
	if !testenv.Full() {
		n = 300
	}
	for i := range n {
		cases = append(cases, newFastCase(r, pcgen.Table(r), set))
		names = append(names, fmt.Sprintf("generated %d", i))
	}
	// A table after all the others keeps the set's last table ordinary.
	set.Add(pcvalue.Table{Len: 10, Runs: runs(0, 4)})
	for k := range cases {
		fc := &cases[k]
		for _, pc := range lookupPCs(r, fc.tab) {
			fc.check(t, names[k], pc)
		}
	}
	// Check that the far-chunk tables have the shape they are meant to.
	for k, name := range names {
		if strings.HasPrefix(name, "entry 255") {
			enc := cases[k].enc
			if nidx := int(cases[k].tab.Len-1) >> 8; enc[0] >= 0xfe || enc[nidx-1] != 255 {
				t.Errorf("%s: index starts %#x, last entry %d; want a 1-byte index ending in 255", name, enc[0], enc[nidx-1])
			}
		}
	}
	// Check the form of the index tables that are meant to have one.
	forms := map[string]byte{"first 0xfe": 0xfe, "first 0xff": 0xfe, "2-byte index": 0xfe, "4-byte index": 0xff}
	for k, name := range names {
		if want, ok := forms[name]; ok && cases[k].enc[0] != want {
			t.Errorf("%s: first byte %#x, want %#x", name, cases[k].enc[0], want)
		}
	}
}

// TestFastLookupReal checks every spec lookup path at every PC of every
// table of the local go binary (every 61st under -short).
func TestFastLookupReal(t *testing.T) {
	_, tabs := realTables(t)
	r := rand.New(rand.NewPCG(1, 2))
	step := uint32(1)
	if !testenv.Full() {
		step = 61
	}
	set := NewSet(Spec())
	for i, rt := range tabs {
		fc := newFastCase(r, rt.t, set)
		for pc := uint32(i) % step; pc < rt.t.Len; pc += step {
			fc.check(t, fmt.Sprintf("table %#x", rt.off), pc)
		}
	}
}

// TestGTBits checks the SWAR byte comparison against a byte loop.
func TestGTBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	edge := []byte{0, 1, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff}
	for lo := range 256 {
		b, l := gtConsts(byte(lo))
		for range 200 {
			var x uint64
			for k := range 8 {
				v := byte(r.Uint32())
				if r.IntN(2) == 0 {
					v = edge[r.IntN(len(edge))]
				}
				if r.IntN(3) == 0 {
					v = byte(lo + r.IntN(3) - 1)
				}
				x |= uint64(v) << (8 * k)
			}
			var want uint64
			for k := range 8 {
				if byte(x>>(8*k)) > byte(lo) {
					want |= 0x80 << (8 * k)
				}
			}
			if got := gtBits(x, b, l); got != want {
				t.Fatalf("gtBits(%#x, lo %#x) = %#x, want %#x", x, lo, got, want)
			}
		}
	}
}

// TestSignExtend checks the value tables against the encoder's widths.
func TestSignExtend(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 127, -128, 128, -129, 32767, -32768, 32768, -32769, math.MaxInt32, math.MinInt32} {
		n := uint(codeLen(widthCode(v)))
		x := uint32(v)
		if n < 4 {
			x = x&(1<<(8*n)-1) | 0xdead0000 // garbage above the value
		}
		if got := int32(x&sxMask[n]^sxSign[n]) - int32(sxSign[n]); got != v {
			t.Errorf("value %d (%d bytes, read %#x) = %d", v, n, x, got)
		}
		if got := int32(x&sxMask[0]^sxSign[0]) - int32(sxSign[0]); got != 0 {
			t.Errorf("value %d at index 0 = %d, want 0", v, got)
		}
	}
	for b := range 256 {
		for k := range 4 {
			if got, want := int(vlenBytes[b]>>(8*k)&0xff), codeLen(byte(b>>(2*k))&3); got != want {
				t.Fatalf("vlenBytes[%#x] byte %d = %d, want %d", b, k, got, want)
			}
		}
	}
}
