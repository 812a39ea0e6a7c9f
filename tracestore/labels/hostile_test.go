package labels

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// validIndex is a small index written by the builder: three labels, two
// stacks, five samples.
func validIndex(t testing.TB) []byte {
	b := &builder{strIdx: map[string]int{"": 0}, strs: []string{""}, stackIdx: map[string]int{}, labelIdx: map[Label]int{{}: 0}, labels: []Label{{}}, samples: [][]Sample{nil}}
	s1 := b.stack([]string{"main.spin", Folded(), "main.worker"})
	s2 := b.stack([]string{"runtime.mallocgc", "main.worker"})
	q1, q2 := b.label(Label{"query", "q1"}), b.label(Label{"query", "q2"})
	b.samples[q1] = []Sample{{Time: 30, Goroutine: 7, Stack: s1}, {Time: 10, Goroutine: 7, Stack: s2}}
	b.samples[q2] = []Sample{{Time: 20, Goroutine: 8, Stack: s1}}
	b.samples[0] = []Sample{{Time: 5, Goroutine: -1, Stack: s2}, {Time: 1 << 40, Goroutine: 1, Stack: s2}}
	var w bytes.Buffer
	if err := b.write(&w, 12345); err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

// Folded is the name trampoline frames get.
func Folded() string { return "github.com/pctab/pctab/trampoline.trampoline" }

// reseal recomputes the header's checksum, so that a change reaches the
// checks past it.
func reseal(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[headerSize:], castagnoli))
	return b
}

func TestReadValid(t *testing.T) {
	x, err := Read(validIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	if x.BaseTime != 12345 || len(x.Labels()) != 3 {
		t.Fatalf("base %d, labels %v", x.BaseTime, x.Labels())
	}
	q1 := Label{"query", "q1"}
	ss := x.Samples(q1, 0, 100)
	if len(ss) != 2 || ss[0].Time != 10 || ss[1].Time != 30 || ss[0].Goroutine != 7 {
		t.Fatalf("q1 samples %+v", ss)
	}
	if got := x.Samples(q1, 11, 30); len(got) != 0 {
		t.Errorf("q1 in [11, 30): %+v", got)
	}
	fc := x.ByFunc(ss)
	if fc[0] != (FuncCount{"main.worker", 0, 2}) && fc[0].Func != "main.spin" {
		t.Errorf("by function: %+v", fc)
	}
	flat := map[string]int64{}
	for _, c := range fc {
		flat[c.Func] = c.Flat
	}
	if flat["main.spin"] != 1 || flat["runtime.mallocgc"] != 1 || flat["main.worker"] != 0 {
		t.Errorf("by function: %+v", fc)
	}
	if x.Samples(Label{"query", "q9"}, 0, 100) != nil {
		t.Error("samples of a label the index does not have")
	}
}

// TestReadHostile feeds Read truncated, corrupted and hand-made indexes:
// each gets an error wrapping ErrFormat (or decodes), none panics, and
// none costs more than a small multiple of its size in memory.
func TestReadHostile(t *testing.T) {
	valid := validIndex(t)
	check := func(name string, b []byte) {
		t.Helper()
		var err error
		n := allocs.Least(3, func() { _, err = Read(b) })
		if err != nil && !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v does not wrap ErrFormat", name, err)
		}
		if limit := uint64(64*len(b) + 64<<10); n > limit {
			t.Errorf("%s: %d bytes allocated for %d of input (limit %d)", name, n, len(b), limit)
		}
	}
	for i := range len(valid) {
		check("truncated", append([]byte(nil), valid[:i]...))
		check("truncated, resealed", reseal(append([]byte(nil), valid[:max(i, headerSize)]...)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		b := append([]byte(nil), valid...)
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		check("corrupt", b)
		if _, err := Read(b); err == nil && !bytes.Equal(b, valid) && !bytes.Equal(b[headerSize:], valid[headerSize:]) {
			t.Errorf("a corrupt body passes its checksum")
		}
		check("corrupt, resealed", reseal(b))
	}
	// Counts far beyond the bytes: refused before any allocation.
	for i := range 4 {
		b := append([]byte(nil), valid...)
		binary.LittleEndian.PutUint32(b[16+4*i:], 1<<32-1)
		check("huge count", reseal(b))
		if _, err := Read(reseal(b)); err == nil {
			t.Errorf("count %d of 2^32-1 accepted", i)
		}
	}
	// A string length or stack depth past the end.
	hdr := make([]byte, headerSize)
	copy(hdr, magic)
	binary.LittleEndian.PutUint32(hdr[16:], 1)
	b := reseal(binary.AppendUvarint(append([]byte(nil), hdr...), 1<<62))
	if _, err := Read(b); !errors.Is(err, ErrFormat) {
		t.Errorf("a string of 2^62 bytes: %v", err)
	}
}

// FuzzRead checks that Read never panics and that what it accepts can be
// queried.
func FuzzRead(f *testing.F) {
	f.Add(validIndex(f))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= headerSize && string(b[:4]) == magic {
			b = reseal(b) // reach past the checksum
		}
		x, err := Read(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, l := range x.Labels() {
			x.ByFunc(x.Samples(l, -1<<63, 1<<63-1))
		}
	})
}
