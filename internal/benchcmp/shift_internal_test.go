package benchcmp

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// TestKthDiff checks kthDiff against every difference listed and sorted,
// on samples with ties and without.
func TestKthDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		a, b := make([]float64, 1+r.IntN(12)), make([]float64, 1+r.IntN(12))
		for i := range a {
			a[i] = float64(r.IntN(20)) / 4 // ties when trial is even
			if trial%2 == 1 {
				a[i] = r.Float64()
			}
		}
		for i := range b {
			b[i] = float64(r.IntN(20)) / 4
			if trial%2 == 1 {
				b[i] = r.Float64()
			}
		}
		slices.Sort(a)
		slices.Sort(b)
		var all []float64
		for _, x := range b {
			for _, y := range a {
				all = append(all, x-y)
			}
		}
		slices.Sort(all)
		for k, want := range all {
			if got := kthDiff(a, b, k); got != want {
				t.Fatalf("trial %d, a=%v b=%v: kthDiff(%d) = %v, want %v", trial, a, b, k, got, want)
			}
		}
	}
}

// TestShiftLarge checks that Shift on many samples a side allocates about
// their own size, not one value per pair (10^10 pairs here).
func TestShiftLarge(t *testing.T) {
	const n = 100_000
	base, vals := make([]float64, n), make([]float64, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range base {
		base[i] = 100 + r.Float64()
		vals[i] = 103 + r.Float64()
	}
	var s Stat
	got := allocs.Least(1, func() { s = Shift(base, vals) })
	if limit := uint64(4 * 8 * 2 * n); got > limit {
		t.Errorf("Shift of %d samples a side allocated %d bytes, want at most %d", n, got, limit)
	}
	if !(s.Lo < s.Center && s.Center < s.Hi && s.Lo > 1.02 && s.Hi < 1.04) {
		t.Errorf("Shift = %+v, want about 1.03 with a narrow interval", s)
	}
}
