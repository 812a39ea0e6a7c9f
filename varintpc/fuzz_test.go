package varintpc

import (
	"bytes"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, s := range [][]byte{
		{0x02, 0x05, 0x00},
		{0x00, 0x03, 0x04, 0x02, 0x00},
		{0x00, 0x00, 0x00, 0x05, 0x00},
		{0x90, 0x03, 0xac, 0x02, 0x00},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x05, 0x00},
		{0xff, 0xff, 0xff, 0xff, 0x1f, 0x01, 0x00},
		{},
	} {
		f.Add(s, uint32(3), uint8(1))
	}
}

// FuzzDecode checks that Decode never panics, and that whatever it accepts
// re-encodes to exactly the bytes it consumed.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, _ uint32, _ uint8) {
		tab, n, err := Decode(data)
		if err != nil {
			return
		}
		if err := tab.Validate(); err != nil {
			t.Fatalf("Decode(% x) gave an invalid table: %v", data, err)
		}
		if enc := Encode(tab); !bytes.Equal(enc, data[:n]) {
			t.Fatalf("Encode(Decode(% x)) = % x", data[:n], enc)
		}
	})
}

// FuzzLookup checks that Lookup never panics and agrees with Decode on
// every table Decode accepts.
func FuzzLookup(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, pc uint32, qsel uint8) {
		q := []uint32{1, 2, 4}[qsel%3]
		v, s, err := Lookup(data, uintptr(pc), q, qsel&4 != 0)
		tab, _, derr := Decode(data)
		if derr != nil || uint64(tab.Len)*uint64(q) >= 1<<32 {
			return
		}
		want, ok := tab.Lookup(pc / q)
		if !ok {
			if err == nil && (v != -1 || s != 0) {
				t.Fatalf("Lookup(% x, %d) past the end = %d, %d", data, pc, v, s)
			}
			return
		}
		if err != nil || v != want {
			t.Fatalf("Lookup(% x, %d, q %d) = %d, %v; Decode says %d", data, pc, q, v, err, want)
		}
	})
}
