package rewrite

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
)

func TestRemap(t *testing.T) {
	m := remap{
		{name: "header", oldStart: 0, oldEnd: 72, newStart: 0, newEnd: 88},
		{name: "names", oldStart: 72, oldEnd: 100, newStart: 88, newEnd: 116, interior: true},
		{name: "pctab", oldStart: 100, oldEnd: 200, newStart: 116, newEnd: 300},
		{name: "tail", oldStart: 210, oldEnd: 250, newStart: 310, newEnd: 350, interior: true},
	}
	tests := []struct {
		v       uint64
		want    uint64
		in      bool
		wantErr string
	}{
		{v: 0, want: 0, in: true},
		{v: 72, want: 88, in: true},                     // start of names wins over end of header
		{v: 80, want: 96, in: true},                     // interior of a shifted span
		{v: 100, want: 116, in: true},                   // start of pctab
		{v: 150, in: true, wantErr: "re-encoded pctab"}, // inside re-encoded bytes
		{v: 200, want: 300, in: true},                   // end of pctab, no span starts there
		{v: 230, want: 330, in: true},
		{v: 250, want: 350, in: true}, // end of the last span
		{v: 205, want: 205, in: false},
		{v: 1000, want: 1000, in: false},
	}
	for _, tt := range tests {
		got, in, err := m.addr(tt.v)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("addr(%d): error %v, want one containing %q", tt.v, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || in != tt.in {
			t.Errorf("addr(%d) = %d, %v, %v; want %d, %v", tt.v, got, in, err, tt.want, tt.in)
		}
	}
	s := m.shift(1000, 5000)
	if got, _, _ := s.addr(1080); got != 5096 {
		t.Errorf("shifted addr(1080) = %d, want 5096", got)
	}
}

func TestAlignUp(t *testing.T) {
	for _, tt := range []struct{ x, a, want uint64 }{
		{0, 8, 0}, {1, 8, 8}, {8, 8, 8}, {9, 16, 16}, {5, 1, 5}, {5, 0, 5}, {0x1001, 0x1000, 0x2000},
	} {
		if got := alignUp(tt.x, tt.a); got != tt.want {
			t.Errorf("alignUp(%d, %d) = %d, want %d", tt.x, tt.a, got, tt.want)
		}
	}
}

func TestExtend(t *testing.T) {
	tests := []struct {
		name string
		in   pcvalue.Table
		n    uint32
		want pcvalue.Table
	}{
		{"adds -1", pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 3, Value: 7}}, Len: 6}, 10,
			pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 3, Value: 7}, {PC: 6, Value: -1}}, Len: 10}},
		{"already -1", pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 3, Value: -1}}, Len: 6}, 10,
			pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 3, Value: -1}}, Len: 10}},
		{"drops runs at the old end", pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 6, Value: 9}}, Len: 6}, 8,
			pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 6, Value: -1}}, Len: 8}},
		{"empty", pcvalue.Table{}, 4, pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: -1}}, Len: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := extend(tt.in, tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("extend: (-want +got)\n%s", diff)
			}
			for pc := uint32(0); pc < tt.n; pc++ {
				want := int32(-1)
				if pc < tt.in.Len {
					want, _ = tt.in.Lookup(pc)
				}
				if v, _ := got.Lookup(pc); v != want {
					t.Errorf("pc %d: %d, want %d", pc, v, want)
				}
			}
		})
	}
}

func TestVariantByName(t *testing.T) {
	for _, tt := range []struct {
		name, want, err string
	}{
		{"", "spec", ""},
		{"spec", "spec", ""},
		{"compact", "compact", ""},
		{"spec-pool", "spec-pool", ""},
		{"nope", "", `unknown variant "nope"`},
	} {
		v, err := VariantByName(tt.name)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("VariantByName(%q): error %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || v.Name != tt.want {
			t.Errorf("VariantByName(%q) = %q, %v; want %q", tt.name, v.Name, err, tt.want)
		}
	}
}

// TestCheckVarintPCLn: varint pcln tables are rewrite-binary's only in
// the layout it writes them in (replace mode, derived lengths,
// cf-palette-short); Check refuses them in any other before it reads a
// table.
func TestCheckVarintPCLn(t *testing.T) {
	for _, l := range []objscan.Linear{
		{Mode: "append", Variant: "cf-palette-short", Derived: true},
		{Mode: "replace", Variant: "cf-palette-short"},
		{Mode: "replace", Variant: "compact-fast", Derived: true},
	} {
		l.PCLnVarint = true
		f := &objscan.File{Linear: &l}
		if _, err := Check(f, f, 1); err == nil || !strings.Contains(err.Error(), "varint pcln") {
			t.Errorf("%+v: Check = %v, want a refusal", l, err)
		}
	}
}

// TestNameTable builds tables from names of an old table: its strings in
// the order added, a suffix of a longer name (added before or after it)
// as an offset into it, an equal string at another old offset once by
// value or again, and a name read back at each offset is the name added.
func TestNameTable(t *testing.T) {
	old := "xx\x00main.f\x00runtime.g\x00main.f\x00"
	cstr := func(off int) string { return old[off : off+strings.IndexByte(old[off:], 0)] }
	adds := []int{3, 15, 10, 13, 20, 10} // main.f, me.g, runtime.g, time.g, main.f (a copy), runtime.g
	for _, tc := range []struct {
		byValue bool
		table   string
		offs    []uint32
	}{
		{true, "main.f\x00runtime.g\x00", []uint32{0, 12, 7, 10, 0, 7}},
		{false, "main.f\x00runtime.g\x00main.f\x00", []uint32{0, 12, 7, 10, 17, 7}},
	} {
		tab := nameTable{byValue: tc.byValue}
		for i, off := range adds {
			if got := tab.add(uint64(off), cstr(off)); got != i {
				t.Fatalf("add %d returned %d", i, got)
			}
		}
		out, offs, err := tab.write([]byte("hdr"), 3)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != "hdr"+tc.table || !slices.Equal(offs, tc.offs) || tab.strings != strings.Count(tc.table, "\x00") {
			t.Errorf("byValue %v: table %q, offsets %v, %d strings; want %q, %v", tc.byValue, out, offs, tab.strings, "hdr"+tc.table, tc.offs)
		}
		for i, off := range offs {
			s := string(out[3+off:])
			if got := s[:strings.IndexByte(s, 0)]; got != cstr(adds[i]) {
				t.Errorf("byValue %v: name %d reads back as %q, want %q", tc.byValue, i, got, cstr(adds[i]))
			}
		}
	}
}
