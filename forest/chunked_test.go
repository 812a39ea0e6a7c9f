package forest

import (
	"math/rand/v2"
	"testing"
)

// TestChunkedEveryRange holds Chunked's queries to a fold of the leaves
// for every range, with the non-commutative matrix product, for chunk
// sizes that do and do not divide the leaf count.
func TestChunkedEveryRange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 5, 16, 33, 100} {
		f := New(mul, ident)
		var leaves []mat
		for range n {
			v := mat{r.Int64N(100), r.Int64N(100), r.Int64N(100), r.Int64N(100)}
			f.Append(v)
			leaves = append(leaves, v)
		}
		for _, size := range []int{2, 3, 4, 8, 64} {
			c := NewChunked(f, size)
			if c.Len() != n {
				t.Fatalf("n=%d size=%d: Len %d", n, size, c.Len())
			}
			for lo := 0; lo <= n; lo++ {
				for hi := lo; hi <= n; hi++ {
					if got, want := c.Query(lo, hi), fold(leaves[lo:hi], mul, ident); got != want {
						t.Fatalf("n=%d size=%d: Query(%d, %d) = %v, want %v", n, size, lo, hi, got, want)
					}
				}
			}
		}
	}
}

func TestChunkedPanics(t *testing.T) {
	f := New(sum, 0)
	for i := range 10 {
		f.Append(int64(i))
	}
	c := NewChunked(f, 4)
	for _, r := range [][2]int{{-1, 2}, {3, 2}, {0, 11}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Query(%d, %d) did not panic", r[0], r[1])
				}
			}()
			c.Query(r[0], r[1])
		}()
	}
}
