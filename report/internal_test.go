package report

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHist checks that a hist, filled in pieces and merged, gives the
// Dist that sorting every value gives.
func TestHist(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() int64
		n    int
	}{
		{"empty", func() int64 { return 0 }, 0},
		{"one", func() int64 { return 7 }, 1},
		{"zeros", func() int64 { return 0 }, 100},
		{"small", func() int64 { return r.Int64N(30) }, 1000},
		{"dense edge", func() int64 { return histDense - 2 + r.Int64N(4) }, 1000},
		{"wide", func() int64 { return r.Int64N(1 << 20) }, 5000},
		{"skewed", func() int64 { return int64(r.ExpFloat64() * 2000) }, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all []int64
			parts := make([]hist, 3)
			for i := range tc.n {
				v := tc.gen()
				all = append(all, v)
				parts[i%len(parts)].add(v)
			}
			var h hist
			for i := range parts {
				h.merge(&parts[i])
			}
			if got, want := h.dist(), dist(slices.Clone(all)); got != want {
				t.Errorf("hist %+v, want %+v", got, want)
			}
		})
	}
}

// TestDedup checks dedup with keys that collide: tables are equal only
// when same says so, whatever their keys.
func TestDedup(t *testing.T) {
	// Table i's content is content[i]; keys collide on purpose.
	for _, tc := range []struct {
		name    string
		keys    []uint64
		content []string
		want    []int32
	}{
		{"distinct", []uint64{1, 2, 3}, []string{"a", "b", "c"}, []int32{0, 1, 2}},
		{"equal", []uint64{1, 1, 1}, []string{"a", "a", "a"}, []int32{0, 0, 0}},
		{"collisions", []uint64{1, 1, 1, 1, 1}, []string{"a", "b", "a", "c", "b"}, []int32{0, 1, 0, 3, 1}},
		{"mixed", []uint64{5, 9, 5, 9, 5}, []string{"a", "b", "x", "b", "x"}, []int32{0, 1, 2, 1, 2}},
		{"full", []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1}, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "a", "x"}, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 13}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d dedup
			d.reset(len(tc.keys))
			for i, k := range tc.keys {
				got := d.add(k, int32(i), func(j int32) bool { return tc.content[j] == tc.content[i] })
				if got != tc.want[i] {
					t.Errorf("table %d: first equal table %d, want %d", i, got, tc.want[i])
				}
			}
		})
	}
}
