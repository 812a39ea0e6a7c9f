package rewrite

import (
	"bytes"
	"debug/elf"
	"debug/pe"
	"encoding/binary"
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

// TestShrinkRelro checks where PT_GNU_RELRO and its PT_LOAD end once the
// pclntab at the end of the segment leaves it.
func TestShrinkRelro(t *testing.T) {
	const load, relro = uint32(elf.PT_LOAD), uint32(elf.PT_GNU_RELRO)
	tests := []struct {
		name            string
		next            uint64 // address of the next PT_LOAD
		pcln            uint64
		wantEnd, wantFz uint64 // the segment's and RELRO's memory end, and RELRO's file size
	}{
		{"rounded to the page", 0x59c000, 0x51c2e0, 0x51d000, 0x272e0},
		{"already on a page", 0x59c000, 0x51c000, 0x51c000, 0x27000},
		{"next segment in the same page", 0x51c800, 0x51c2e0, 0x51c2e0, 0x272e0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &elfFile{progs: []elfProg{
				{Type: load, Off: 0xf5000, Vaddr: 0x4f5000, Filesz: 0xa64d0, Memsz: 0xa64d0, Align: 0x1000},
				{Type: relro, Off: 0xf5000, Vaddr: 0x4f5000, Filesz: 0xa64d0, Memsz: 0xa64d0, Align: 1},
				{Type: load, Off: 0x19c000, Vaddr: tt.next, Filesz: 0xc0c0, Memsz: 0x410e0, Align: 0x1000},
			}}
			if ri := relroOver(e, 0, elfSect{Addr: tt.pcln, Size: 0x4f5000 + 0xa64d0 - tt.pcln}); ri != 1 {
				t.Fatalf("relroOver = %d, want 1", ri)
			}
			e.progs[0].Filesz, e.progs[0].Memsz = tt.pcln-0x4f5000, tt.pcln-0x4f5000
			if note := e.shrinkRelro(1, 0, tt.pcln, 0x1000); !strings.Contains(note, "PT_GNU_RELRO") {
				t.Errorf("note %q", note)
			}
			L, R := e.progs[0], e.progs[1]
			if L.Vaddr+L.Memsz != tt.wantEnd || R.Vaddr+R.Memsz != tt.wantEnd || R.Filesz != tt.wantFz || L.Filesz != tt.pcln-0x4f5000 || R.Off != L.Off {
				t.Errorf("segment %+v, RELRO %+v; want both to end at %#x, RELRO file size %#x", L, R, tt.wantEnd, tt.wantFz)
			}
		})
	}
	// No RELRO over the table: nothing to shrink.
	e := &elfFile{progs: []elfProg{{Type: load, Vaddr: 0x1000, Memsz: 0x3000, Align: 0x1000}, {Type: relro, Vaddr: 0x1000, Memsz: 0x800}}}
	if ri := relroOver(e, 0, elfSect{Addr: 0x2000, Size: 0x2000}); ri != -1 {
		t.Errorf("relroOver with RELRO before the table = %d, want -1", ri)
	}
	if note := e.shrinkRelro(-1, 0, 0x2000, 0x1000); note != "" {
		t.Errorf("shrinkRelro(-1) = %q", note)
	}
}

// TestFixRelocsTextStart checks that the relocation of pcHeader.textStart
// moves with the word to the new table, which remap alone refuses (the
// pcHeader is re-encoded), and keeps its addend.
func TestFixRelocsTextStart(t *testing.T) {
	le := binary.LittleEndian
	rela := make([]byte, 2*24)
	le.PutUint64(rela[0:], 0x51c2f8) // textStart of the old pcHeader at 0x51c2e0
	le.PutUint64(rela[8:], uint64(elf.R_X86_64_RELATIVE))
	le.PutUint64(rela[16:], 0x401000)
	le.PutUint64(rela[24:], 0x59d2a0) // a moduledata word, not moved
	le.PutUint64(rela[32:], uint64(elf.R_X86_64_RELATIVE))
	le.PutUint64(rela[40:], 0x4a1000)
	e := &elfFile{order: le, is64: true, mach: elf.EM_X86_64, sects: []elfSect{{}, {Name: ".rela", Type: uint32(elf.SHT_RELA), Off: 0, Size: 48, Entsize: 24}}}
	m := remap{{name: "pcHeader", oldStart: 0x51c2e0, oldEnd: 0x51c340, newStart: 0x5de2e0, newEnd: 0x5de350}}
	out := slices.Clone(rela)
	if _, err := fixRelocs(e, out, m, nil, 0x51c2e0, nil, 0); err == nil || !strings.Contains(err.Error(), "re-encoded pcHeader") {
		t.Errorf("without the textStart move: %v, want the remap's refusal", err)
	}
	out = slices.Clone(rela)
	note, err := fixRelocs(e, out, m, nil, 0x51c2e0, map[uint64]uint64{0x51c2f8: 0x5de2f8}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if off, add := le.Uint64(out), le.Uint64(out[16:]); off != 0x5de2f8 || add != 0x401000 {
		t.Errorf("relocation at %#x to %#x, want at 0x5de2f8 to 0x401000", off, add)
	}
	if !bytes.Equal(out[24:], rela[24:]) || !strings.Contains(note, "pcHeader.textStart") {
		t.Errorf("other relocation changed or note %q", note)
	}
}

// TestMoveTextStartPE checks the base relocation edit of a PE rewrite: the
// old entry becomes ABSOLUTE, a block for the new word follows the
// directory, whose size and section grow; without room it is refused.
func TestMoveTextStartPE(t *testing.T) {
	le := binary.LittleEndian
	const sectAt, dirAt, relocOff = 0x100, 0x80, 0x200
	setup := func(rawSize uint32) ([]byte, []peSect, peBaseRelocs) {
		out := make([]byte, 0x600)
		le.PutUint32(out[dirAt:], 0x1000)
		le.PutUint32(out[dirAt+4:], 0x10)
		le.PutUint32(out[relocOff:], 0x5000) // a block: page, size, 4 entries
		le.PutUint32(out[relocOff+4:], 0x10)
		le.PutUint16(out[relocOff+8:], 0xa010)
		le.PutUint16(out[relocOff+10:], 0xa018) // pcHeader.textStart
		le.PutUint16(out[relocOff+12:], 0xa020)
		table := []peSect{{oldIndex: 1, va: 0x1000, vsize: 0x10, rawOff: relocOff, rawSize: rawSize, oldRawOff: relocOff}}
		return out, table, peBaseRelocs{dir: pe.DataDirectory{VirtualAddress: 0x1000, Size: 0x10}, tsEntry: relocOff + 10, tsType: 10}
	}
	out, table, br := setup(0x200)
	note, err := br.moveTextStart(out, table, sectAt, dirAt, 0x9018)
	if err != nil || !strings.Contains(note, "pcHeader.textStart") {
		t.Fatalf("moveTextStart: %q, %v", note, err)
	}
	want := []struct {
		at   int
		n    int
		want uint32
	}{
		{relocOff + 10, 2, 0}, // the old entry, now ABSOLUTE
		{relocOff + 8, 2, 0xa010}, {relocOff + 12, 2, 0xa020},
		{relocOff + 0x10, 4, 0x9000}, {relocOff + 0x14, 4, peRelocBlock}, {relocOff + 0x18, 2, 0xa018}, {relocOff + 0x1a, 2, 0},
		{dirAt + 4, 4, 0x10 + peRelocBlock},  // the directory's size
		{sectAt + 8, 4, 0x10 + peRelocBlock}, // the section's virtual size
	}
	for _, w := range want {
		got := uint32(le.Uint16(out[w.at:]))
		if w.n == 4 {
			got = le.Uint32(out[w.at:])
		}
		if got != w.want {
			t.Errorf("at %#x: %#x, want %#x", w.at, got, w.want)
		}
	}
	out, table, br = setup(0x10 + peRelocBlock - 2)
	if _, err := br.moveTextStart(out, table, sectAt, dirAt, 0x9018); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("without room: %v", err)
	}
	out, table, br = setup(0x200)
	out[relocOff+0x14] = 1
	if _, err := br.moveTextStart(out, table, sectAt, dirAt, 0x9018); err == nil || !strings.Contains(err.Error(), "not zero padding") {
		t.Errorf("over non-zero bytes: %v", err)
	}
	if got := br.room(table); got != 0x200-0x10 {
		t.Errorf("room %d, want %d", got, 0x200-0x10)
	}
}

// TestSplitSegment checks the split of an externally linked PIE's
// writable segment around its pclntab: zero-fill up to the page where the
// table ended, and a new PT_LOAD from the table's end, congruent to its
// file offset; a table within one page is refused.
func TestSplitSegment(t *testing.T) {
	const load = uint32(elf.PT_LOAD)
	L := elfProg{Type: load, Flags: uint32(elf.PF_R | elf.PF_W), Off: 0xf8e50, Vaddr: 0xf9e50, Filesz: 0xb3432, Memsz: 0xe84b0, Align: 0x1000}
	e := &elfFile{progs: []elfProg{{Type: load, Vaddr: 0, Memsz: 0x1000, Align: 0x1000}, L, {Type: uint32(elf.PT_GNU_RELRO), Vaddr: 0xf9e50, Memsz: 0xa71b0}}}
	P := elfSect{Addr: 0x1210a0, Off: 0x1200a0, Size: 0x7fd38} // ends at 0x1a0dd8
	e.progs[1].Filesz, e.progs[1].Memsz = P.Addr-L.Vaddr, P.Addr-L.Vaddr
	note, err := e.splitSegment(1, P, L, 0x1abdd8, 0x1000)
	if err != nil || !strings.Contains(note, "zero-fill") {
		t.Fatalf("splitSegment: %q, %v", note, err)
	}
	want := []elfProg{
		{Type: load, Vaddr: 0, Memsz: 0x1000, Align: 0x1000},
		{Type: load, Flags: L.Flags, Off: 0xf8e50, Vaddr: 0xf9e50, Filesz: 0x27250, Memsz: 0x1a0000 - 0xf9e50, Align: 0x1000},
		{Type: load, Flags: L.Flags, Off: 0x1abdd8, Vaddr: 0x1a0dd8, Paddr: 0x1a0dd8, Filesz: 0xf9e50 + 0xb3432 - 0x1a0dd8, Memsz: 0xf9e50 + 0xe84b0 - 0x1a0dd8, Align: 0x1000},
		{Type: uint32(elf.PT_GNU_RELRO), Vaddr: 0xf9e50, Memsz: 0xa71b0},
	}
	if diff := cmp.Diff(want, e.progs, cmp.AllowUnexported(elfProg{})); diff != "" {
		t.Errorf("segments (-want +got):\n%s", diff)
	}
	e = &elfFile{progs: []elfProg{L}}
	if _, err := e.splitSegment(0, elfSect{Addr: 0x100100, Size: 0x800}, L, 0x1000, 0x1000); err == nil || !strings.Contains(err.Error(), "whole") {
		t.Errorf("a table within a page: %v", err)
	}
}
