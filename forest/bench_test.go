package forest

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	f := New(Longest, NoSpan)
	b.ReportAllocs()
	for i := range b.N {
		f.Append(Span{Dur: int64(i & 1023), ID: uint64(i)})
	}
}

func BenchmarkAppendReserved(b *testing.B) {
	f, err := NewReserved(max(b.N, 1), Longest, NoSpan)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	for i := range b.N {
		f.Append(Span{Dur: int64(i & 1023), ID: uint64(i)})
	}
}

// BenchmarkQuery queries random ranges of n leaves: about log2(n)
// combines each.
func BenchmarkQuery(b *testing.B) {
	for _, n := range []int{1e6, 1e8} {
		b.Run(fmt.Sprintf("leaves=%d", n), func(b *testing.B) {
			if testing.Short() && n > 1e6 {
				b.Skip("-short")
			}
			f, err := NewReserved(n, Sum[int64], 0)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			for i := range n {
				f.Append(int64(i))
			}
			r := rand.New(rand.NewPCG(1, 1))
			ranges := make([][2]int, 4096)
			for i := range ranges {
				lo := r.IntN(n)
				ranges[i] = [2]int{lo, lo + r.IntN(n-lo)}
			}
			b.ResetTimer()
			var sink int64
			for i := range b.N {
				q := ranges[i&4095]
				sink += f.Query(q[0], q[1])
			}
			_ = sink
		})
	}
}
