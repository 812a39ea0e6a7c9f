package linearpc

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pctab/pctab/varintpc"
)

// benchSample is one lookup of a benchmark: a table and a PC in it.
type benchSample struct {
	tab  int    // index into the real tables
	pc   uint32 // PC-quantum units
	len  uint32 // table length
	off  uint32 // pctab offset of the varint table
	raw  []byte // the varint table
	spec uint32 // offset of the table in the spec set
	comp uint32 // offset of the table in the compact set
	cf   uint32 // offset of the table in the compact-fast set
	cp   uint32 // offset of the table in the cf-palette set
	cps  uint32 // offset of the table in the cf-palette-short set
	flat int    // offset of the table in the flat array
}

// benchData holds the encodings benchmarks look up in.
type benchData struct {
	tabs    []realTab
	quantum uint32
	spec    *Set
	comp    *Set
	cf      *Set
	cp      *Set    // cf-palette
	cps     *Set    // cf-palette-short
	flat    []int32 // one value per PC unit, for the sampled tables only
	samples map[string][]benchSample
}

var benchOnce struct {
	done bool
	d    benchData
}

// hotSamples is the number of samples each benchmark cycles through: few
// enough that the tables they touch stay in the CPU caches.
const hotSamples = 1024

// benchSetup builds the sample sets from the local go binary: "random"
// (uniformly chosen distinct tables, uniform PC), "pc0" (PC 0 of random
// tables) and "pc4096" (PC 4096 of random tables at least that long).
// BenchmarkLookup also visits the random samples in a shuffled order.
func benchSetup(b testing.TB) *benchData {
	if benchOnce.done {
		return &benchOnce.d
	}
	f, tabs := realTables(b)
	d := &benchOnce.d
	d.tabs = tabs
	d.quantum = uint32(f.PCQuantum)
	d.spec = NewSet(Spec())
	d.comp = NewSet(Variants()[4])
	d.cf = NewSet(Variants()[5])
	d.cp = NewSet(Variants()[6])
	d.cps = NewSet(Variants()[7])
	cpOff := make([]uint32, len(tabs))
	cpsOff := make([]uint32, len(tabs))
	specOff := make([]uint32, len(tabs))
	compOff := make([]uint32, len(tabs))
	cfOff := make([]uint32, len(tabs))
	for i, rt := range tabs {
		specOff[i] = d.spec.Add(rt.t)
		compOff[i] = d.comp.Add(rt.t)
		cfOff[i] = d.cf.Add(rt.t)
		cpOff[i] = d.cp.Add(rt.t)
		cpsOff[i] = d.cps.Add(rt.t)
	}
	var long []int
	for i, rt := range tabs {
		if rt.t.Len > 4096 {
			long = append(long, i)
		}
	}
	r := rand.New(rand.NewPCG(2026, 61984))
	flatAt := map[int]int{}
	sample := func(i int, pc uint32) benchSample {
		fo, ok := flatAt[i]
		if !ok {
			fo = len(d.flat)
			flatAt[i] = fo
			t := tabs[i].t
			for p := uint32(0); p < t.Len; p++ {
				v, _ := t.Lookup(p)
				d.flat = append(d.flat, v)
			}
		}
		return benchSample{tab: i, pc: pc, len: tabs[i].t.Len, off: tabs[i].off, raw: tabs[i].raw, spec: specOff[i], comp: compOff[i], cf: cfOff[i], cp: cpOff[i], cps: cpsOff[i], flat: fo}
	}
	d.samples = map[string][]benchSample{}
	for range hotSamples {
		i := r.IntN(len(tabs))
		d.samples["random"] = append(d.samples["random"], sample(i, r.Uint32N(tabs[i].t.Len)))
		i = r.IntN(len(tabs))
		d.samples["pc0"] = append(d.samples["pc0"], sample(i, 0))
		if len(long) > 0 {
			d.samples["pc4096"] = append(d.samples["pc4096"], sample(long[r.IntN(len(long))], 4096))
		}
	}
	benchOnce.done = true
	return d
}

var sink int32

// pick returns the sample of iteration i among n. In order, a benchmark
// replays the same sequence of n lookups over and over, and a branch
// predictor with a long history learns much of it: the branches of a
// lookup become predictable although the samples are random. Shuffled, i
// is hashed, so the sequence never repeats and the branches are as
// unpredictable as the samples. Both cost about the same (a division, or
// two multiplications and shifts).
func pick(i, n int, shuffled bool) int {
	if shuffled {
		h := uint64(i) * 0x9e3779b97f4a7c15
		h ^= h >> 31
		h *= 0xbf58476d1ce4e5b9
		return int(h >> 32 * uint64(n) >> 32)
	}
	return i % n
}

// BenchmarkLookup compares, on the same samples of the local go binary,
// the linear lookups with the varint walk without cache, with a cache that
// always misses, with a cache that hits 7 lookups in 8, with a cache that
// always hits, and with a flat array (one int32 per PC unit). The samples
// of "random-shuffled" are those of "random", visited in an order that
// does not repeat (see pick).
func BenchmarkLookup(b *testing.B) {
	d := benchSetup(b)
	for _, set := range []string{"random", "pc0", "pc4096", "random-shuffled"} {
		shuffled := set == "random-shuffled"
		ss := d.samples[strings.TrimSuffix(set, "-shuffled")]
		b.Run(set, func(b *testing.B) {
			b.Run("linear-spec-set", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					s += d.spec.Lookup(x.spec, x.len, x.pc)
				}
				sink = s
			})
			// The leaf lookups against the safe ones they stand for (they
			// use unsafe: see try.go).
			b.Run("linear-spec-set-try", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					v, ok := d.spec.TryLookup(x.spec, x.len, x.pc)
					if !ok {
						v = d.spec.Lookup(x.spec, x.len, x.pc)
					}
					s += v
				}
				sink = s
			})
			b.Run("linear-spec-branchy", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					s += d.spec.LookupBranchy(x.spec, x.len, x.pc)
				}
				sink = s
			})
			b.Run("linear-spec-branchy-try", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					v, ok := d.spec.TryLookupBranchy(x.spec, x.len, x.pc)
					if !ok {
						v = d.spec.LookupBranchy(x.spec, x.len, x.pc)
					}
					s += v
				}
				sink = s
			})
			b.Run("linear-spec", func(b *testing.B) {
				data := d.spec.Bytes()
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					s += Lookup(data[x.spec:], x.len, x.pc)
				}
				sink = s
			})
			b.Run("linear-compact", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					s += d.comp.Lookup(x.comp, x.len, x.pc)
				}
				sink = s
			})
			b.Run("linear-compact-fast", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					s += d.cf.Lookup(x.cf, x.len, x.pc)
				}
				sink = s
			})
			b.Run("linear-compact-fast-try", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					v, ok := d.cf.TryLookup(x.cf, x.len, x.pc)
					if !ok {
						v = d.cf.Lookup(x.cf, x.len, x.pc)
					}
					s += v
				}
				sink = s
			})
			b.Run("linear-cf-palette-try", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					v, ok := d.cp.TryLookupPalette(x.cp, x.len, x.pc)
					if !ok {
						v = d.cp.Lookup(x.cp, x.len, x.pc)
					}
					s += v
				}
				sink = s
			})
			b.Run("linear-cf-palette-short-try", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					v, ok := d.cps.TryLookupPalette(x.cps, x.len, x.pc)
					if !ok {
						v = d.cps.Lookup(x.cps, x.len, x.pc)
					}
					s += v
				}
				sink = s
			})
			b.Run("varint-nocache", func(b *testing.B) {
				q := d.quantum
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					v, _, _ := varintpc.Lookup(x.raw, uintptr(x.pc*q), q, true)
					s += v
				}
				sink = s
			})
			cached := func(b *testing.B, key func(i int) int) {
				q := d.quantum
				c := varintpc.NewCache(1)
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(key(i), len(ss), shuffled)]
					entry := uintptr(x.off) << 16
					v, _, _ := c.Lookup(x.off, x.raw, entry, entry+uintptr(x.pc*q), q, true)
					s += v
				}
				sink = s
				b.ReportMetric(float64(c.Hits)/float64(c.Hits+c.Misses), "hit-rate")
			}
			b.Run("varint-cache-miss", func(b *testing.B) { cached(b, func(i int) int { return i }) })
			b.Run("varint-cache-7of8", func(b *testing.B) { cached(b, func(i int) int { return i / 8 }) })
			b.Run("varint-cache-hit", func(b *testing.B) { cached(b, func(int) int { return 0 }) })
			b.Run("flat", func(b *testing.B) {
				var s int32
				for i := 0; b.Loop(); i++ {
					x := &ss[pick(i, len(ss), shuffled)]
					s += d.flat[x.flat+int(x.pc)]
				}
				sink = s
			})
		})
	}
}

// BenchmarkVariantLookup measures every variant's Set lookup on the
// random samples.
func BenchmarkVariantLookup(b *testing.B) {
	d := benchSetup(b)
	ss := d.samples["random"]
	for _, v := range Variants() {
		s := NewSet(v)
		offs := make([]uint32, len(ss))
		for i, x := range ss {
			offs[i] = s.Add(d.tabs[x.tab].t)
		}
		b.Run(v.Name, func(b *testing.B) {
			var acc int32
			for i := 0; b.Loop(); i++ {
				k := i % len(ss)
				acc += s.Lookup(offs[k], ss[k].len, ss[k].pc)
			}
			sink = acc
		})
	}
}

// BenchmarkEncode measures encoding every table of the go binary.
func BenchmarkEncode(b *testing.B) {
	_, tabs := realTables(b)
	var buf []byte
	var e encoder
	for b.Loop() {
		for _, rt := range tabs {
			buf = e.appendTable(buf[:0], rt.t, Spec(), nil)
		}
	}
}

// BenchmarkSetAdd measures filling a Set of each variant with every table
// of the go binary, as the report does for the pooled variant.
func BenchmarkSetAdd(b *testing.B) {
	_, tabs := realTables(b)
	for _, v := range Variants() {
		b.Run(v.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s := NewSet(v)
				for _, rt := range tabs {
					s.Add(rt.t)
				}
			}
		})
	}
}
