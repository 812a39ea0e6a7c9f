package stackcompress

import (
	"math/rand/v2"
	"testing"
	"testing/quick"
)

// TestPageProperty encodes random pages in every layout and checks that
// parsing with validation gives back every frame and parent: random node
// counts, first indices, frame magnitudes from 0 to 64 bits, and parents
// that are chained, near, far or the root.
func TestPageProperty(t *testing.T) {
	layouts := []Layout{
		LayoutSeed(), LayoutDelta32(), LayoutPacked(),
		{FrameBits: 0, Parents: ParentAbsolute},
		{FrameBits: 0, Parents: ParentDelta},
		{FrameBits: 64, Parents: ParentChain},
		{FrameBits: 8, Parents: ParentChain},
	}
	f := func(seed uint64, shiftSeed, countSeed uint8, frameBits uint8, firstPage uint32) bool {
		rng := rand.New(rand.NewPCG(seed, 1))
		shift := uint(shiftSeed % 13)
		pn := uint64(1) << shift
		count := uint64(countSeed)%pn + 1
		page := uint64(firstPage % 1000)
		if shift == 0 && page == 0 {
			page = 1 // a page of one node at index 0 holds only the root
		}
		first := page << shift
		fb := uint(frameBits % 65)
		for _, l := range layouts {
			fb := fb
			if l.FrameBits != 0 {
				fb = min(fb, uint(l.FrameBits))
			}
			frames := make([]uint64, count)
			parents := make([]uint64, count)
			for i := range frames {
				idx := first + uint64(i)
				if idx == 0 {
					continue // the root: frame 0, parent 0
				}
				frames[i] = rng.Uint64()
				if fb < 64 {
					frames[i] &= 1<<fb - 1
				}
				switch rng.IntN(4) {
				case 0, 1:
					parents[i] = idx - 1
				case 2:
					parents[i] = idx - 1 - rng.Uint64N(min(idx, 300))
				default:
					parents[i] = rng.Uint64N(idx)
				}
			}
			data := pageEncoding{layout: l, pageShift: shift}.encode(first, frames, parents)
			p, err := parsePage(data, 0, first, count, false, 0, true)
			if err != nil {
				t.Logf("%v: first %d count %d: %v", l, first, count, err)
				return false
			}
			for i := range count {
				if p.frame(i) != frames[i] || p.parent(i) != parents[i] {
					t.Logf("%v: node %d: frame %#x parent %d, want %#x %d", l, first+i, p.frame(i), p.parent(i), frames[i], parents[i])
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// TestBits checks getBits against putBits at every width and alignment.
func TestBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for w := uint(0); w <= 64; w++ {
		const n = 100
		b := make([]byte, (n*64+7)/8+tailPad)
		want := make([]uint64, n)
		for i := range want {
			want[i] = rng.Uint64()
			if w < 64 {
				want[i] &= 1<<w - 1
			}
			putBits(b, 3+uint64(i)*uint64(w), w, want[i])
		}
		for i := range want {
			if got := getBits(b, 3+uint64(i)*uint64(w), w); got != want[i] {
				t.Fatalf("width %d value %d: %#x, want %#x", w, i, got, want[i])
			}
		}
	}
}
