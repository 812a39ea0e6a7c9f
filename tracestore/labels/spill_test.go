package labels

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
)

// randomBuilder returns a builder of n samples, in random order of time
// with many equal times, under labels and stacks, that spills with limit.
func randomBuilder(n int, limit int64, dir string) (*builder, func(b *builder)) {
	b := &builder{strIdx: map[string]int{"": 0}, strs: []string{""}, stackIdx: map[string]int{}, labelIdx: map[Label]int{{}: 0}, labels: []Label{{}}, samples: [][]Sample{nil}, opts: Options{MemLimit: limit, TempDir: dir}}
	r := rand.New(rand.NewPCG(7, 8))
	stacks := []int{b.stack([]string{"main.a", Folded()}), b.stack([]string{"main.b"}), b.stack([]string{"main.c", "main.a"})}
	labels := []int{0, b.label(Label{"query", "q1"}), b.label(Label{"query", "q2"}), b.label(Label{"user", "u"})}
	type add struct {
		l int
		s Sample
	}
	var adds []add
	for i := range n {
		adds = append(adds, add{labels[r.IntN(len(labels))], Sample{Time: int64(r.IntN(n/2+1)) - 3, Goroutine: int64(i%5) - 1, Stack: stacks[r.IntN(len(stacks))]}})
	}
	return b, func(b *builder) {
		for _, a := range adds {
			b.samples[a.l] = append(b.samples[a.l], a.s)
			if b.held++; b.opts.MemLimit > 0 && b.held*SampleBytes > b.opts.MemLimit {
				if err := b.spill(); err != nil {
					panic(err)
				}
			}
		}
	}
}

// TestSpillSame writes indexes of samples held in memory and spilled in
// runs of one sample and more, and finds the same bytes.
func TestSpillSame(t *testing.T) {
	for _, n := range []int{0, 1, 2, 100, 5000} {
		want, fill := randomBuilder(n, 0, "")
		fill(want)
		var wb bytes.Buffer
		if err := want.write(&wb, 99); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(wb.Bytes()); err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int64{1, SampleBytes * 7, SampleBytes * 1000} {
			dir := t.TempDir()
			b, fill := randomBuilder(n, limit, dir)
			fill(b)
			var gb bytes.Buffer
			if err := b.write(&gb, 99); err != nil {
				t.Fatalf("%d samples, limit %d: %v", n, limit, err)
			}
			if !bytes.Equal(gb.Bytes(), wb.Bytes()) {
				t.Errorf("%d samples, limit %d (%d runs): the index differs from the unspilled one", n, limit, len(b.bounds))
			}
			if n >= 100 && limit < SampleBytes*int64(n)/2 && len(b.bounds) < 2 {
				t.Errorf("%d samples, limit %d: %d runs", n, limit, len(b.bounds))
			}
			b.close()
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("%d files left", len(ents))
			}
		}
	}
}

// spilledBuilder returns a builder whose temporary file holds data, cut
// into runs at the offsets in cuts, with counts for its labels from the
// low bits of counts.
func spilledBuilder(t testing.TB, dir string, data, cuts []byte, counts uint64) *builder {
	b, _ := randomBuilder(0, 1, dir)
	f, err := os.CreateTemp(dir, "runs-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	b.runs, b.runW = f, bufio.NewWriter(f)
	var at int64
	for i := 0; i+1 < len(cuts); i += 2 {
		c := int64(binary.LittleEndian.Uint16(cuts[i:])) % (int64(len(data)) + 1)
		at = max(at, c)
		b.bounds = append(b.bounds, at)
	}
	b.bounds = append(b.bounds, int64(len(data)))
	b.spilled = make([]int64, len(b.samples))
	for l := range b.spilled {
		b.spilled[l] = int64(counts >> (8 * l) & 0xff)
	}
	return b
}

// TestSpillHostile gives the merge runs out of order, of unknown labels
// and stacks, truncated and miscounted: an error wrapping ErrSpill.
func TestSpillHostile(t *testing.T) {
	rec := func(l, stack uint32, tm int64) []byte {
		out := binary.LittleEndian.AppendUint32(nil, l)
		out = binary.LittleEndian.AppendUint32(out, stack)
		out = binary.LittleEndian.AppendUint64(out, uint64(tm))
		return binary.LittleEndian.AppendUint64(out, 1)
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name   string
		data   []byte
		counts uint64
	}{
		{"times out of order", cat(rec(1, 0, 5), rec(1, 0, 4)), 2 << 8},
		{"labels out of order", cat(rec(2, 0, 5), rec(1, 0, 6)), 1<<8 | 1<<16},
		{"unknown label", rec(9, 0, 5), 0},
		{"unknown stack", rec(1, 9, 5), 1 << 8},
		{"truncated", rec(1, 0, 5)[:20], 1 << 8},
		{"miscounted", cat(rec(1, 0, 5), rec(1, 0, 6)), 1 << 8},
		{"time out of range", rec(1, 0, 1<<62+1), 1 << 8},
	} {
		b := spilledBuilder(t, t.TempDir(), tc.data, nil, tc.counts)
		if err := b.write(&bytes.Buffer{}, 0); !errors.Is(err, ErrSpill) {
			t.Errorf("%s: %v, want ErrSpill", tc.name, err)
		}
		b.close()
	}
	b := spilledBuilder(t, t.TempDir(), cat(rec(1, 0, 5), rec(1, 0, 6), rec(3, 2, 1)), nil, 2<<8|1<<24)
	var w bytes.Buffer
	if err := b.write(&w, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(w.Bytes()); err != nil {
		t.Fatal(err)
	}
	b.close()
}

// FuzzSpilledSamples writes an index from an arbitrary temporary file cut
// into arbitrary runs: an error, or an index that reads back.
func FuzzSpilledSamples(f *testing.F) {
	b, fill := randomBuilder(40, SampleBytes*9, f.TempDir())
	fill(b)
	b.runW.Flush()
	data, _ := os.ReadFile(b.runs.Name())
	var cuts []byte
	for _, x := range b.bounds {
		cuts = binary.LittleEndian.AppendUint16(cuts, uint16(x))
	}
	var counts uint64
	for l, c := range b.spilled {
		counts |= uint64(c) << (8 * l)
	}
	f.Add(data, cuts, counts)
	b.close()
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data, cuts []byte, counts uint64) {
		b := spilledBuilder(t, dir, data, cuts, counts)
		defer b.close()
		var w bytes.Buffer
		if err := b.write(&w, 0); err != nil {
			return
		}
		x, err := Read(w.Bytes())
		if err != nil {
			t.Fatalf("the index written does not read: %v", err)
		}
		var n int
		for _, l := range x.Labels() {
			n += len(x.Samples(l, -1<<63, 1<<63-1))
		}
		if int64(n)*SampleBytes > int64(len(data)) {
			t.Fatalf("%d samples from %d bytes", n, len(data))
		}
	})
}
