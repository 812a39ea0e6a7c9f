package diskmap

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pctab/pctab/internal/pagecache"
)

// seedShape builds the seed's benchmark map: 100,000 key hashes with 10
// pages each.
func seedShape() (*Builder, []uint32) {
	r := rand.New(rand.NewPCG(561388, 1))
	b := NewBuilder()
	keys := make([]uint32, 0, 100_000)
	for len(keys) < 100_000 {
		h := r.Uint32()
		if _, dup := b.pages[h]; dup {
			continue
		}
		keys = append(keys, h)
		for p := range 10 {
			b.AddHash(h, uint32(p*1000)+r.Uint32N(1000))
		}
	}
	return b, keys
}

// TestSeedShapeSize checks the size of the seed's benchmark map: the seed
// reports 4,850,000 bytes, which is 100,000 keys of 8 bytes, 1,000,000
// pages of 4 bytes and 12,500 buckets of 8 keys.
func TestSeedShapeSize(t *testing.T) {
	b, _ := seedShape()
	if got := b.Size(); got != 4_850_000 {
		t.Errorf("seed-shaped map: %d bytes, the seed has 4,850,000", got)
	}
	var buf bytes.Buffer
	n, _ := b.WriteChecked(&buf)
	if want := int64(4_850_000 + 4*12_500 + 12); n != want {
		t.Errorf("checked file: %d bytes, want %d", n, want)
	}
}

func writeFile(b testing.TB, bl *Builder) string {
	dir := os.Getenv("DISKMAP_BENCH_DIR") // a disk-backed directory for cold reads (not tmpfs)
	if dir == "" {
		dir = b.TempDir()
	}
	f, err := os.CreateTemp(dir, "diskmap-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := bl.WriteChecked(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return f.Name()
}

// BenchmarkLookup looks up random keys of the seed-shaped map: in memory
// (the bare map, as the seed's "reading from an in-memory map"), and from
// a checked file mapped into memory, its pages in the page cache (the
// seed's "reading directly from disk").
func BenchmarkLookup(b *testing.B) {
	bl, keys := seedShape()
	var buf bytes.Buffer
	bl.WriteTo(&buf)
	bare := New(buf.Bytes())
	path := writeFile(b, bl)
	mapped, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer mapped.Close()
	for _, tc := range []struct {
		name string
		m    *Map
	}{{"memory", bare}, {"mapped-file", mapped}} {
		b.Run(tc.name, func(b *testing.B) {
			dst := make([]uint32, 0, 64)
			for i := range b.N {
				var all bool
				dst, all = tc.m.AppendLookupHash(dst[:0], keys[(i*7919)%len(keys)])
				if all || len(dst) != 10 {
					b.Fatalf("lookup: %d pages, all %v", len(dst), all)
				}
			}
		})
	}
}

// BenchmarkLookupCold opens the seed-shaped map's file, looks one key up
// and closes it, with the file's pages dropped from the page cache before
// each iteration (outside the timer): a lookup that waits for the disk.
func BenchmarkLookupCold(b *testing.B) {
	bl, keys := seedShape()
	path := writeFile(b, bl)
	for i := range b.N {
		b.StopTimer()
		if err := pagecache.Drop(path); err != nil {
			b.Skipf("cannot drop %s from the page cache: %v", filepath.Base(path), err)
		}
		b.StartTimer()
		m, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if got, all := m.LookupHash(keys[(i*7919)%len(keys)]); all || len(got) != 10 {
			b.Fatalf("lookup: %d pages, all %v", len(got), all)
		}
		m.Close()
	}
}
