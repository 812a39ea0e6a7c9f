package linearpc

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/pcgen"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/pcvalue"
)

func TestEncodeExamples(t *testing.T) {
	tests := []struct {
		name string
		t    pcvalue.Table
		want []byte
	}{
		{"constant -1", pcvalue.Table{Len: 10, Runs: runs(0, -1)},
			[]byte{0x00, 0x01, 0xff}},
		{"two changes", pcvalue.Table{Len: 20, Runs: runs(0, 5, 3, 7, 10, 300)},
			// n, pcs 3 10, vlen 1|1<<2|2<<4, v0 5, +2, +295
			[]byte{0x02, 0x03, 0x0a, 0x25, 0x05, 0x02, 0x27, 0x01}},
		{"change at a chunk start", pcvalue.Table{Len: 300, Runs: runs(0, 1, 256, 2)},
			[]byte{0x03, 0x00, 0x01, 0x01, 0x00, 0x01, 0x02}},
		{"constant chunks shared", pcvalue.Table{Len: 1024, Runs: runs(0, 1, 100, 2, 256, 1)},
			[]byte{0x05, 0x05, 0x05, 0x01, 0x64, 0x05, 0x01, 0x01, 0x00, 0x01, 0x01}},
		{"empty", pcvalue.Table{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Encode(tc.t); !bytes.Equal(got, tc.want) {
				t.Errorf("Encode = % x, want % x", got, tc.want)
			}
		})
	}
}

func TestIndexForms(t *testing.T) {
	sp := specialTables()
	tests := []struct {
		name   string
		marker int // expected first byte: 0xfe, 0xff, or -1 for the 1-byte form
		first  int // expected first offset (-1: don't care)
	}{
		{"first 0xfd", -1, 0xfd},
		{"first 0xfe", 0xfe, 0xfe},
		{"first 0xff", 0xfe, 0xff},
		{"first 0x100", 0xfe, 0x100},
		{"2-byte index", 0xfe, -1},
		{"4-byte index", 0xff, -1},
		{"const chunks", -1, -1},
	}
	for _, tc := range tests {
		enc := Encode(sp[tc.name])
		ix, err := parseIndex(enc, sp[tc.name].Len)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		switch {
		case tc.marker < 0 && ix.form != 1, tc.marker == 0xfe && ix.form != 2, tc.marker == 0xff && ix.form != 4:
			t.Errorf("%s: index form %d bytes, first byte %#x", tc.name, ix.form, enc[0])
		}
		if tc.first >= 0 {
			p, _ := ix.chunkAt(enc, 1)
			if p-ix.end != tc.first {
				t.Errorf("%s: first offset %d, want %d", tc.name, p-ix.end, tc.first)
			}
		}
	}
}

// lookupPCs returns the PCs a property test checks for t: all of them for
// small tables, otherwise run and chunk boundaries and random ones.
func lookupPCs(r *rand.Rand, t pcvalue.Table) []uint32 {
	if t.Len <= 4096 {
		pcs := make([]uint32, t.Len)
		for i := range pcs {
			pcs[i] = uint32(i)
		}
		return pcs
	}
	var pcs []uint32
	add := func(pc uint32) {
		if pc < t.Len {
			pcs = append(pcs, pc)
		}
	}
	for k := range min(len(t.Runs), 300) {
		run := t.Runs[k]
		if len(t.Runs) > 300 {
			run = t.Runs[r.IntN(len(t.Runs))]
		}
		add(run.PC)
		add(run.PC + 1)
		add(run.PC - 1)
	}
	for c := uint32(0); c < t.Len && c < 1<<16; c += 128 {
		add(c)
		add(c - 1)
	}
	for range 1000 {
		add(r.Uint32N(t.Len))
	}
	add(t.Len - 1)
	return pcs
}

// checkTable checks every encoding of t against t.Lookup.
func checkTable(t *testing.T, name string, tab pcvalue.Table, r *rand.Rand, sets map[string]*Set) {
	t.Helper()
	enc := Encode(tab)
	dec, err := Decode(enc, tab.Len)
	if err != nil {
		t.Fatalf("%s: Decode(Encode(t)): %v", name, err)
	}
	if want := Canonical(tab); dec.Len != want.Len || !slices.Equal(dec.Runs, want.Runs) {
		t.Fatalf("%s: Decode(Encode(t)) = %v, want %v", name, dec, want)
	}
	type coded struct {
		v   Variant
		enc []byte
		set *Set
		off uint32
	}
	var cs []coded
	for _, v := range Variants() {
		s := sets[v.Name]
		cs = append(cs, coded{v, v.Encode(tab), s, s.Add(tab)})
	}
	if !bytes.Equal(cs[0].enc, enc) {
		t.Fatalf("%s: Spec().Encode differs from Encode", name)
	}
	for _, pc := range lookupPCs(r, tab) {
		want, _ := tab.Lookup(pc)
		if got := Lookup(enc, tab.Len, pc); got != want {
			t.Fatalf("%s: Lookup(pc %d) = %d, want %d", name, pc, got, want)
		}
		if got, err := LookupChecked(enc, tab.Len, pc); got != want || err != nil {
			t.Fatalf("%s: LookupChecked(pc %d) = %d, %v; want %d", name, pc, got, err, want)
		}
		for _, c := range cs {
			if got := c.v.Lookup(c.enc, tab.Len, pc); got != want {
				t.Fatalf("%s: %s Lookup(pc %d) = %d, want %d", name, c.v.Name, pc, got, want)
			}
			if got := c.set.Lookup(c.off, tab.Len, pc); got != want {
				t.Fatalf("%s: %s Set.Lookup(pc %d) = %d, want %d", name, c.v.Name, pc, got, want)
			}
		}
	}
	if _, err := LookupChecked(enc, tab.Len, tab.Len); !errors.Is(err, ErrRange) {
		t.Fatalf("%s: LookupChecked past the end: %v", name, err)
	}
}

func newSets() map[string]*Set {
	sets := map[string]*Set{}
	for _, v := range Variants() {
		sets[v.Name] = NewSet(v)
	}
	return sets
}

func TestSpecialTables(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	sets := newSets()
	sp := specialTables()
	names := make([]string, 0, len(sp))
	for name := range sp {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		tab := sp[name]
		if err := tab.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkTable(t, name, tab, r, sets)
	}
}

func TestGeneratedTables(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	sets := newSets()
	n := 1500
	if !testenv.Full() {
		n = 300
	}
	for i := range n {
		tab := pcgen.Table(r)
		checkTable(t, fmt.Sprintf("table %d", i), tab, r, sets)
	}
	// Every table must still answer correctly from the final sets, after
	// later Adds moved the padding and (for pools) pointed into it.
	r = rand.New(rand.NewPCG(9, 10))
	for i := range n {
		tab := pcgen.Table(r)
		for name, s := range sets {
			off := s.Add(tab) // already present: returns its offset
			for range 10 {
				pc := r.Uint32N(tab.Len)
				want, _ := tab.Lookup(pc)
				if got := s.Lookup(off, tab.Len, pc); got != want {
					t.Fatalf("table %d: %s set lookup at %d = %d, want %d", i, name, pc, got, want)
				}
			}
		}
	}
}

func TestCanonical(t *testing.T) {
	in := pcvalue.Table{Len: 50, Runs: runs(0, 1, 0, 2, 5, 2, 10, 3, 10, 4, 20, 4, 50, 9)}
	want := runs(0, 2, 10, 4)
	if got := Canonical(in); !slices.Equal(got.Runs, want) || got.Len != 50 {
		t.Errorf("Canonical = %v, want %v", got, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := Encode(specialTables()["const chunks"]) // 1-byte index of 8 entries
	tests := []struct {
		name    string
		data    []byte
		textLen uint32
		want    string
	}{
		{"no data", nil, 5, "past the data"},
		{"no index", nil, 600, "chunk index of 2 entries at offset 0"},
		{"short 2-byte index", []byte{0xfe, 0x01}, 600, "2-byte entries ends at offset 5"},
		{"short 4-byte index", []byte{0xff, 0, 0, 0, 0}, 600, "4-byte entries ends at offset 9"},
		{"offset past data", []byte{0x09, 0x00, 0x01, 0x01}, 300, "chunk 1 at offset 10"},
		{"pcs past data", []byte{0x05, 0x01}, 10, "5 pcs run past"},
		{"pc 0 listed", []byte{0x01, 0x00, 0x05, 0x01, 0x01}, 10, "pc 0 (0) at offset 1 is not in ascending order"},
		{"pcs not ascending", []byte{0x02, 0x05, 0x05, 0x15, 0x01, 0x01, 0x01}, 10, "pc 1 (5)"},
		{"pc past the table", []byte{0x01, 0x0a, 0x05, 0x01, 0x01}, 10, "in 1..9"},
		{"vlen past data", []byte{0x01, 0x03}, 10, "vlen at offset 2 runs past"},
		{"code 0", []byte{0x01, 0x03, 0x01, 0x01, 0x01}, 10, "value 1 has width code 0"},
		{"padding", []byte{0x00, 0x05, 0x01}, 10, "padding is not zero"},
		{"values past data", []byte{0x00, 0x03, 0x01, 0x02}, 10, "4 value bytes at offset 2"},
		{"truncated good", good[:len(good)-1], 256 * 9, "past the data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data, tc.textLen)
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode(% x, %d) error = %v, want ErrFormat mentioning %q", tc.data, tc.textLen, err, tc.want)
			}
		})
	}
	if _, err := Decode(good, 256*9); err != nil {
		t.Errorf("Decode(good): %v", err)
	}
}

// TestLookupInBounds runs the trusted lookups on encodings in slices of
// exactly their length, placed at the very end of a larger array, so any
// read past the table panics.
func TestLookupInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for name, tab := range specialTables() {
		for _, v := range Variants() {
			enc := v.Encode(tab)
			buf := make([]byte, len(enc)+16)
			data := buf[:len(enc):len(enc)]
			copy(data, enc)
			for _, pc := range lookupPCs(r, tab) {
				want, _ := tab.Lookup(pc)
				if got := v.Lookup(data, tab.Len, pc); got != want {
					t.Fatalf("%s %s: pc %d = %d, want %d", name, v.Name, pc, got, want)
				}
			}
		}
	}
}

// TestNewSetOf checks that a set made from another set's bytes serves the
// same offsets with the same values, in every variant and every lookup.
func TestNewSetOf(t *testing.T) {
	tabs := []pcvalue.Table{
		{Len: 600, Runs: []pcvalue.Run{{PC: 0, Value: -1}, {PC: 280, Value: 2}}},
		{Len: 40, Runs: []pcvalue.Run{{PC: 0, Value: 0}}},
		{Len: 70000, Runs: []pcvalue.Run{{PC: 0, Value: 1 << 20}, {PC: 65000, Value: -3}, {PC: 65001, Value: 4}}},
	}
	for _, v := range Variants() {
		s := NewSet(v)
		offs := make([]uint32, len(tabs))
		for i, tab := range tabs {
			offs[i] = s.Add(tab)
		}
		r := NewSetOf(v, s.Bytes())
		if r.Size() != s.Size() || r.Len() != 0 {
			t.Fatalf("%s: NewSetOf: size %d, len %d; want %d, 0", v.Name, r.Size(), r.Len(), s.Size())
		}
		for i, tab := range tabs {
			for pc := uint32(0); pc < tab.Len; pc += 7 {
				want, _ := tab.Lookup(pc)
				got := [...]int32{r.Lookup(offs[i], tab.Len, pc), r.LookupBranchy(offs[i], tab.Len, pc)}
				if got[0] != want || got[1] != want {
					t.Fatalf("%s: table %d pc %d: Lookup, LookupBranchy = %v, want %d", v.Name, i, pc, got, want)
				}
				if g, ok := r.TryLookup(offs[i], tab.Len, pc); ok && g != want {
					t.Fatalf("%s: table %d pc %d: TryLookup = %d, want %d", v.Name, i, pc, g, want)
				}
			}
		}
		// Tables added later go after the copied bytes.
		if off := r.Add(tabs[0]); off != uint32(s.Size()) || r.Lookup(off, tabs[0].Len, 280) != 2 {
			t.Errorf("%s: Add after NewSetOf: offset %d, want %d", v.Name, off, s.Size())
		}
	}
}

// TestRareForms checks that cfps-offset takes a palette chunk or a short
// table only where it saves cpRare bytes per lookup it takes off the
// common path, and cf-palette-short wherever it saves a byte.
func TestRareForms(t *testing.T) {
	cp, co := variantByName(t, "cf-palette-short"), variantByName(t, "cfps-offset")
	for _, tc := range []struct {
		name      string
		tab       pcvalue.Table
		rareCP    bool // cf-palette-short takes the rare form
		rareCO    bool // cfps-offset does
		firstByte bool // the rare form is a short table (else chunk 0's palette)
	}{
		// 10 changes between two clusters: an offset palette saves 3
		// bytes of 20 in a one-chunk table (cfps-offset wants 6;
		// cf-palette-short has no offset palettes).
		{"palette saving 3", pcvalue.Table{Len: 11, Runs: runs(0, 10, 1, 1000, 2, 20, 3, 1001, 4, 21, 5, 1002, 6, 22, 7, 1003, 8, 23, 9, 1004, 10, 24)}, false, false, false},
		// The same chunk, the first of a table of 8 chunks: it takes an
		// eighth of the lookups, so 3 bytes (6*256/2048 = 0.75, at least 1) pay.
		{"palette saving 3 of 8 chunks", pcvalue.Table{Len: 2048, Runs: runs(0, 10, 1, 1000, 2, 20, 3, 1001, 4, 21, 5, 1002, 6, 22, 7, 1003, 8, 23, 9, 1004, 10, 24, 100, 5)}, false, true, false},
		// One change in a table of two chunks: a short table saves a byte.
		{"short saving 1", pcvalue.Table{Len: 300, Runs: runs(0, 0, 5, 1)}, true, false, true},
		// Seven changes over many chunks: a short table saves far more.
		{"short saving many", pcvalue.Table{Len: 30000, Runs: runs(0, 0, 500, 1, 5000, 2, 9000, 3, 13000, 2, 20000, 1, 25000, 4, 29000, 0)}, true, true, true},
	} {
		for _, x := range []struct {
			v    Variant
			want bool
		}{{cp, tc.rareCP}, {co, tc.rareCO}} {
			enc := x.v.Encode(tc.tab)
			var rare bool
			if tc.firstByte {
				rare = enc[0] == cpShort
			} else {
				h := enc[0]
				if tc.tab.Len > ChunkUnits {
					h = enc[(tc.tab.Len-1)>>8] // chunk 0, after the 1-byte index
				}
				rare = h&3 == 3
			}
			if rare != x.want {
				t.Errorf("%s, %s: rare form %v, want %v (% x)", tc.name, x.v.Name, rare, x.want, enc)
			}
			for pc := range tc.tab.Len {
				if v, _ := tc.tab.Lookup(pc); x.v.Lookup(enc, tc.tab.Len, pc) != v {
					t.Fatalf("%s, %s: pc %d: %d, want %d", tc.name, x.v.Name, pc, x.v.Lookup(enc, tc.tab.Len, pc), v)
				}
			}
		}
	}
	for _, tc := range []struct {
		rare        uint8
		units, tlen uint32
		want        int
	}{
		{0, 256, 256, 1}, {cpRare, 11, 11, 6}, {cpRare, 256, 2048, 1}, {cpRare, 256, 512, 3},
		{cpRare, 44, 300, 1}, {cpRare, 256, 300, 6}, {255, 1 << 31, 1<<32 - 1, 128}, {cpRare, 1, 0, 1},
	} {
		if got := rareMinSave(tc.rare, tc.units, tc.tlen); got != tc.want {
			t.Errorf("rareMinSave(%d, %d, %d) = %d, want %d", tc.rare, tc.units, tc.tlen, got, tc.want)
		}
	}
}

// TestOffsetPalette checks that cfps-offset stores chunks whose deltas form
// clusters as offset palettes: smaller than cf-palette-short's encoding, by
// about a byte per change, and marked in the descriptor.
func TestOffsetPalette(t *testing.T) {
	cp, co := variantByName(t, "cf-palette-short"), variantByName(t, "cfps-offset")
	for _, tc := range []struct {
		name    string
		minSave int // bytes saved at least
	}{
		{"line clusters", 400},
		{"wide clusters", 400},
		{"255 changes", 0}, // two values: a plain palette is as small
	} {
		tab := specialTables()[tc.name]
		a, b := cp.Encode(tab), co.Encode(tab)
		if save := len(a) - len(b); save < tc.minSave || save < 0 {
			t.Errorf("%s: cf-palette-short %d bytes, cfps-offset %d: saves %d, want at least %d", tc.name, len(a), len(b), save, tc.minSave)
		}
	}
	// One chunk of 14 changes in two clusters: the layout byte for byte.
	tab := pcvalue.Table{Len: 15, Runs: runs(0, 10, 1, 1000, 2, 20, 3, 1001, 4, 21, 5, 1002, 6, 22, 7, 1003, 8, 23, 9, 1004, 10, 24, 11, 1005, 12, 25, 13, 1006, 14, 26)}
	got := co.Encode(tab)
	want := []byte{
		14<<4 | 1<<2 | 3,                              // 14 changes, a 1-byte start value, mode 3
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, // PCs
		11 ^ 0x80,            // the start value + 1, excess-128
		2 | 0<<2 | cpOffs,    // 2-byte entries, 1-bit indexes, offsets
		0b01010101, 0b010101, // clusters 1, 0, 1, 0, ...
		0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, // offsets
		0x0a, 0x80, 0xde, 0x83, // entries 10 and 990, excess-32768
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encoding % x, want % x", got, want)
	}
	for pc := range tab.Len {
		if v, _ := tab.Lookup(pc); co.Lookup(got, tab.Len, pc) != v {
			t.Errorf("pc %d: %d, want %d", pc, co.Lookup(got, tab.Len, pc), v)
		}
	}
}
