package diskmap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// seedExample is the worked example of the seed: one bucket, hashes 1 and 2,
// pages {1: [1, 2], 2: [1]}.
const seedExample = "04000000 14000000 1C000000 01000000 02000000 01000000 02000000 01000000"

func unhex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(string(bytes.ReplaceAll([]byte(s), []byte(" "), nil)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, b *Builder) []byte {
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n != b.Size() {
		t.Fatalf("WriteTo wrote %d bytes, returned %d, Size says %d", buf.Len(), n, b.Size())
	}
	return buf.Bytes()
}

func TestSeedExample(t *testing.T) {
	data := unhex(t, seedExample)
	m := New(data)
	for _, tc := range []struct {
		h    uint32
		want []uint32
	}{{1, []uint32{1, 2}}, {2, []uint32{1}}, {3, nil}} {
		got, all := m.LookupHash(tc.h)
		if all || !slices.Equal(got, tc.want) {
			t.Errorf("LookupHash(%d) = %v, %v; want %v", tc.h, got, all, tc.want)
		}
	}
	if m.Len() != 2 {
		t.Errorf("Len = %d", m.Len())
	}
	b := NewBuilder()
	b.AddHash(2, 1)
	b.AddHash(1, 2)
	b.AddHash(1, 1)
	b.AddHash(1, 2)
	if got := write(t, b); !bytes.Equal(got, data) {
		t.Errorf("Builder wrote\n%x\nthe seed has\n%x", got, data)
	}
}

func TestHash(t *testing.T) {
	for _, k := range []string{"", "a", "runtime.mallocgc", "net/http.(*conn).serve"} {
		h := fnv.New32a()
		h.Write([]byte(k))
		if got, want := Hash([]byte(k)), h.Sum32(); got != want {
			t.Errorf("Hash(%q) = %#x, FNV-1a says %#x", k, got, want)
		}
	}
}

// TestRandom checks maps of every size class against a Go map: no false
// negatives, and no false positives between distinct hashes.
func TestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, keys := range []int{0, 1, 7, 8, 9, 100, 5000} {
		want := map[uint32]map[uint32]bool{}
		b := NewBuilder()
		for range keys {
			h := r.Uint32()
			if want[h] == nil {
				want[h] = map[uint32]bool{}
			}
			for range 1 + r.IntN(20) {
				p := r.Uint32N(1000)
				want[h][p] = true
				b.AddHash(h, p)
			}
		}
		m := New(write(t, b))
		if m.Len() != len(want) {
			t.Errorf("%d keys: Len = %d, want %d", keys, m.Len(), len(want))
		}
		for h, ps := range want {
			got, all := m.LookupHash(h)
			var w []uint32
			for p := range ps {
				w = append(w, p)
			}
			slices.Sort(w)
			if all || !slices.Equal(got, w) {
				t.Fatalf("%d keys: LookupHash(%#x) = %v, %v; want %v", keys, h, got, all, w)
			}
		}
		for range 1000 {
			h := r.Uint32()
			if want[h] != nil {
				continue
			}
			if got, all := m.LookupHash(h); all || len(got) != 0 {
				t.Fatalf("%d keys: absent hash %#x: %v, %v", keys, h, got, all)
			}
		}
	}
}

func TestKeys(t *testing.T) {
	b := NewBuilder()
	b.Add([]byte("main.main"), 3)
	b.Add([]byte("main.main"), 1)
	b.Add([]byte("runtime.gopark"), 1)
	m := New(write(t, b))
	if got, all := m.Lookup([]byte("main.main")); all || !slices.Equal(got, []uint32{1, 3}) {
		t.Errorf("main.main: %v, %v", got, all)
	}
	dst := make([]uint32, 0, 8)
	got, all := m.AppendLookup(dst, []byte("runtime.gopark"))
	if all || !slices.Equal(got, []uint32{1}) || &got[0] != &dst[:1][0] {
		t.Errorf("AppendLookup: %v, %v", got, all)
	}
	if got, all := m.Lookup([]byte("main.f")); all || got != nil {
		t.Errorf("main.f: %v, %v", got, all)
	}
}

// corrupt returns good with a random corruption of kind trial%4.
func corrupt(r *rand.Rand, good []byte, trial int) []byte {
	data := slices.Clone(good)
	switch trial % 4 {
	case 0: // one random byte
		data[r.IntN(len(data))] = byte(r.Uint32())
	case 1: // truncation
		data = data[:r.IntN(len(data))]
	case 2: // an offset, hash or page of 2^32-1
		o := 4 * r.IntN(len(data)/4)
		binary.LittleEndian.PutUint32(data[o:], 0xffffffff)
	case 3: // a run of garbage
		o := r.IntN(len(data))
		for i := o; i < min(len(data), o+16); i++ {
			data[i] = byte(r.Uint32())
		}
	}
	return data
}

// TestCorrupt changes bytes of real maps and checks that no lookup panics;
// that a checked map never misses a page (a lookup finds its pages or
// answers "every page"); and counts what a bare map, in the seed's
// layout, cannot see.
func TestCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b := NewBuilder()
	for range 300 {
		h := r.Uint32()
		for range 1 + r.IntN(5) {
			b.AddHash(h, r.Uint32N(100))
		}
	}
	bare := write(t, b)
	var buf bytes.Buffer
	if _, err := b.WriteChecked(&buf); err != nil {
		t.Fatal(err)
	}
	checked := buf.Bytes()
	if err := NewChecked(checked).Verify(); err != nil {
		t.Fatal(err)
	}
	want := map[uint32][]uint32{}
	for h := range b.pages {
		want[h], _ = New(bare).LookupHash(h)
	}
	for _, tc := range []struct {
		name string
		good []byte
		open func([]byte) *Map
	}{{"bare", bare, New}, {"checked", checked, NewChecked}} {
		missed, detected := 0, 0
		var byKind [4]int
		for trial := range 4000 {
			data := corrupt(r, tc.good, trial)
			m := tc.open(data)
			m.Len()
			if tc.name == "checked" && !bytes.Equal(data, tc.good) {
				if m.Verify() == nil {
					t.Fatalf("trial %d: Verify passed a corrupt map", trial)
				}
			}
			for h, w := range want {
				got, all := m.LookupHash(h)
				if all {
					detected++
					continue
				}
				for _, p := range w {
					if !slices.Contains(got, p) {
						missed++
						byKind[trial%4]++
					}
				}
			}
		}
		t.Logf("%s: %d lookups answered every page, %d pages missed (by kind of corruption: byte, truncation, 2^32-1, run: %v)", tc.name, detected, missed, byKind)
		if tc.name == "checked" && missed > 0 {
			t.Errorf("checked map: %d pages missed", missed)
		}
	}
	for _, data := range [][]byte{nil, {}, {4, 0, 0}, {0, 0, 0, 0}, {8, 0, 0, 0}, {4, 0, 0, 0}} {
		got, all := New(data).LookupHash(1)
		empty := len(data) == 4 && data[0] == 4
		if empty != !all || len(got) != 0 {
			t.Errorf("map %x: %v, %v", data, got, all)
		}
	}
}

func TestOpen(t *testing.T) {
	b := NewBuilder()
	for i := range 1000 {
		b.AddHash(uint32(i*7919), uint32(i%17))
	}
	path := filepath.Join(t.TempDir(), "m")
	var buf bytes.Buffer
	if _, err := b.WriteChecked(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, all := m.LookupHash(7919 * 5); all || !slices.Equal(got, []uint32{5}) {
		t.Errorf("LookupHash = %v, %v", got, all)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o666)
	e, err := Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, all := e.LookupHash(1); !all {
		t.Error("an empty file is not a map, but a lookup did not answer every page")
	}
	bare := filepath.Join(t.TempDir(), "bare")
	os.WriteFile(bare, write(t, b), 0o666)
	if m, err := Open(bare); err != nil {
		t.Fatal(err)
	} else if _, all := m.LookupHash(7919 * 5); !all {
		t.Error("a file without a trailer did not answer every page")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

func FuzzMap(f *testing.F) {
	f.Add(unhex(f, seedExample), uint32(1))
	b := NewBuilder()
	for i := range 40 {
		b.AddHash(uint32(i)*2654435761, uint32(i%5))
	}
	var buf bytes.Buffer
	b.WriteTo(&buf)
	f.Add(buf.Bytes(), uint32(2654435761))
	buf.Reset()
	b.WriteChecked(&buf)
	f.Add(buf.Bytes(), uint32(2654435761))
	f.Fuzz(func(t *testing.T, data []byte, h uint32) {
		for _, m := range []*Map{New(data), NewChecked(data)} {
			got, all := m.LookupHash(h)
			if all && len(got) != 0 {
				t.Fatal("every page, with pages")
			}
			if !slices.IsSorted(got) {
				t.Fatalf("pages %v not sorted", got)
			}
			if n := m.Len(); n > len(data)/8 {
				t.Fatalf("Len %d for %d bytes", n, len(data))
			}
			m.Verify()
		}
	})
}

// TestEmptyChecked checks that a map without keys is a valid map that
// answers "no pages", not a corrupt one that answers "every page" (a store
// whose trace has no stacks has empty indexes).
func TestEmptyChecked(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewBuilder().WriteChecked(&buf); err != nil {
		t.Fatal(err)
	}
	m := NewChecked(buf.Bytes())
	if p, all := m.LookupHash(5); all || len(p) != 0 {
		t.Errorf("empty map: %v, every page %v", p, all)
	}
	if m.Len() != 0 || m.Verify() != nil {
		t.Errorf("empty map: Len %d, Verify %v", m.Len(), m.Verify())
	}
}
