package stat

import (
	"math"
	"testing"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		xs      []float64
		median  float64
		bounded bool
	}{
		{nil, 0, false},
		{[]float64{3}, 3, false},
		{[]float64{1, 2, 3, 4, 5}, 3, false},
		{[]float64{6, 1, 5, 2, 4, 3}, 3.5, true},
		{[]float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 5.5, true},
	} {
		s := Of(c.xs)
		if s.Median != c.median || s.Bounded() != c.bounded || s.N != len(c.xs) {
			t.Errorf("Of(%v) = %+v; want median %v, bounded %v", c.xs, s, c.median, c.bounded)
		}
		if s.Bounded() && (s.Low > s.Median || s.High < s.Median || s.Confidence < Confidence) {
			t.Errorf("Of(%v) = %+v: interval does not hold the median at >= %v", c.xs, s, Confidence)
		}
	}
	// Six values: the 95% interval of the median is the whole range.
	if s := Of([]float64{6, 1, 5, 2, 4, 3}); s.Low != 1 || s.High != 6 {
		t.Errorf("six values: interval [%v, %v], want [1, 6]", s.Low, s.High)
	}
}

func TestRatios(t *testing.T) {
	s := Ratios([]float64{1, 2, 3, 4, 5, 6, 7}, []float64{2, 4, 6, 8, 10, 0, 14})
	if s.N != 6 || s.Median != 0.5 || s.Low != 0.5 || s.High != 0.5 {
		t.Errorf("Ratios = %+v; want 6 ratios of exactly 0.5", s)
	}
	if got := s.Format("%.2f"); got != "0.50 [0.50, 0.50]" {
		t.Errorf("Format = %q", got)
	}
	if got := Of([]float64{1, 2}).Format("%.1f"); got != "1.5 [no CI: 2 runs < 6]" {
		t.Errorf("Format = %q", got)
	}
	if math.IsNaN(Ratios(nil, nil).Median) {
		t.Error("NaN median of nothing")
	}
}
