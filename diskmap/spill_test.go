package diskmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
)

// TestSpillSame builds maps with and without spilling, under limits from
// one key to all of them, and finds the same bytes, plain and checked.
func TestSpillSame(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, keys := range []int{0, 1, 9, 300, 5000} {
		type hit struct{ h, p uint32 }
		var hits []hit
		for k := range keys {
			h := r.Uint32()
			if k%7 == 0 {
				h = uint32(k) // small hashes: many in bucket 0's neighbours
			}
			for range 1 + r.IntN(30) {
				hits = append(hits, hit{h, r.Uint32N(2000)})
			}
		}
		// As the store adds them: pages rising.
		rising := make([]hit, len(hits))
		copy(rising, hits)
		for i := range rising {
			rising[i].p = uint32(i / 50)
		}
		r.Shuffle(len(rising), func(i, j int) {
			if rising[i].p == rising[j].p {
				rising[i], rising[j] = rising[j], rising[i]
			}
		})
		for _, in := range [][]hit{hits, rising} {
			want := NewBuilder()
			for _, x := range in {
				want.AddHash(x.h, x.p)
			}
			var plain, checked bytes.Buffer
			want.WriteTo(&plain)
			want.WriteChecked(&checked)
			for _, limit := range []int64{1, 100, 1000, 10_000, 100_000, 1 << 30} {
				if limit < 1000 && keys > 300 {
					continue // a run every few hits: slow, and no different
				}
				dir := t.TempDir()
				b := NewSpillBuilder(dir, limit)
				for _, x := range in {
					b.AddHash(x.h, x.p)
				}
				for _, c := range []struct {
					want  []byte
					write func(*bytes.Buffer) (int64, error)
				}{{plain.Bytes(), func(w *bytes.Buffer) (int64, error) { return b.WriteTo(w) }}, {checked.Bytes(), func(w *bytes.Buffer) (int64, error) { return b.WriteChecked(w) }}} {
					var got bytes.Buffer
					n, err := c.write(&got)
					if err != nil {
						t.Fatalf("%d keys, limit %d: %v", keys, limit, err)
					}
					if n != int64(got.Len()) || !bytes.Equal(got.Bytes(), c.want) {
						t.Fatalf("%d keys, limit %d (%d runs): %d bytes (%d said), differ from the unspilled %d", keys, limit, b.Spilled(), got.Len(), n, len(c.want))
					}
				}
				if limit <= 1000 && keys >= 300 && b.Spilled() < 2 {
					t.Errorf("%d keys, limit %d: %d runs", keys, limit, b.Spilled())
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("%d keys, limit %d: %d files left after Close", keys, limit, len(ents))
				}
			}
		}
	}
}

// spillOf returns a Builder whose runs file holds data, cut into runs at
// the offsets cuts gives (each taken modulo the data's length, sorted).
func spillOf(t testing.TB, dir string, data []byte, cuts []byte) *Builder {
	f, err := os.CreateTemp(dir, "runs-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	b := NewSpillBuilder(dir, 64)
	b.runs = f
	var at int64
	for i := 0; i+1 < len(cuts); i += 2 {
		c := int64(binary.LittleEndian.Uint16(cuts[i:]))
		if len(data) > 0 {
			c %= int64(len(data)) + 1
		}
		at = max(at, c)
		b.bounds = append(b.bounds, at)
	}
	b.bounds = append(b.bounds, int64(len(data)))
	return b
}

// TestSpillHostile gives the merge runs files truncated, out of order and
// inconsistent: an error that says so, never a panic, never a map.
func TestSpillHostile(t *testing.T) {
	rec := func(h uint32, pages ...uint32) []byte {
		out := binary.LittleEndian.AppendUint32(nil, h)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(pages)))
		for _, p := range pages {
			out = binary.LittleEndian.AppendUint32(out, p)
		}
		return out
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	good := cat(rec(1, 1, 2), rec(5, 3))
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated record", good[:len(good)-2]},
		{"short header", cat(good, []byte{1, 2, 3})},
		{"hashes out of order", cat(rec(5, 1), rec(1, 2))},
		{"hash twice", cat(rec(5, 1), rec(5, 2))},
		{"pages out of order", rec(1, 3, 2)},
		{"page twice", rec(1, 3, 3)},
		{"no pages", rec(1)},
		{"pages past the run", cat(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1), 1<<30), []byte{0, 0, 0, 0})},
	} {
		b := spillOf(t, t.TempDir(), tc.data, nil)
		var out bytes.Buffer
		_, err := b.WriteChecked(&out)
		if !errors.Is(err, ErrSpill) {
			t.Errorf("%s: %v, want ErrSpill", tc.name, err)
		}
		b.Close()
	}
	b := spillOf(t, t.TempDir(), good, nil)
	var out bytes.Buffer
	if _, err := b.WriteChecked(&out); err != nil {
		t.Fatal(err)
	}
	if err := NewChecked(out.Bytes()).Verify(); err != nil {
		t.Fatal(err)
	}
	b.Close()
}

// FuzzSpillRuns gives the merge an arbitrary runs file cut into arbitrary
// runs: an error or a map that verifies, never a panic.
func FuzzSpillRuns(f *testing.F) {
	b := NewSpillBuilder(f.TempDir(), 100)
	for i := range 60 {
		b.AddHash(uint32(i)*2654435761, uint32(i/7))
	}
	b.writeRun()
	b.runW.Flush()
	data, _ := os.ReadFile(b.runs.Name())
	cuts := binary.LittleEndian.AppendUint16(nil, uint16(b.bounds[0]))
	f.Add(data, cuts, false)
	f.Add(data, cuts, true)
	b.Close()
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data, cuts []byte, limited bool) {
		b := spillOf(t, dir, data, cuts)
		defer b.Close()
		if limited {
			b.limit = 1 // every record its own sorted run
		}
		var out bytes.Buffer
		n, err := b.WriteChecked(&out)
		if err != nil {
			return
		}
		if n != int64(out.Len()) {
			t.Fatalf("wrote %d, said %d", out.Len(), n)
		}
		if err := NewChecked(out.Bytes()).Verify(); err != nil {
			t.Fatalf("the map written does not verify: %v", err)
		}
		if int64(out.Len()) > 4*int64(len(data))+64 {
			t.Fatalf("a map of %d bytes from %d", out.Len(), len(data))
		}
	})
}

// TestSpillMemory adds 4 million hits, 16 MB of pages, to a Builder that
// spills beyond 1 MiB and measures its live heap (after a collection)
// every 500,000 hits and every MiB written: within twice the limit, where
// the unlimited Builder holds all of them.
func TestSpillMemory(t *testing.T) {
	live := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	const limit = 1 << 20
	const hits = 4_000_000
	b := NewSpillBuilder(t.TempDir(), limit)
	defer b.Close()
	base := live()
	var peak int64
	for i := range uint32(hits) {
		// 2,000 keys, each on a page in ten.
		b.AddHash(i%2000*2654435761, i/2000*10+i%10)
		if i%500_000 == 0 {
			peak = max(peak, live()-base)
		}
	}
	adding := peak
	var n int64
	sink := writerFunc(func(p []byte) (int, error) {
		n += int64(len(p))
		if n%(1<<20) < int64(len(p)) {
			peak = max(peak, live()-base)
		}
		return len(p), nil
	})
	if _, err := b.WriteChecked(sink); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d hits, %d bytes written, %d runs: live heap at most %d bytes adding, %d in all", hits, n, b.Spilled(), adding, peak)
	if n < hits*4 {
		t.Fatalf("%d bytes written for %d hits", n, hits)
	}
	if peak > 2*limit+64<<10 {
		t.Errorf("live heap reached %d bytes, limit %d", peak, limit)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
