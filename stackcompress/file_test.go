package stackcompress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// smallFile returns a DAG file of a few pages and the stacks it holds.
func smallFile(t testing.TB, l Layout) ([]byte, []inserted) {
	b, in := build(t, Options{Layout: l, PageNodes: 8}, 3, 60, 12)
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), in
}

// readAll opens data and reads every stack in want. It returns the first
// error, or nil if every stack matched.
func readAll(data []byte, want []inserted) (err error, wrong bool) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{})
	if err != nil {
		return err, false
	}
	for _, x := range want {
		got, err := r.Stack(x.id, nil)
		if err != nil {
			return err, false
		}
		if !slices.Equal(got, x.stack) {
			return nil, true
		}
	}
	return nil, false
}

// TestEveryByteFlipDetected flips each byte of small files. Every byte is
// covered by a checksum, so every flip must give an error: never a panic,
// never a wrong stack, never silence.
func TestEveryByteFlipDetected(t *testing.T) {
	for _, l := range testLayouts {
		data, in := smallFile(t, l)
		if err, wrong := readAll(data, in); err != nil || wrong {
			t.Fatalf("%v: intact file: err %v, wrong %v", l, err, wrong)
		}
		for i := range data {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				d := slices.Clone(data)
				d[i] ^= x
				err, wrong := readAll(d, in)
				if wrong {
					t.Fatalf("%v: byte %d ^ %#x: wrong stack without an error", l, i, x)
				}
				if err == nil {
					t.Fatalf("%v: byte %d ^ %#x: no error", l, i, x)
				}
			}
		}
		// Truncation.
		for n := range len(data) {
			if err, _ := readAll(data[:n], in); err == nil {
				t.Fatalf("%v: truncated to %d bytes: no error", l, n)
			}
		}
	}
}

// reseal recomputes every checksum of a possibly corrupt file that it can
// locate, so that fuzzing reaches the structural checks behind them.
func reseal(d []byte) {
	if len(d) < fileHeaderSize {
		return
	}
	le := binary.LittleEndian
	npages := uint64(le.Uint32(d[24:]))
	dirEnd := fileHeaderSize + npages*dirEntrySize
	if dirEnd <= uint64(len(d)) {
		for i := uint64(0); i < npages; i++ {
			e := d[fileHeaderSize+i*dirEntrySize:]
			off, n := le.Uint64(e), uint64(le.Uint32(e[8:]))
			if off <= uint64(len(d)) && n <= uint64(len(d))-off {
				le.PutUint32(e[12:], crc32.Checksum(d[off:off+n], castagnoli))
			}
		}
		le.PutUint32(d[28:], crc32.Checksum(d[fileHeaderSize:dirEnd], castagnoli))
	}
	dictOff, dictN := le.Uint64(d[40:]), le.Uint64(d[32:])
	w := uint64(d[13]) / 8
	if dictN <= uint64(len(d)) {
		n := (dictN*w + 7) / 8 * 8
		if dictOff <= uint64(len(d)) && n <= uint64(len(d))-dictOff {
			le.PutUint32(d[48:], crc32.Checksum(d[dictOff:dictOff+n], castagnoli))
		}
	}
	le.PutUint32(d[60:], crc32.Checksum(d[:60], castagnoli))
}

// exercise opens data and reads a few stacks. It must not panic or hang.
func exercise(t *testing.T, data []byte) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{MemoryBudget: int64(len(data))})
	if err != nil {
		return
	}
	n := r.Nodes()
	for _, id := range []uint64{0, 1, n / 3, n / 2, n - 1, n} {
		s, err := r.Stack(id, nil)
		if err == nil && uint64(len(s)) > n {
			t.Fatalf("stack %d has %d frames in a DAG of %d nodes", id, len(s), n)
		}
	}
	if st := r.Stats(); st.PeakResident > int64(len(data)) {
		t.Fatalf("resident %d bytes for a %d-byte file", st.PeakResident, len(data))
	}
}

func fuzzSeeds(f *testing.F) {
	for _, l := range testLayouts {
		data, _ := smallFile(f, l)
		f.Add(data)
	}
	b, _ := NewBuilder(Options{})
	var buf bytes.Buffer
	b.WriteTo(&buf)
	f.Add(buf.Bytes())
}

func FuzzOpen(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data)
	})
}

// FuzzOpenResealed is FuzzOpen with the checksums repaired after mutation,
// so that the structural validation of headers and pages is what rejects
// bad input.
func FuzzOpenResealed(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		reseal(data)
		exercise(t, data)
	})
}

// FuzzRoundTrip inserts stacks decoded from the input into every test
// layout (f8 and f16 included, with frames cut to their width) and checks that each comes back intact, from the builder and from
// its file.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 1, 2, 4, 0, 9, 9, 9, 9}, uint8(3))
	f.Add([]byte{0, 0, 0, 0, 255, 255, 0, 1}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, pageLog uint8) {
		// Byte 0 ends a stack; other bytes are frames, spread over 64 bits.
		var stacks [][]uint64
		var cur []uint64
		for _, c := range data {
			if c == 0 {
				stacks = append(stacks, cur)
				cur = nil
				continue
			}
			cur = append(cur, uint64(c)*0x0101010101)
		}
		stacks = append(stacks, cur)
		layouts := append(slices.Clone(testLayouts), Layout{FrameBits: 8, Parents: ParentDelta}, Layout{FrameBits: 8, Parents: ParentChain, Dictionary: true})
		for _, l := range layouts {
			b, err := NewBuilder(Options{Layout: l, PageNodes: 1 << (pageLog % 6)})
			if err != nil {
				t.Fatal(err)
			}
			// Narrow layouts get the frames cut to their width, so every
			// layout, f8 and f16 included, sees every stack.
			fb := layoutFrameBits(l)
			var in []inserted
			for i, s := range stacks {
				if fb < 64 {
					s = slices.Clone(s)
					for k := range s {
						s[k] &= 1<<fb - 1
					}
				}
				id, err := b.Insert(uint64(i%3), s)
				if err != nil {
					t.Fatalf("%v: %v", l, err)
				}
				in = append(in, inserted{id, s})
			}
			checkStacks(t, "builder", b, in)
			var buf bytes.Buffer
			b.WriteTo(&buf)
			r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkStacks(t, "reader", r, in)
		}
	})
}

// TestPagesChangedUnderReader loads every page of a file, then overwrites
// the loaded bytes behind the header (as a file rewritten under its
// mapping would), and walks every stack: each walk must end, in bounds,
// with a stack or an error, never a panic.
func TestPagesChangedUnderReader(t *testing.T) {
	for _, l := range testLayouts {
		for _, fill := range []byte{0x00, 0xff, 0x5a} {
			b, in := build(t, Options{Layout: l, PageNodes: 1024}, 7, 3000, 40)
			var buf bytes.Buffer
			if _, err := b.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkStacks(t, "reader", r, in)
			for i := range r.loaded {
				d := r.loaded[i].data
				for j := pageHeaderSize; j < len(d); j++ {
					d[j] = fill ^ byte(j*7)
				}
			}
			for _, x := range in {
				r.Stack(x.id, nil) // any stack or error; a panic fails the test
			}
		}
	}
}

// TestOpenErrorNamesFile checks that Open's errors name the file once and
// the package once, mapped or read: they said "stackcompress: FILE:
// stackcompress: corrupt DAG ...".
func TestOpenErrorNamesFile(t *testing.T) {
	data, _ := smallFile(t, LayoutSeed())
	path := filepath.Join(t.TempDir(), "cut.dag")
	if err := os.WriteFile(path, data[:len(data)/2], 0o666); err != nil {
		t.Fatal(err)
	}
	for _, nommap := range []bool{false, true} {
		_, err := Open(path, ReaderOptions{NoMmap: nommap})
		if err == nil {
			t.Fatalf("nommap %v: a cut file opened", nommap)
		}
		if msg := err.Error(); strings.Count(msg, "stackcompress") != 1 || !strings.HasPrefix(msg, path+": stackcompress: ") {
			t.Errorf("nommap %v: %q, want the file's name, then the package's once", nommap, msg)
		}
	}
}

// TestMaxDepth checks ReaderOptions.MaxDepth: a packed chain of a million
// frames takes some 160 KB of file, and Stack allocated 42 MB for it
// (258 times the file); with MaxDepth it fails past the depth and
// allocates the bounded stack's worth.
func TestMaxDepth(t *testing.T) {
	b, err := NewBuilder(Options{Layout: LayoutPacked()})
	if err != nil {
		t.Fatal(err)
	}
	deep := make([]uint64, 1<<20)
	for i := range deep {
		deep[i] = 7
	}
	deepID, err := b.Insert(1, deep)
	if err != nil {
		t.Fatal(err)
	}
	shallowID, err := b.Insert(2, deep[:100])
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	t.Logf("%d bytes of file", len(data))
	if _, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{MaxDepth: -1}); err == nil {
		t.Error("a negative MaxDepth was accepted")
	}
	for _, c := range []struct {
		depth   int
		id      uint64
		frames  int
		corrupt bool
	}{
		{0, deepID, 1 << 20, false},
		{1 << 20, deepID, 1 << 20, false},
		{1<<20 - 1, deepID, 0, true},
		{1024, deepID, 0, true},
		{1024, shallowID, 100, false},
		{100, shallowID, 100, false},
		{99, shallowID, 0, true},
	} {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), ReaderOptions{MaxDepth: c.depth})
		if err != nil {
			t.Fatal(err)
		}
		r.Stack(c.id, nil) // the pages loaded
		var got []uint64
		alloc := allocs.Bytes(func() { got, err = r.Stack(c.id, nil) })
		var ce *CorruptError
		if c.corrupt != errors.As(err, &ce) || (!c.corrupt && (err != nil || len(got) != c.frames)) {
			t.Errorf("MaxDepth %d, stack %d: %d frames, %v; want %d frames, corrupt %v", c.depth, c.id, len(got), err, c.frames, c.corrupt)
		}
		if c.depth > 0 && c.depth <= 1024 && alloc > 64<<10 {
			t.Errorf("MaxDepth %d, stack %d: %d bytes allocated", c.depth, c.id, alloc)
		}
	}
}
