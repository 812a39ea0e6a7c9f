package tracestore

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPixelsWide is issue 26's item 5 for the store: over ranges of 2^63
// ns or more, the pixel boundaries overflowed. PixelStart and PixelOf are
// checked against big-integer arithmetic, and QueryRow over the widest
// ranges against Query over each pixel.
func TestPixelsWide(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ranges := [][2]int64{{math.MinInt64, math.MaxInt64}, {-1 << 62, 1<<62 + 12345}, {0, 1}, {-5, 3}, {math.MaxInt64 - 10, math.MaxInt64}}
	for range 200 {
		a, b := r.Int64()-r.Int64()/2, r.Int64()
		if a > b {
			a, b = b, a
		}
		if a < b {
			ranges = append(ranges, [2]int64{a, b})
		}
	}
	for _, rg := range ranges {
		t0, t1 := rg[0], rg[1]
		w := new(big.Int).Sub(big.NewInt(t1), big.NewInt(t0))
		for _, px := range []int64{1, 2, 3, 7, 1000, 8192} {
			prev := t0
			for _, p := range slices.Compact(slices.Sorted(slices.Values([]int64{0, min(1, px), px / 2, px - 1, px}))) {
				want := new(big.Int).Mul(w, big.NewInt(p))
				want.Quo(want, big.NewInt(px)).Add(want, big.NewInt(t0))
				got := PixelStart(t0, t1, px, p)
				if got != want.Int64() {
					t.Fatalf("PixelStart(%d, %d, %d, %d) = %d, want %s", t0, t1, px, p, got, want)
				}
				if got < prev {
					t.Fatalf("PixelStart(%d, %d, %d, %d) = %d, before pixel start %d", t0, t1, px, p, got, prev)
				}
				prev = got
				if p < px && PixelStart(t0, t1, px, p+1) > got {
					if q := PixelOf(t0, t1, px, got); q != p {
						t.Fatalf("PixelOf(%d, %d, %d, %d) = %d, want %d", t0, t1, px, got, q, p)
					}
				}
			}
		}
	}
	s, _ := build(t, smallTrace(t))
	cells := make([]Cell, 64)
	for _, rg := range ranges[:5] {
		for l := range s.NumLanes() {
			s.QueryRow(l, rg[0], rg[1], cells)
			for p := range cells {
				a, b := PixelStart(rg[0], rg[1], 64, int64(p)), PixelStart(rg[0], rg[1], 64, int64(p+1))
				q := s.Query(l, a, b)
				if c := cells[p]; int64(c.Count) != min(q.Count, 65535) || c.Span != q.Longest {
					t.Fatalf("lane %d, [%d, %d) pixel %d: cell %+v, Query %+v", l, rg[0], rg[1], p, c, q)
				}
			}
		}
	}
}
