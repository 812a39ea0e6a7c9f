package lookupbench

import (
	"fmt"
	"math"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/varintpc"
)

// Names of the encodings that are not linear variants. Linear variants are
// named "linear" (the spec) and "linear-" + variant name.
const (
	// EncVarint is runtime.pcvalue without its cache in the runtime's code
	// shape (varintpc.PCValue): the baseline of every ratio.
	EncVarint = "varint"
	// EncVarintWalk is varintpc.Lookup's one-loop walk, faster than the
	// runtime's code: a second, labelled baseline.
	EncVarintWalk      = "varint-walk"
	EncVarintCacheCold = "varint-cache-cold"
	EncVarintCacheHit  = "varint-cache-7in8"
	EncLinear          = "linear"
	// EncLinearBranchy is the spec encoding read by the branchy lookup.
	EncLinearBranchy = "linear-branchy"
	EncFlat          = "flat"
	// EncMixVarintPCLn is the pctab toolchain's cfps-varint-pcln format: pcln
	// tables left in varint, read as EncVarint reads them, and every other
	// kind in cf-palette-short, read as "linear-cf-palette-short" reads them.
	EncMixVarintPCLn = objscan.LinearVarintPCLnName
)

// mixVariant is the linear variant of EncMixVarintPCLn's other kinds.
const mixVariant = objscan.LinearVarintPCLnVariant

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

// encoding is one timed encoding: its name and the constructor of its
// kernel. Each encoding has its own kernel, with its own timing loop.
type encoding struct {
	info    EncodingInfo
	prepare func(b *Bench, in kernelInput) kernel
}

// kernelInput is what a kernel is prepared from: the samples, the order in
// which one pass of the pattern visits them (indexes into samples; its
// length is a power of two), the flat tables (for flat only) and the cache
// seed.
type kernelInput struct {
	samples []Sample
	order   []uint32
	flat    *flatTables
	seed    uint64
}

// encodings lists the encodings Run times, in order: the varint ones, the
// linear variants (the spec first) and flat.
func (b *Bench) encodings() []encoding {
	out := []encoding{
		{EncodingInfo{EncVarint, "runtime.pcvalue without its cache, in the runtime's code shape: a non-inlined step per entry (varintpc.PCValue); the baseline"}, (*Bench).kernelVarint},
		{EncodingInfo{EncVarintWalk, "varintpc.Lookup: the same walk in one inlined loop, faster than the runtime's code (second baseline)"}, (*Bench).kernelVarintWalk},
		{EncodingInfo{EncVarintCacheCold, "runtime.pcvalue in the runtime's code shape with the per-M cache (varintpc.Cache.PCValue); consecutive keys differ, so it misses"}, (*Bench).kernelCacheCold},
		{EncodingInfo{EncVarintCacheHit, fmt.Sprintf("the same with groups of %d keys looked up alternately %d times each (at most 7 hits in 8)", hitKeys, hitRepeat)}, (*Bench).kernelCacheHit},
	}
	for v := range b.variants {
		name := EncLinear
		if !b.variants[v].IsSpec() {
			name += "-" + b.variants[v].Name
		}
		how := "linearpc Set.Lookup, "
		if b.sets[v].HasTryLookup() {
			how = "linearpc Set.TryLookup (Set.Lookup for what it leaves), "
		}
		if b.sets[v].HasTryLookupPalette() {
			how = "linearpc Set.TryLookupPalette (Set.Lookup for what it leaves), "
		}
		out = append(out, encoding{EncodingInfo{name, how + b.variants[v].Doc},
			func(b *Bench, in kernelInput) kernel { return b.kernelLinear(v, in) }})
	}
	for v := range b.variants {
		if b.variants[v].IsSpec() {
			out = append(out, encoding{EncodingInfo{EncLinearBranchy, "linearpc Set.TryLookupBranchy (Set.LookupBranchy for what it leaves) on the spec set: predicted branches instead of dependent loads (PC scan loop, early return), fastest when the same lookups repeat in order"},
				func(b *Bench, in kernelInput) kernel { return b.kernelLinearBranchy(v, in) }})
		}
	}
	for v := range b.variants {
		if b.variants[v].Name == mixVariant && b.sets[v].HasTryLookupPalette() {
			out = append(out, encoding{EncodingInfo{EncMixVarintPCLn, "pcln tables in varint, looked up as \"varint\" does; every other kind in " + mixVariant + ", looked up as \"linear-" + mixVariant + "\" does (the pctab toolchain's pctab_varln tables); one loop per part, so the kind costs no branch"},
				func(b *Bench, in kernelInput) kernel { return b.kernelMix(v, in) }})
		}
	}
	return append(out, encoding{EncodingInfo{EncFlat, "one int32 per PC quantum (speed-of-light reference)"}, (*Bench).kernelFlat})
}

// Encodings returns the encodings Run times, in order: the varint ones, the
// linear variants (the spec first) and flat.
func (b *Bench) Encodings() []EncodingInfo {
	var out []EncodingInfo
	for _, e := range b.encodings() {
		out = append(out, e.info)
	}
	return out
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

// check compares every lookup of one period of k's pattern with ref, and
// the sum the timing loop returns over one period with the sum of ref over
// the pattern, so that a loop that visits other samples than the pattern's
// (or reads its arguments wrongly) fails too.
func (k *kernel) check(name string, samples []Sample, ref []int32) error {
	var want int64
	for i := 0; i < k.period; i++ {
		j := k.idx(i)
		if v := k.one(j); v != ref[j] {
			s := samples[j]
			return fmt.Errorf("lookupbench: encoding %s: table %d (kind %s, func %d) at byte offset %#x: got %d, want %d", name, s.Tab, s.Kind, s.Func, s.PC, v, ref[j])
		}
		want += int64(ref[j])
	}
	if got := k.run(k.period); got != want {
		return fmt.Errorf("lookupbench: encoding %s: the timing loop's sum over one period of %d lookups is %d, want %d", name, k.period, got, want)
	}
	return nil
}

// kernelVarint is EncVarint's kernel.
func (b *Bench) kernelVarint(in kernelInput) kernel {
	xs := b.varintSamples(in.samples)
	pctab, q, order := b.pctab, b.q, in.order
	seq := inOrder(xs, order)
	one := func(i int) int32 {
		x := &xs[i]
		v, _, _ := varintpc.PCValue(pctab, x.off, x.entry, x.target, q)
		return v
	}
	run := func(n int) int64 {
		var sum int64
		for ; n > 0; n -= len(seq) {
			pass := seq[:min(n, len(seq))]
			for i := range pass {
				x := &pass[i]
				v, _, _ := varintpc.PCValue(pctab, x.off, x.entry, x.target, q)
				sum += int64(v)
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
}

// varintSample is a sample as the runtime-shaped lookups take it.
type varintSample struct {
	entry, target uintptr
	off           uint32
}

func (b *Bench) varintSamples(samples []Sample) []varintSample {
	xs := make([]varintSample, len(samples))
	for i, s := range samples {
		entry := uintptr(b.f.Funcs[s.Func].Entry)
		xs[i] = varintSample{entry, entry + uintptr(s.PC), b.f.Tabs[s.Tab].Offset}
	}
	return xs
}

// inOrder returns the samples xs in the order one pass of the pattern
// visits them, so that a kernel's loop reads its arguments from one slice
// in sequence: the loop then costs the same few instructions for every
// encoding (a load of the arguments, the call, the sum), with no index
// table to load first. When order is the identity (the hot and the cold
// set) it returns xs itself.
func inOrder[T any](xs []T, order []uint32) []T {
	identity := len(order) == len(xs)
	for i, j := range order {
		if !identity || int(j) != i {
			identity = false
			break
		}
	}
	if identity {
		return xs
	}
	seq := make([]T, len(order))
	for i, j := range order {
		seq[i] = xs[j]
	}
	return seq
}

// orderIdx maps the i-th lookup of a pass over order to its sample.
func orderIdx(order []uint32) func(int) int {
	mask := len(order) - 1
	return func(i int) int { return int(order[i&mask]) }
}

// kernelVarintWalk is EncVarintWalk's kernel.
func (b *Bench) kernelVarintWalk(in kernelInput) kernel {
	type vs struct{ off, pc uint32 }
	xs := make([]vs, len(in.samples))
	for i, s := range in.samples {
		xs[i] = vs{b.f.Tabs[s.Tab].Offset, s.PC}
	}
	pctab, q, order := b.pctab, b.q, in.order
	seq := inOrder(xs, order)
	one := func(i int) int32 {
		v, _, _ := varintpc.Lookup(pctab[xs[i].off:], uintptr(xs[i].pc), q, false)
		return v
	}
	run := func(n int) int64 {
		var sum int64
		for ; n > 0; n -= len(seq) {
			pass := seq[:min(n, len(seq))]
			for i := range pass {
				x := &pass[i]
				v, _, _ := varintpc.Lookup(pctab[x.off:], uintptr(x.pc), q, false)
				sum += int64(v)
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
}

// newCache returns the cache of a cached kernel.
func (b *Bench) newCache(seed uint64) *varintpc.Cache {
	c := varintpc.NewCache(seed)
	c.PtrSize = uintptr(b.f.PtrSize)
	return c
}

// kernelCacheCold is EncVarintCacheCold's kernel.
func (b *Bench) kernelCacheCold(in kernelInput) kernel {
	xs := b.varintSamples(in.samples)
	pctab, q, order, seed := b.pctab, b.q, in.order, in.seed
	seq := inOrder(xs, order)
	c := b.newCache(seed)
	one := func(i int) int32 {
		v, _, _ := c.PCValue(pctab, xs[i].off, xs[i].entry, xs[i].target, q)
		return v
	}
	run := func(n int) int64 {
		c.Reset(seed)
		var sum int64
		for ; n > 0; n -= len(seq) {
			pass := seq[:min(n, len(seq))]
			for i := range pass {
				x := &pass[i]
				v, _, _ := c.PCValue(pctab, x.off, x.entry, x.target, q)
				sum += int64(v)
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(order), period: len(order), cache: c}
}

// kernelCacheHit is EncVarintCacheHit's kernel: lookup i is of position
// (i/16)*2 + i%2 of the order.
func (b *Bench) kernelCacheHit(in kernelInput) kernel {
	xs := b.varintSamples(in.samples)
	pctab, q, order, seed := b.pctab, b.q, in.order, in.seed
	mask := len(order) - 1
	seq := inOrder(xs, order)
	c := b.newCache(seed)
	one := func(i int) int32 {
		v, _, _ := c.PCValue(pctab, xs[i].off, xs[i].entry, xs[i].target, q)
		return v
	}
	run := func(n int) int64 {
		c.Reset(seed)
		var sum int64
		for i := 0; i < n; i++ {
			x := &seq[(i>>hitGroupLog<<hitKeysShift|i&(hitKeys-1))&mask]
			v, _, _ := c.PCValue(pctab, x.off, x.entry, x.target, q)
			sum += int64(v)
		}
		return sum
	}
	idx := func(i int) int { return int(order[(i>>hitGroupLog<<hitKeysShift|i&(hitKeys-1))&mask]) }
	return kernel{run: run, one: one, idx: idx, period: len(order) * hitRepeat, cache: c}
}

// kernelLinear is the kernel of linear variant v.
func (b *Bench) kernelLinear(v int, in kernelInput) kernel {
	set, offs := b.sets[v], b.offs[v]
	type ls struct{ off, n, pc uint32 }
	xs := make([]ls, len(in.samples))
	for i, s := range in.samples {
		xs[i] = ls{offs[s.Tab], b.f.Tabs[s.Tab].Len, s.PC / b.q}
	}
	order := in.order
	seq := inOrder(xs, order)
	if b.sets[v].HasTryLookupPalette() {
		// Its own leaf lookup, and Set.Lookup for what it leaves.
		one := func(i int) int32 {
			v, ok := set.TryLookupPalette(xs[i].off, xs[i].n, xs[i].pc)
			if !ok {
				v = set.Lookup(xs[i].off, xs[i].n, xs[i].pc)
			}
			return v
		}
		run := func(n int) int64 {
			var sum int64
			for ; n > 0; n -= len(seq) {
				pass := seq[:min(n, len(seq))]
				for i := range pass {
					x := &pass[i]
					v, ok := set.TryLookupPalette(x.off, x.n, x.pc)
					if !ok {
						v = set.Lookup(x.off, x.n, x.pc)
					}
					sum += int64(v)
				}
			}
			return sum
		}
		return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
	}
	if set.HasTryLookup() {
		// The leaf lookup, and Set.Lookup for what it leaves.
		one := func(i int) int32 {
			v, ok := set.TryLookup(xs[i].off, xs[i].n, xs[i].pc)
			if !ok {
				v = set.Lookup(xs[i].off, xs[i].n, xs[i].pc)
			}
			return v
		}
		run := func(n int) int64 {
			var sum int64
			for ; n > 0; n -= len(seq) {
				pass := seq[:min(n, len(seq))]
				for i := range pass {
					x := &pass[i]
					v, ok := set.TryLookup(x.off, x.n, x.pc)
					if !ok {
						v = set.Lookup(x.off, x.n, x.pc)
					}
					sum += int64(v)
				}
			}
			return sum
		}
		return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
	}
	one := func(i int) int32 { return set.Lookup(xs[i].off, xs[i].n, xs[i].pc) }
	run := func(n int) int64 {
		var sum int64
		for ; n > 0; n -= len(seq) {
			pass := seq[:min(n, len(seq))]
			for i := range pass {
				x := &pass[i]
				sum += int64(set.Lookup(x.off, x.n, x.pc))
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
}

// kernelFlat is EncFlat's kernel.
func (b *Bench) kernelFlat(in kernelInput) kernel {
	type fs struct{ off, pc uint32 }
	xs := make([]fs, len(in.samples))
	for i, s := range in.samples {
		xs[i] = fs{in.flat.base[s.Tab], s.PC / b.q}
	}
	vals, order := in.flat.vals, in.order
	seq := inOrder(xs, order)
	one := func(i int) int32 { return vals[xs[i].off+xs[i].pc] }
	run := func(n int) int64 {
		var sum int64
		for ; n > 0; n -= len(seq) {
			pass := seq[:min(n, len(seq))]
			for i := range pass {
				x := &pass[i]
				sum += int64(vals[x.off+x.pc])
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
}

// kernelLinearBranchy is EncLinearBranchy's kernel, on the set of the spec
// variant v.
func (b *Bench) kernelLinearBranchy(v int, in kernelInput) kernel {
	set, offs := b.sets[v], b.offs[v]
	type ls struct{ off, n, pc uint32 }
	xs := make([]ls, len(in.samples))
	for i, s := range in.samples {
		xs[i] = ls{offs[s.Tab], b.f.Tabs[s.Tab].Len, s.PC / b.q}
	}
	order := in.order
	seq := inOrder(xs, order)
	one := func(i int) int32 {
		v, ok := set.TryLookupBranchy(xs[i].off, xs[i].n, xs[i].pc)
		if !ok {
			v = set.LookupBranchy(xs[i].off, xs[i].n, xs[i].pc)
		}
		return v
	}
	run := func(n int) int64 {
		var sum int64
		for ; n > 0; n -= len(seq) {
			pass := seq[:min(n, len(seq))]
			for i := range pass {
				x := &pass[i]
				v, ok := set.TryLookupBranchy(x.off, x.n, x.pc)
				if !ok {
					v = set.LookupBranchy(x.off, x.n, x.pc)
				}
				sum += int64(v)
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(order), period: len(order)}
}

// kernelMix is EncMixVarintPCLn's kernel, with linear variant v for the
// kinds other than pcln. The runtime reads pcln from its own call site
// (funcline1), so whether a table is pcln is never a branch on data there:
// each pass looks up its pcln samples and its other samples in two loops,
// each in the pattern's order, and a pass cut short by n takes the samples
// of the first n positions.
func (b *Bench) kernelMix(v int, in kernelInput) kernel {
	set, offs, pctab, q := b.sets[v], b.offs[v], b.pctab, b.q
	type ls struct{ off, n, pc uint32 }
	vxs := b.varintSamples(in.samples)
	isLn := func(i int) bool { return in.samples[i].Kind == objscan.KindPCLn }
	// The pass's two sequences, and for each prefix of the pass how many
	// of its positions are pcln.
	var lin []ls
	var ln []varintSample
	nln := make([]int32, len(in.order)+1)
	for p, j := range in.order {
		nln[p+1] = nln[p]
		if isLn(int(j)) {
			ln = append(ln, vxs[j])
			nln[p+1]++
			continue
		}
		s := in.samples[j]
		lin = append(lin, ls{offs[s.Tab], b.f.Tabs[s.Tab].Len, s.PC / q})
	}
	one := func(i int) int32 {
		if isLn(i) {
			x := &vxs[i]
			v, _, _ := varintpc.PCValue(pctab, x.off, x.entry, x.target, q)
			return v
		}
		s := in.samples[i]
		off, n, pc := offs[s.Tab], b.f.Tabs[s.Tab].Len, s.PC/q
		v, ok := set.TryLookupPalette(off, n, pc)
		if !ok {
			v = set.Lookup(off, n, pc)
		}
		return v
	}
	period := len(in.order)
	run := func(n int) int64 {
		var sum int64
		for ; n > 0; n -= period {
			m := min(n, period)
			k := int(nln[m])
			for i := range lin[:m-k] {
				x := &lin[i]
				v, ok := set.TryLookupPalette(x.off, x.n, x.pc)
				if !ok {
					v = set.Lookup(x.off, x.n, x.pc)
				}
				sum += int64(v)
			}
			for i := range ln[:k] {
				x := &ln[i]
				v, _, _ := varintpc.PCValue(pctab, x.off, x.entry, x.target, q)
				sum += int64(v)
			}
		}
		return sum
	}
	return kernel{run: run, one: one, idx: orderIdx(in.order), period: period}
}
