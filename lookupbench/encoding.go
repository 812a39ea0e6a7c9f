package lookupbench

import (
	"fmt"
	"math"

	"github.com/pctab/pctab/varintpc"
)

// Names of the encodings that are not linear variants. Linear variants are
// named "linear" (the spec) and "linear-" + variant name.
const (
	EncVarint          = "varint"
	EncVarintCacheCold = "varint-cache-cold"
	EncVarintCacheHit  = "varint-cache-7in8"
	EncLinear          = "linear"
	EncFlat            = "flat"
)

// The varint-cache-7in8 access pattern: groups of hitKeys samples, looked up
// alternately hitRepeat times each.
const (
	hitKeys      = 2
	hitRepeat    = 8
	hitKeysShift = 1 // log2(hitKeys)
	hitGroupLog  = 4 // log2(hitKeys*hitRepeat)
)

// EncodingInfo names and describes one timed encoding.
type EncodingInfo struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
}

// Encodings returns the encodings Run times, in order: the varint ones, the
// linear variants (the spec first) and flat.
func (b *Bench) Encodings() []EncodingInfo {
	out := []EncodingInfo{
		{EncVarint, "varint walk as runtime.pcvalue, no cache"},
		{EncVarintCacheCold, "runtime.pcvalue with the per-M cache; consecutive keys differ, so it misses"},
		{EncVarintCacheHit, fmt.Sprintf("runtime.pcvalue with the per-M cache; groups of %d keys looked up alternately %d times each (at most 7 hits in 8)", hitKeys, hitRepeat)},
	}
	for _, v := range b.variants {
		name := EncLinear
		if !v.IsSpec() {
			name += "-" + v.Name
		}
		out = append(out, EncodingInfo{name, "linearpc Set.Lookup, " + v.Doc})
	}
	return append(out, EncodingInfo{EncFlat, "one int32 per PC quantum (speed-of-light reference)"})
}

// flatTables is the flat encoding of the tables a sample set touches.
type flatTables struct {
	vals []int32
	base []uint32 // per table index: offset of its first value in vals
}

// buildFlat lays out, in pctab order, one int32 per PC quantum of every table
// the samples touch.
func (b *Bench) buildFlat(samples []Sample) (*flatTables, error) {
	used := make([]bool, len(b.tabs))
	for _, s := range samples {
		used[s.Tab] = true
	}
	ft := &flatTables{base: make([]uint32, len(b.tabs))}
	var total uint64
	for i, u := range used {
		if u {
			ft.base[i] = uint32(total)
			total += uint64(b.tabs[i].Len)
		}
	}
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("lookupbench: flat tables need %d entries, more than 2^32", total)
	}
	ft.vals = make([]int32, total)
	for i, u := range used {
		if !u {
			continue
		}
		t := &b.tabs[i]
		dst := ft.vals[ft.base[i] : uint64(ft.base[i])+uint64(t.Len)]
		for r, run := range t.Runs {
			end := t.Len
			if r+1 < len(t.Runs) {
				end = min(end, t.Runs[r+1].PC)
			}
			for pc := run.PC; pc < end; pc++ {
				dst[pc] = run.Value
			}
		}
	}
	return ft, nil
}

// kernel is one encoding prepared for one sample set.
type kernel struct {
	// run performs n lookups following the encoding's access pattern and
	// returns the sum of the values.
	run func(n int) int64
	// one looks up sample i, through the same path as run.
	one func(i int) int32
	// idx maps the i-th lookup of run to its sample, and period is the
	// length of the pattern, which visits every sample equally often.
	idx    func(i int) int
	period int
	// cache is the varint cache the kernel uses, if any.
	cache *varintpc.Cache
}

// check compares every lookup of one period of k's pattern with ref.
func (k *kernel) check(name string, samples []Sample, ref []int32) error {
	for i := 0; i < k.period; i++ {
		j := k.idx(i)
		if v := k.one(j); v != ref[j] {
			s := samples[j]
			return fmt.Errorf("lookupbench: encoding %s: table %d (kind %s, func %d) at byte offset %#x: got %d, want %d", name, s.Tab, s.Kind, s.Func, s.PC, v, ref[j])
		}
	}
	return nil
}

// kernel prepares encoding e (an index into Encodings) for samples.
func (b *Bench) kernel(e int, samples []Sample, flat *flatTables, seed uint64) kernel {
	mask := len(samples) - 1
	plain := func(i int) int { return i & mask }
	pctab, q := b.pctab, b.q
	nv := len(b.variants)
	switch {
	case e == 0: // varint
		type vs struct{ off, pc uint32 }
		xs := make([]vs, len(samples))
		for i, s := range samples {
			xs[i] = vs{b.f.Tabs[s.Tab].Offset, s.PC}
		}
		one := func(i int) int32 {
			v, _, _ := varintpc.Lookup(pctab[xs[i].off:], uintptr(xs[i].pc), q, false)
			return v
		}
		run := func(n int) int64 {
			var sum int64
			for i := 0; i < n; i++ {
				x := &xs[i&mask]
				v, _, _ := varintpc.Lookup(pctab[x.off:], uintptr(x.pc), q, false)
				sum += int64(v)
			}
			return sum
		}
		return kernel{run: run, one: one, idx: plain, period: len(xs)}
	case e == 1 || e == 2: // varint with the cache
		type cs struct {
			entry, target uintptr
			off           uint32
		}
		xs := make([]cs, len(samples))
		for i, s := range samples {
			entry := uintptr(b.f.Funcs[s.Func].Entry)
			xs[i] = cs{entry, entry + uintptr(s.PC), b.f.Tabs[s.Tab].Offset}
		}
		c := varintpc.NewCache(seed)
		c.PtrSize = uintptr(b.f.PtrSize)
		one := func(i int) int32 {
			x := &xs[i]
			v, _, _ := c.Lookup(x.off, pctab[x.off:], x.entry, x.target, q, false)
			return v
		}
		if e == 1 {
			run := func(n int) int64 {
				c.Reset(seed)
				var sum int64
				for i := 0; i < n; i++ {
					x := &xs[i&mask]
					v, _, _ := c.Lookup(x.off, pctab[x.off:], x.entry, x.target, q, false)
					sum += int64(v)
				}
				return sum
			}
			return kernel{run: run, one: one, idx: plain, period: len(xs), cache: c}
		}
		hit := func(i int) int { return (i>>hitGroupLog<<hitKeysShift | i&(hitKeys-1)) & mask }
		run := func(n int) int64 {
			c.Reset(seed)
			var sum int64
			for i := 0; i < n; i++ {
				x := &xs[(i>>hitGroupLog<<hitKeysShift|i&(hitKeys-1))&mask]
				v, _, _ := c.Lookup(x.off, pctab[x.off:], x.entry, x.target, q, false)
				sum += int64(v)
			}
			return sum
		}
		return kernel{run: run, one: one, idx: hit, period: len(xs) * hitRepeat, cache: c}
	case e < 3+nv: // linear variant
		set, offs := b.sets[e-3], b.offs[e-3]
		type ls struct{ off, n, pc uint32 }
		xs := make([]ls, len(samples))
		for i, s := range samples {
			xs[i] = ls{offs[s.Tab], b.f.Tabs[s.Tab].Len, s.PC / q}
		}
		one := func(i int) int32 { return set.Lookup(xs[i].off, xs[i].n, xs[i].pc) }
		run := func(n int) int64 {
			var sum int64
			for i := 0; i < n; i++ {
				x := &xs[i&mask]
				sum += int64(set.Lookup(x.off, x.n, x.pc))
			}
			return sum
		}
		return kernel{run: run, one: one, idx: plain, period: len(xs)}
	}
	// flat
	type fs struct{ off, pc uint32 }
	xs := make([]fs, len(samples))
	for i, s := range samples {
		xs[i] = fs{flat.base[s.Tab], s.PC / q}
	}
	vals := flat.vals
	one := func(i int) int32 { return vals[xs[i].off+xs[i].pc] }
	run := func(n int) int64 {
		var sum int64
		for i := 0; i < n; i++ {
			x := &xs[i&mask]
			sum += int64(vals[x.off+x.pc])
		}
		return sum
	}
	return kernel{run: run, one: one, idx: plain, period: len(xs)}
}
