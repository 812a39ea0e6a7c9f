package forest

import (
	"math/rand/v2"
	"testing"
)

func sum(a, b int64) int64 { return a + b }

// mat is a 2x2 matrix: its product is associative but not commutative, so
// it catches a query that combines out of order.
type mat [4]int64

func mul(a, b mat) mat {
	const m = 1_000_003
	return mat{
		(a[0]*b[0] + a[1]*b[2]) % m, (a[0]*b[1] + a[1]*b[3]) % m,
		(a[2]*b[0] + a[3]*b[2]) % m, (a[2]*b[1] + a[3]*b[3]) % m,
	}
}

var ident = mat{1, 0, 0, 1}

func fold[T any](leaves []T, combine func(a, b T) T, id T) T {
	acc := id
	for _, v := range leaves {
		acc = combine(acc, v)
	}
	return acc
}

func TestQueryEveryRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100} {
		f := New(mul, ident)
		var leaves []mat
		for i := range n {
			v := mat{r.Int64N(100), r.Int64N(100), r.Int64N(100), r.Int64N(100)}
			f.Append(v)
			leaves = append(leaves, v)
			// Every range of every prefix.
			for lo := 0; lo <= i+1; lo++ {
				for hi := lo; hi <= i+1; hi++ {
					if got, want := f.Query(lo, hi), fold(leaves[lo:hi], mul, ident); got != want {
						t.Fatalf("n=%d after %d appends: Query(%d, %d) = %v, want %v", n, i+1, lo, hi, got, want)
					}
				}
			}
		}
		if f.Len() != n || f.Nodes() != 2*n {
			t.Errorf("n=%d: Len %d, Nodes %d", n, f.Len(), f.Nodes())
		}
		for i := range n {
			if f.Leaf(i) != leaves[i] {
				t.Fatalf("Leaf(%d) = %v, want %v", i, f.Leaf(i), leaves[i])
			}
		}
	}
}

func TestQueryRandomLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1 << 17
	f := New(sum, 0)
	prefix := make([]int64, n+1)
	for i := range n {
		v := r.Int64N(1000) - 500
		f.Append(v)
		prefix[i+1] = prefix[i] + v
	}
	for range 20000 {
		lo := r.IntN(n + 1)
		hi := lo + r.IntN(n+1-lo)
		if got, want := f.Query(lo, hi), prefix[hi]-prefix[lo]; got != want {
			t.Fatalf("Query(%d, %d) = %d, want %d", lo, hi, got, want)
		}
	}
}

func TestAggregates(t *testing.T) {
	spans := []Span{{Dur: 5, ID: 1}, {Dur: 9, ID: 2}, {Dur: 3, ID: 3}, {Dur: 9, ID: 4}, {Dur: 0, ID: 5}}
	f := New(Longest, NoSpan)
	for _, s := range spans {
		f.Append(s)
	}
	for _, tc := range []struct {
		lo, hi int
		want   Span
	}{
		{0, 5, Span{Dur: 9, ID: 2}}, // ties: the earliest ID
		{2, 5, Span{Dur: 9, ID: 4}},
		{2, 3, Span{Dur: 3, ID: 3}},
		{4, 4, NoSpan},
		{4, 5, Span{Dur: 0, ID: 5}},
	} {
		if got := f.Query(tc.lo, tc.hi); got != tc.want {
			t.Errorf("Longest over [%d, %d) = %+v, want %+v", tc.lo, tc.hi, got, tc.want)
		}
	}
	m := New(Max[int64], -1<<63)
	c := New(sum, 0)
	for _, v := range []int64{4, -2, 8, 8, 0} {
		m.Append(v)
		c.Append(1)
	}
	if got := m.Query(0, 5); got != 8 {
		t.Errorf("Max = %d", got)
	}
	if got := m.Query(1, 2); got != -2 {
		t.Errorf("Max over [1, 2) = %d", got)
	}
	if got := c.Query(1, 4); got != 3 {
		t.Errorf("count = %d", got)
	}
}

func TestQueryPanics(t *testing.T) {
	f := New(sum, 0)
	f.Append(1)
	for _, r := range [][2]int{{-1, 1}, {0, 2}, {1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Query(%d, %d) did not panic", r[0], r[1])
				}
			}()
			f.Query(r[0], r[1])
		}()
	}
}

func FuzzForest(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint16(3), uint16(9))
	f.Fuzz(func(t *testing.T, data []byte, lo, hi uint16) {
		fr := New(mul, ident)
		var leaves []mat
		for i := 0; i+1 < len(data); i += 2 {
			v := mat{int64(data[i]), int64(data[i+1]), int64(data[i] ^ data[i+1]), 1}
			fr.Append(v)
			leaves = append(leaves, v)
		}
		n := len(leaves)
		l, h := int(lo)%(n+1), int(hi)%(n+1)
		if l > h {
			l, h = h, l
		}
		if got, want := fr.Query(l, h), fold(leaves[l:h], mul, ident); got != want {
			t.Fatalf("Query(%d, %d) of %d = %v, want %v", l, h, n, got, want)
		}
	})
}

func TestFromValues(t *testing.T) {
	f := New(Longest, NoSpan)
	for i := range 1000 {
		f.Append(Span{Dur: int64(i * 7919 % 1013), ID: uint64(i)})
	}
	g, err := FromValues(append([]Span(nil), f.Values()...), Longest, NoSpan)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < 1000; lo += 37 {
		for hi := lo; hi <= 1000; hi += 53 {
			if g.Query(lo, hi) != f.Query(lo, hi) {
				t.Fatalf("Query(%d, %d) differs", lo, hi)
			}
		}
	}
	g.Append(Span{Dur: 5000, ID: 1000})
	if g.Query(0, 1001) != (Span{Dur: 5000, ID: 1000}) || g.Len() != 1001 {
		t.Error("append after FromValues")
	}
	if _, err := FromValues(make([]Span, 3), Longest, NoSpan); err == nil {
		t.Error("FromValues accepted 3 values")
	}
}
