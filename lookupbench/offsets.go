package lookupbench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Offset buckets: [Bench.Offsets] times lookups at PCs whose byte offset
// into their function falls in each bucket of OffsetBucketBytes, from 0 to
// OffsetMaxBytes.
const (
	OffsetBucketBytes = 512
	OffsetMaxBytes    = 8192
)

// OffsetOptions configure [Bench.Offsets].
type OffsetOptions struct {
	// BucketBytes and MaxBytes set the buckets: [0, BucketBytes),
	// [BucketBytes, 2*BucketBytes), ... up to MaxBytes; 0 means
	// OffsetBucketBytes and OffsetMaxBytes.
	BucketBytes, MaxBytes uint32
	// Count is the number of rounds; 0 means 1. BenchTime is each run's
	// time or count; zero means 1s.
	Count     int
	BenchTime BenchTime
	// Match selects benchmarks by name, such as
	// "set=hot-shuffled/pcs=offset=512-1024/enc=linear"; nil selects all.
	Match func(name string) bool
	// Progress, if not nil, is called before each timed benchmark.
	Progress func(done, total int, name string)
}

// OffsetGroupName returns the PCs field of the group of bucket [lo, hi):
// "offset=LO-HI".
func OffsetGroupName(lo, hi uint32) string { return fmt.Sprintf("offset=%d-%d", lo, hi) }

// Offsets times lookups by how far into its function the PC lies: for each
// bucket of byte offsets [lo, hi), a hot-shuffled set of the Bench's hot
// size of (table, PC) pairs, drawn uniformly over the references (or
// tables, with ByTable) whose table covers offset lo, each PC uniformly
// random among the covered PC-quantum steps in [lo, hi). Every encoding is
// timed on it, round-robin as in [Bench.Run], and checked first against
// the decoded tables. Each bucket is one Group whose PCs field is
// OffsetGroupName(lo, hi); a bucket no table reaches has a Note and no
// timings.
func (b *Bench) Offsets(oo OffsetOptions) (*Result, error) {
	bucket, maxb := oo.BucketBytes, oo.MaxBytes
	if bucket == 0 {
		bucket = OffsetBucketBytes
	}
	if maxb == 0 {
		maxb = OffsetMaxBytes
	}
	if bucket%b.q != 0 || maxb%bucket != 0 {
		return nil, fmt.Errorf("lookupbench: offset buckets of %d bytes up to %d: not multiples of the PC quantum %d and of each other", bucket, maxb, b.q)
	}
	count := max(oo.Count, 1)
	bt := oo.BenchTime
	if bt.N <= 0 && bt.D <= 0 {
		bt = BenchTime{D: defaultBenchTime}
	}
	encs := b.encodings()
	res := &Result{
		Host: CurrentHost(), Sampling: b.opt.Sampling.String(), BenchTime: bt.String(), Count: count,
		ReturnAddresses: b.numCalls, Disassembler: b.disasm, NoReturnAddresses: b.noCalls, Encodings: b.Encodings(),
	}
	var plans []plan
	for lo := uint32(0); lo < maxb; lo += bucket {
		g := Group{Set: SetHotShuffled, PCs: OffsetGroupName(lo, lo+bucket)}
		var sel []int
		for e := range encs {
			if oo.Match == nil || oo.Match(g.Name(encs[e].info.Name)) {
				sel = append(sel, e)
			}
		}
		if len(sel) > 0 {
			lo, hi := lo, lo+bucket
			plans = append(plans, plan{g: g, size: b.opt.HotSize, encs: sel,
				sample: func(n int, seed uint64) ([]Sample, error) { return b.sampleOffsets(lo, hi, n, seed) }})
		}
	}
	st := &runState{ro: RunOptions{Count: count, BenchTime: bt, Progress: oo.Progress}, bt: bt, count: count, encs: encs}
	return b.runPlans(res, plans, st)
}

// OffsetBucket parses a group's PCs field written by OffsetGroupName.
func OffsetBucket(pcs string) (lo, hi uint32, ok bool) {
	s, ok := strings.CutPrefix(pcs, "offset=")
	if !ok {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(s, "%d-%d", &lo, &hi); err != nil || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// sampleOffsets draws n samples whose byte offset from the function entry
// lies in [lo, hi), from tables that cover offset lo.
func (b *Bench) sampleOffsets(lo, hi uint32, n int, seed uint64) ([]Sample, error) {
	var cands []candidate
	for i := range b.f.Tabs {
		if b.tableBytes(i) <= uint64(lo) {
			continue
		}
		for j := range b.f.Tabs[i].Refs {
			cands = append(cands, candidate{tab: int32(i), ref: int32(j), n: 1})
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("lookupbench: no table covers byte offset %d", lo)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(lo)<<32|uint64(hi)))
	pick := b.picker(cands)
	out := make([]Sample, n)
	for i := range out {
		c := pick(rng)
		ref := b.f.Tabs[c.tab].Refs[c.ref]
		end := min(uint64(hi), b.tableBytes(int(c.tab)))
		first, last := lo/b.q, uint32((end-1)/uint64(b.q)) // PC-quantum steps
		out[i] = Sample{Tab: c.tab, Func: int32(ref.Func), Kind: ref.Kind, PC: (first + rng.Uint32N(last-first+1)) * b.q}
	}
	return out, nil
}
