package stackcompress

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// workload generates coherent stacks the way a sampled program produces
// them: each thread keeps a current stack and pops and pushes a few frames
// between samples. Frames come from a pool, so prefixes repeat.
type workload struct {
	rng     *rand.Rand
	pool    []uint64
	threads [][]uint64
}

func newWorkload(seed uint64, poolSize, threads int, frameBits uint) *workload {
	w := &workload{rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	for range poolSize {
		f := w.rng.Uint64()
		if frameBits < 64 {
			f &= 1<<frameBits - 1
		}
		w.pool = append(w.pool, f)
	}
	w.threads = make([][]uint64, threads)
	return w
}

// next returns a thread and its new stack, leaf first.
func (w *workload) next() (uint64, []uint64) {
	t := w.rng.IntN(len(w.threads))
	s := w.threads[t] // root first
	s = s[:len(s)-min(len(s), w.rng.IntN(4))]
	for range w.rng.IntN(4) {
		if len(s) < 40 {
			// Frames depend a little on the caller, as call sites do.
			k := w.rng.IntN(len(w.pool))
			if len(s) > 0 && w.rng.IntN(3) > 0 {
				k = int((s[len(s)-1] + uint64(w.rng.IntN(3))) % uint64(len(w.pool)))
			}
			s = append(s, w.pool[k])
		}
	}
	w.threads[t] = s
	leafFirst := slices.Clone(s)
	slices.Reverse(leafFirst)
	return uint64(t), leafFirst
}

var testLayouts = []Layout{
	LayoutSeed(),
	LayoutFrame32(),
	LayoutDelta32(),
	LayoutPacked(),
	{FrameBits: 0, Parents: ParentChain},
	{FrameBits: 64, Parents: ParentDelta, Dictionary: true},
	{FrameBits: 0, Parents: ParentAbsolute},
	{FrameBits: 16, Parents: ParentChain},
}

func layoutFrameBits(l Layout) uint {
	if l.FrameBits == 0 || l.Dictionary {
		return 64
	}
	return uint(l.FrameBits)
}

type inserted struct {
	id    uint64
	stack []uint64
}

// build inserts n workload stacks and returns the builder and the stacks
// with their IDs.
func build(t testing.TB, opts Options, seed uint64, n, pool int) (*Builder, []inserted) {
	t.Helper()
	b, err := NewBuilder(opts)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkload(seed, pool, 5, layoutFrameBits(b.Layout()))
	var out []inserted
	for range n {
		th, s := w.next()
		id, err := b.Insert(th, s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, inserted{id, s})
		// Load factor never exceeds 1/2.
		if (b.n-1)*2 > b.nodes.len() {
			t.Fatalf("node map holds %d entries in %d slots", b.n-1, b.nodes.len())
		}
	}
	return b, out
}

type stacker interface {
	Stack(id uint64, dst []uint64) ([]uint64, error)
}

func checkStacks(t testing.TB, what string, s stacker, want []inserted) {
	t.Helper()
	var buf []uint64
	for i, in := range want {
		var err error
		buf, err = s.Stack(in.id, buf[:0])
		if err != nil {
			t.Fatalf("%s: stack %d (ID %d): %v", what, i, in.id, err)
		}
		if !slices.Equal(buf, in.stack) {
			t.Fatalf("%s: stack %d (ID %d) = %x, want %x", what, i, in.id, buf, in.stack)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, l := range testLayouts {
		for _, pn := range []int{1, 2, 16, 1 << 10, DefaultPageNodes, 1 << 16} {
			for _, noCache := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/page%d/nocache=%v", l, pn, noCache), func(t *testing.T) {
					b, in := build(t, Options{Layout: l, PageNodes: pn, NoCache: noCache}, uint64(pn), 3000, 300)
					checkStacks(t, "builder", b, in)
					var buf bytes.Buffer
					n, err := b.WriteTo(&buf)
					if err != nil {
						t.Fatal(err)
					}
					if sz := b.Size(); uint64(n) != sz.FileBytes || n != int64(buf.Len()) {
						t.Fatalf("WriteTo wrote %d bytes, Size says %d, buffer has %d", n, sz.FileBytes, buf.Len())
					}
					r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReaderOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if r.Nodes() != b.Len() || r.Layout() != l {
						t.Fatalf("reader has %d nodes, layout %v; builder %d, %v", r.Nodes(), r.Layout(), b.Len(), l)
					}
					checkStacks(t, "reader", r, in)
					st := b.Stats()
					if st.Stacks != 3000 || st.Lookups+st.CacheHits != st.Frames {
						t.Errorf("stats %+v: lookups plus cache hits should equal frames", st)
					}
					if noCache && st.CacheHits != 0 {
						t.Errorf("cache disabled but %d hits", st.CacheHits)
					}
				})
			}
		}
	}
}

// TestCanonical checks the DAG's defining property: two stacks get the same
// ID exactly when they are equal, and there is one node per distinct
// non-empty stack suffix from the root.
func TestCanonical(t *testing.T) {
	for seed := range uint64(20) {
		b, in := build(t, Options{Layout: LayoutPacked(), PageNodes: 8}, seed, 500, 20+int(seed))
		ids := map[string]uint64{}
		prefixes := map[string]bool{}
		for _, x := range in {
			k := fmt.Sprint(x.stack)
			if id, ok := ids[k]; ok && id != x.id {
				t.Fatalf("seed %d: stack %x has IDs %d and %d", seed, x.stack, id, x.id)
			}
			ids[k] = x.id
			for i := range x.stack {
				prefixes[fmt.Sprint(x.stack[i:])] = true
			}
		}
		seen := map[uint64]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("seed %d: two distinct stacks share ID %d", seed, id)
			}
			seen[id] = true
		}
		if got, want := b.Len(), uint64(len(prefixes))+1; got != want {
			t.Fatalf("seed %d: %d nodes, want %d (distinct root paths plus the root)", seed, got, want)
		}
	}
}

func TestGetOrInsertErrors(t *testing.T) {
	b, err := NewBuilder(Options{Layout: LayoutFrame32()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetOrInsert(1, 1); err == nil {
		t.Error("GetOrInsert with a parent that is not a node succeeded")
	}
	if _, err := b.GetOrInsert(1<<32, 0); !errors.Is(err, ErrFrameRange) {
		t.Errorf("GetOrInsert of a 33-bit frame in a 32-bit layout: %v, want ErrFrameRange", err)
	}
	if _, err := b.Insert(0, []uint64{1, 2, 1 << 40}); !errors.Is(err, ErrFrameRange) {
		t.Errorf("Insert of a 41-bit frame: %v, want ErrFrameRange", err)
	}
	id, err := b.Insert(0, []uint64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Stack(id, nil); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("after a failed insert, stack = %v", got)
	}
	if _, err := b.Stack(b.Len(), nil); err == nil {
		t.Error("Stack of an ID past the end succeeded")
	}
	d, _ := NewBuilder(Options{Layout: Layout{FrameBits: 8, Parents: ParentChain, Dictionary: true}})
	for i := range uint64(300) {
		_, err := d.GetOrInsert(i<<40, 0)
		if (i < 256) != (err == nil) || (err != nil && !errors.Is(err, ErrFrameRange)) {
			t.Fatalf("8-bit dictionary layout, frame %d: %v", i, err)
		}
	}
	for _, o := range []Options{{PageNodes: 3}, {PageNodes: -1}, {PageNodes: MaxPageNodes * 2}, {Layout: Layout{FrameBits: 12, Parents: ParentDelta}}, {Layout: Layout{FrameBits: 8}}} {
		if _, err := NewBuilder(o); err == nil {
			t.Errorf("NewBuilder(%+v) succeeded", o)
		}
	}
}

func TestEmptyStack(t *testing.T) {
	b, _ := NewBuilder(Options{})
	id, err := b.Insert(7, nil)
	if err != nil || id != 0 {
		t.Fatalf("Insert(nil) = %d, %v; want 0", id, err)
	}
	var buf bytes.Buffer
	b.WriteTo(&buf)
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := r.Stack(0, nil); err != nil || len(s) != 0 {
		t.Fatalf("Stack(0) = %v, %v", s, err)
	}
}

// TestWideSlots lowers the 64-bit slot threshold so that both maps switch
// to 64-bit slots.
func TestWideSlots(t *testing.T) {
	b, err := NewBuilder(Options{Layout: LayoutPacked(), PageNodes: 64})
	if err != nil {
		t.Fatal(err)
	}
	b.wideAt = 100
	w := newWorkload(1, 400, 3, 64)
	var in []inserted
	for range 2000 {
		th, s := w.next()
		id, err := b.Insert(th, s)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, inserted{id, s})
	}
	if b.nodes.s64 == nil || b.dslots.s64 == nil {
		t.Fatalf("maps did not widen: %d nodes, %d frames", b.n, len(b.dict))
	}
	checkStacks(t, "wide", b, in)
}

// TestSeedWidths checks that absolute pages pick their parent width from
// the largest index they can hold, as the Superluminal design does.
func TestSeedWidths(t *testing.T) {
	b, err := NewBuilder(Options{Layout: LayoutSeed(), PageNodes: 64})
	if err != nil {
		t.Fatal(err)
	}
	parent := uint64(0)
	for i := range 400 {
		if parent, err = b.GetOrInsert(uint64(i), parent); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range b.pages {
		want := uint(8)
		if (uint64(i)+1)*64-1 > 255 {
			want = 16
		}
		if p.pbits != want || p.fbits != 64 {
			t.Errorf("page %d: parent width %d, frame width %d; want %d, 64", i, p.pbits, p.fbits, want)
		}
	}
}

func TestReaderBudget(t *testing.T) {
	b, in := build(t, Options{Layout: LayoutPacked(), PageNodes: 16}, 9, 4000, 400)
	dir := t.TempDir()
	path := filepath.Join(dir, "dag")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sz := b.Size()
	if sz.Pages < 20 {
		t.Fatalf("only %d pages", sz.Pages)
	}
	maxPage := 0
	for _, p := range b.plan().pages {
		maxPage = max(maxPage, len(p))
	}
	budget := int64(sz.DictBytes) + 3*int64(maxPage)
	for _, noMmap := range []bool{false, true} {
		t.Run(fmt.Sprintf("nommap=%v", noMmap), func(t *testing.T) {
			r, err := Open(path, ReaderOptions{MemoryBudget: budget, NoMmap: noMmap})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			var buf []uint64
			for range 3000 {
				x := in[rng.IntN(len(in))]
				if buf, err = r.Stack(x.id, buf[:0]); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(buf, x.stack) {
					t.Fatalf("stack %d = %x, want %x", x.id, buf, x.stack)
				}
				if st := r.Stats(); st.Resident > budget {
					t.Fatalf("resident %d exceeds budget %d", st.Resident, budget)
				}
			}
			st := r.Stats()
			if st.PeakResident > budget || st.Evictions == 0 || st.Loads <= uint64(sz.Pages) {
				t.Fatalf("stats %+v with budget %d and %d pages: want peak within budget and evictions", st, budget, sz.Pages)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Stack(in[0].id, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("Stack after Close: %v", err)
			}
		})
	}
	if _, err := Open(path, ReaderOptions{MemoryBudget: int64(maxPage) - 1}); err == nil {
		t.Fatal("Open with a budget below the largest page succeeded")
	}
}

// TestMaxThreads bounds the coherency cache to fewer threads than the
// workload has; stacks still round-trip and the bound holds.
func TestMaxThreads(t *testing.T) {
	for _, max := range []int{1, 2, 3} {
		b, err := NewBuilder(Options{MaxThreads: max, PageNodes: 64})
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkload(3, 200, 5, 64)
		var in []inserted
		for range 2000 {
			th, s := w.next()
			id, err := b.Insert(th, s)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, inserted{id, s})
			if st := b.Stats(); st.Threads > uint64(max) {
				t.Fatalf("max %d: %d threads cached", max, st.Threads)
			}
		}
		st := b.Stats()
		if st.Forgotten == 0 || st.CacheHits == 0 {
			t.Errorf("max %d: stats %+v", max, st)
		}
		checkStacks(t, "bounded cache", b, in)
	}
	if _, err := NewBuilder(Options{MaxThreads: -1}); err == nil {
		t.Error("negative MaxThreads accepted")
	}
}

// unmix inverts the fixed multiply-xorshift mixer stackcompress hashed
// with before its hash was keyed: unmix(h) is the frame that the old hash1
// sent to h.
func unmix(h uint64) uint64 {
	const mulB = 0xd6e8feb86659fd93
	inv := uint64(mulB) // the inverse of an odd number mod 2^64, by Newton's method
	for range 6 {
		inv *= 2 - mulB*inv
	}
	h ^= h >> 32
	h *= inv
	h ^= h >> 32
	h *= inv
	return h
}

// TestCraftedCollisions inserts frames crafted so that an unkeyed hash
// would put them all in one slot of any table up to 2^24 slots, as an
// adversary writing a trace could. With a keyed hash the probes stay short
// and the time linear.
func TestCraftedCollisions(t *testing.T) {
	const n = 20000
	for _, l := range []Layout{LayoutSeed(), {FrameBits: 64, Parents: ParentDelta, Dictionary: true}} {
		b, err := NewBuilder(Options{Layout: l, NoCache: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(1); i <= n; i++ {
			f := unmix(i << 24)
			if _, err := b.Insert(0, []uint64{f, f ^ 1}); err != nil {
				t.Fatal(err)
			}
		}
		st := b.Stats()
		if mp := st.MeanProbe(); mp > 4 {
			t.Errorf("%v: mean probe length %.1f over %d lookups, want a few", l, mp, st.Lookups)
		}
		if l.Dictionary && st.DictProbes > 8*st.DictLooks {
			t.Errorf("%v: %d dictionary probes for %d lookups", l, st.DictProbes, st.DictLooks)
		}
	}
}
