package varintpc

import (
	"math/rand/v2"
	"testing"
)

// benchSample is one lookup: a table of the real binary and a PC in it.
type benchSample struct {
	off uint32 // pctab offset (the cache key)
	raw []byte // the table
	pc  uint32 // PC-quantum units
}

// hotSamples is the number of samples each benchmark cycles through. The
// samples are drawn exactly as linearpc's benchmarks draw theirs, so the
// two packages' numbers are for the same lookups.
const hotSamples = 1024

// benchSamples returns the "random", "pc0" and "pc4096" sample sets of the
// local go binary, and its PC quantum.
func benchSamples(b *testing.B) (map[string][]benchSample, uint32) {
	f := realFile(b)
	var long []int
	for i, t := range f.Tabs {
		if t.Len > 4096 {
			long = append(long, i)
		}
	}
	r := rand.New(rand.NewPCG(2026, 61984))
	s := map[string][]benchSample{}
	mk := func(i int, pc uint32) benchSample {
		return benchSample{f.Tabs[i].Offset, f.Tabs[i].Data, pc}
	}
	for range hotSamples {
		i := r.IntN(len(f.Tabs))
		s["random"] = append(s["random"], mk(i, r.Uint32N(f.Tabs[i].Len)))
		i = r.IntN(len(f.Tabs))
		s["pc0"] = append(s["pc0"], mk(i, 0))
		if len(long) > 0 {
			s["pc4096"] = append(s["pc4096"], mk(long[r.IntN(len(long))], 4096))
		}
	}
	return s, uint32(f.PCQuantum)
}

var sink int32

// BenchmarkLookup measures the runtime's walk without a cache, with a
// cache that always misses (the samples cycle through 1024 keys), with a
// cache that hits 7 lookups in 8 (each sample looked up 8 times in a row)
// and with a cache that always hits.
func BenchmarkLookup(b *testing.B) {
	samples, q := benchSamples(b)
	for _, set := range []string{"random", "pc0", "pc4096"} {
		ss := samples[set]
		b.Run(set, func(b *testing.B) {
			b.Run("nocache", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[i%len(ss)]
					v, _, _ := Lookup(x.raw, uintptr(x.pc*q), q, true)
					s += v
				}
				sink = s
			})
			cached := func(b *testing.B, key func(i int) int) {
				c := NewCache(1)
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[key(i)%len(ss)]
					entry := uintptr(x.off) << 16
					v, _, _ := c.Lookup(x.off, x.raw, entry, entry+uintptr(x.pc*q), q, true)
					s += v
				}
				sink = s
				b.ReportMetric(float64(c.Hits)/float64(c.Hits+c.Misses), "hit-rate")
			}
			b.Run("cache-miss", func(b *testing.B) { cached(b, func(i int) int { return i }) })
			b.Run("cache-7of8", func(b *testing.B) { cached(b, func(i int) int { return i / 8 }) })
			b.Run("cache-hit", func(b *testing.B) { cached(b, func(int) int { return 0 }) })
		})
	}
}

// BenchmarkDecode measures decoding every table of the go binary.
func BenchmarkDecode(b *testing.B) {
	f := realFile(b)
	for b.Loop() {
		for _, t := range f.Tabs {
			if _, _, err := Decode(t.Data); err != nil {
				b.Fatal(err)
			}
		}
	}
}
