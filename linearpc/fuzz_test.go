package linearpc

import (
	"encoding/binary"
	"testing"

	"github.com/pctab/pctab/pcvalue"
)

func addLinearSeeds(f *testing.F) {
	for name, tab := range specialTables() {
		if tab.Len > 4096 {
			continue
		}
		_ = name
		f.Add(Encode(tab), tab.Len, uint32(tab.Len/2))
	}
	f.Add([]byte{0xfe, 0x01}, uint32(600), uint32(300))
	f.Add([]byte{0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}, uint32(600), uint32(599))
	f.Add([]byte{0x01, 0x00, 0x05, 0x01, 0x01}, uint32(10), uint32(0))
}

// FuzzDecode checks that Decode never panics, that what it accepts is a
// valid canonical table, and that the trusted Lookup, run on data Decode
// accepted, agrees with it.
func FuzzDecode(f *testing.F) {
	addLinearSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, textLen, pc uint32) {
		textLen %= 1 << 16
		tab, err := Decode(data, textLen)
		if err != nil {
			return
		}
		if err := tab.Validate(); err != nil {
			t.Fatalf("Decode gave an invalid table: %v", err)
		}
		if textLen == 0 {
			return
		}
		if c := Canonical(tab); len(c.Runs) != len(tab.Runs) {
			t.Fatalf("Decode result is not canonical: %v", tab)
		}
		pc %= textLen
		want, _ := tab.Lookup(pc)
		if got := Lookup(data, textLen, pc); got != want {
			t.Fatalf("Lookup(% x, %d, %d) = %d, Decode says %d", data, textLen, pc, got, want)
		}
	})
}

// FuzzLookupChecked checks that LookupChecked never panics and agrees with
// Decode whenever both succeed.
func FuzzLookupChecked(f *testing.F) {
	addLinearSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, textLen, pc uint32) {
		textLen %= 1 << 16
		got, err := LookupChecked(data, textLen, pc)
		if err != nil {
			return
		}
		tab, derr := Decode(data, textLen)
		if derr != nil {
			return // LookupChecked checks only the chunk it reads
		}
		if want, _ := tab.Lookup(pc); got != want {
			t.Fatalf("LookupChecked(% x, %d, %d) = %d, Decode says %d", data, textLen, pc, got, want)
		}
	})
}

// FuzzVariants builds a table from the fuzz input and checks that every
// variant, standalone and in a set (with Set.Lookup and Set.LookupBranchy),
// answers like the table.
func FuzzVariants(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint32(300))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0, 0x80, 0, 0, 0, 2}, uint32(1000))
	f.Fuzz(func(t *testing.T, b []byte, seed uint32) {
		// Each 3 bytes: run length-1 (1 byte), value (2 bytes, scaled by
		// the seed to reach all widths).
		var tab pcvalue.Table
		for len(b) >= 3 && len(tab.Runs) < 500 {
			v := int32(int16(binary.LittleEndian.Uint16(b[1:]))) * int32(1+seed%70000)
			tab.Runs = append(tab.Runs, pcvalue.Run{PC: tab.Len, Value: v})
			tab.Len += uint32(b[0]) + 1
			b = b[3:]
		}
		if tab.Len == 0 {
			return
		}
		sets := map[string]*Set{}
		var encs [][]byte
		var offs []uint32
		for _, v := range Variants() {
			s := NewSet(v)
			s.Add(pcvalue.Table{Len: 700, Runs: runs(0, 1, 300, 2)})
			offs = append(offs, s.Add(tab))
			sets[v.Name] = s
			encs = append(encs, v.Encode(tab))
		}
		for pc := uint32(0); pc < tab.Len; pc++ {
			want, _ := tab.Lookup(pc)
			for i, v := range Variants() {
				if got := v.Lookup(encs[i], tab.Len, pc); got != want {
					t.Fatalf("%s: pc %d = %d, want %d", v.Name, pc, got, want)
				}
				if got := sets[v.Name].Lookup(offs[i], tab.Len, pc); got != want {
					t.Fatalf("%s set: pc %d = %d, want %d", v.Name, pc, got, want)
				}
				if got := sets[v.Name].LookupBranchy(offs[i], tab.Len, pc); got != want {
					t.Fatalf("%s set, LookupBranchy: pc %d = %d, want %d", v.Name, pc, got, want)
				}
				if got, ok := sets[v.Name].TryLookup(offs[i], tab.Len, pc); ok && got != want {
					t.Fatalf("%s set, TryLookup: pc %d = %d, want %d", v.Name, pc, got, want)
				}
				if got, ok := sets[v.Name].TryLookupPalette(offs[i], tab.Len, pc); ok && got != want {
					t.Fatalf("%s set, TryLookupPalette: pc %d = %d, want %d", v.Name, pc, got, want)
				}
				if got, ok := sets[v.Name].TryLookupBranchy(offs[i], tab.Len, pc); ok && got != want {
					t.Fatalf("%s set, TryLookupBranchy: pc %d = %d, want %d", v.Name, pc, got, want)
				}
			}
		}
		dec, err := Decode(encs[0], tab.Len)
		if err != nil {
			t.Fatal(err)
		}
		if c := Canonical(tab); len(c.Runs) != len(dec.Runs) {
			t.Fatalf("Decode: %d runs, want %d", len(dec.Runs), len(c.Runs))
		}
	})
}

// FuzzTryLookup gives the leaf lookups, which read through unsafe
// pointers, arbitrary bytes, offsets, lengths and PCs: outside their
// contract the value is undefined, but they must not read outside the
// set's data (run with -race, checkptr checks every pointer they form) or
// panic.
func FuzzTryLookup(f *testing.F) {
	f.Add([]byte{0x02, 0x03, 0x0a, 0x25, 0x05, 0x02, 0x27, 0x01}, uint32(0), uint32(20), uint32(9))
	f.Add([]byte{0xfe, 0x10, 0x00, 0x20, 0x00, 0x01, 0x05, 0x01, 0x07}, uint32(0), uint32(700), uint32(600))
	f.Add([]byte{0x1f, 0xff, 0xff}, uint32(1), uint32(1<<16), uint32(1<<24))
	f.Fuzz(func(t *testing.T, data []byte, off, textLen, pc uint32) {
		for _, v := range []Variant{Spec(), variantByName(t, "compact-fast"), variantByName(t, "cf-palette"), variantByName(t, "cf-palette-short"), variantByName(t, "cfps-offset")} {
			s := NewSetOf(v, data)
			s.TryLookup(off, textLen, pc)
			s.TryLookupBranchy(off, textLen, pc)
			s.TryLookup(off%uint32(max(1, len(data))), textLen, pc%max(1, textLen))
			s.TryLookupBranchy(off%uint32(max(1, len(data))), textLen, pc%max(1, textLen))
			s.TryLookupPalette(off, textLen, pc)
			s.TryLookupPalette(off%uint32(max(1, len(data))), textLen, pc%max(1, textLen))
		}
	})
}

func variantByName(t *testing.T, name string) Variant {
	v, err := VariantByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
