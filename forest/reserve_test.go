package forest

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"
)

func TestReserved(t *testing.T) {
	const max = 1 << 20
	f, err := NewReserved(max, Longest, NoSpan)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := New(Longest, NoSpan)
	r := rand.New(rand.NewPCG(5, 6))
	var base unsafe.Pointer
	for i := range max {
		s := Span{Dur: r.Int64N(1 << 20), ID: uint64(i)}
		f.Append(s)
		h.Append(s)
		if i == 0 {
			base = unsafe.Pointer(&f.vals[0])
		}
	}
	if runtime.GOOS == "linux" && unsafe.Pointer(&f.vals[0]) != base {
		t.Error("the reserved forest moved while growing")
	}
	for range 10000 {
		lo := r.IntN(max + 1)
		hi := lo + r.IntN(max+1-lo)
		if got, want := f.Query(lo, hi), h.Query(lo, hi); got != want {
			t.Fatalf("Query(%d, %d) = %+v, heap forest says %+v", lo, hi, got, want)
		}
	}
	// Past the reservation it moves to the heap and stays right.
	f.Append(Span{Dur: 1 << 40, ID: 7})
	if got := f.Query(0, f.Len()); got != (Span{Dur: 1 << 40, ID: 7}) {
		t.Errorf("after outgrowing the reservation: %+v", got)
	}
}

func TestReservedRejects(t *testing.T) {
	if _, err := NewReserved(10, func(a, b *int) *int { return a }, nil); err == nil {
		t.Error("NewReserved accepted a pointer type")
	}
	type s struct {
		a int
		b []int
	}
	if _, err := NewReserved(10, func(a, b s) s { return a }, s{}); err == nil {
		t.Error("NewReserved accepted a struct holding a slice")
	}
	if _, err := NewReserved(0, sum, 0); err == nil {
		t.Error("NewReserved accepted 0 leaves")
	}
	if _, err := NewReserved(math.MaxInt, sum, 0); err == nil {
		t.Error("NewReserved reserved math.MaxInt leaves")
	}
}

func TestBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, size := range []int{1, 2, 3, 8, 64} {
		var items []mat
		b := NewBlocked(New(mul, ident), size)
		calls := 0
		item := func(i int) mat { calls++; return items[i] }
		for i := range 300 {
			v := mat{r.Int64N(50), r.Int64N(50), r.Int64N(50), r.Int64N(50)}
			items = append(items, v)
			b.Append(v)
			for range 20 {
				lo := r.IntN(i + 2)
				hi := lo + r.IntN(i+2-lo)
				calls = 0
				if got, want := b.Query(lo, hi, item), fold(items[lo:hi], mul, ident); got != want {
					t.Fatalf("size %d, %d items: Query(%d, %d) = %v, want %v", size, i+1, lo, hi, got, want)
				}
				if calls >= 2*size {
					t.Fatalf("size %d: Query(%d, %d) read %d items", size, lo, hi, calls)
				}
			}
		}
		if b.Forest().Len() != 300/size {
			t.Errorf("size %d: %d leaves", size, b.Forest().Len())
		}
	}
}
