package lookupbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/stat"
)

// BenchTime is how long each benchmark runs, with the meaning of go test's
// -benchtime: at least D, or exactly N lookups when N > 0. It implements
// flag.Value.
type BenchTime struct {
	D time.Duration
	N int
}

// defaultBenchTime is go test's default, one second.
const defaultBenchTime = time.Second

// ParseBenchTime parses a duration such as "1s" or "300ms", or a count
// such as "1000x".
func ParseBenchTime(s string) (BenchTime, error) {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		v, err := strconv.ParseInt(n, 10, 0)
		if err != nil || v <= 0 {
			return BenchTime{}, fmt.Errorf("invalid count %q", s)
		}
		return BenchTime{N: int(v)}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return BenchTime{}, fmt.Errorf("invalid duration %q", s)
	}
	return BenchTime{D: d}, nil
}

// String returns t in the form ParseBenchTime accepts.
func (t BenchTime) String() string {
	if t.N > 0 {
		return fmt.Sprintf("%dx", t.N)
	}
	if t.D == 0 {
		return defaultBenchTime.String()
	}
	return t.D.String()
}

// Set parses s into t, for the flag package.
func (t *BenchTime) Set(s string) error {
	v, err := ParseBenchTime(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// RunOptions configure [Bench.Run].
type RunOptions struct {
	// Count is the number of rounds, as go test -count; 0 means 1.
	Count int
	// BenchTime is the time or count of each run; zero means 1s.
	BenchTime BenchTime
	// Match selects benchmarks by name, such as
	// "set=hot/pcs=random/enc=linear"; nil selects all.
	Match func(name string) bool
	// Progress, if not nil, is called before each timed benchmark with
	// the number done so far, the total and the benchmark's name.
	Progress func(done, total int, name string)
}

// Result is the outcome of [Bench.Run]. Its JSON form is stable: field
// names do not change, new fields may be added.
type Result struct {
	Host      Host   `json:"host"`      // the machine that timed the lookups
	Sampling  string `json:"sampling"`  // "references" or "tables": what samples are uniform over
	BenchTime string `json:"benchtime"` // as -benchtime
	Count     int    `json:"count"`     // rounds
	// ReturnAddresses is the number of call instructions disassembly found,
	// Disassembler the package that decoded them ("x86asm", "arm64asm"),
	// and NoReturnAddresses why there are none.
	ReturnAddresses   int            `json:"return_addresses"`
	Disassembler      string         `json:"disassembler,omitempty"`
	NoReturnAddresses string         `json:"no_return_addresses,omitempty"`
	Encodings         []EncodingInfo `json:"encodings"`
	// Clock is what the medians in the text report and the ratios are
	// computed from: "thread-cpu", the CPU time of the timing thread,
	// which leaves out the time other processes took the CPU away (on
	// Linux), or "wall", the elapsed time go test reports.
	Clock string `json:"clock"`
	// WallPerCPU is the total wall time of all runs divided by their total
	// thread CPU time: how much other processes slowed the wall clock
	// (1 on an idle machine); 0 without a CPU clock.
	WallPerCPU float64 `json:"wall_per_cpu,omitempty"`
	Groups     []Group `json:"groups"`
}

// Clocks of Result.Clock.
const (
	ClockThreadCPU = "thread-cpu"
	ClockWall      = "wall"
)

// Group is the timings of one sample set under one PC rule.
type Group struct {
	Set       string   `json:"set"`                  // "hot", "hot-shuffled" or "cold"
	PCs       string   `json:"pcs"`                  // "random", "0", "4096", "ret" or "random-fallback"
	Samples   int      `json:"samples"`              // (table, PC) pairs
	Tables    int      `json:"tables"`               // distinct tables among them
	FlatBytes int64    `json:"flat_bytes,omitempty"` // memory of the flat encoding of those tables
	Note      string   `json:"note,omitempty"`       // why the group fell back or was skipped
	Timings   []Timing `json:"timings,omitempty"`
	// LinearVsVarint and LinearVsCacheHit are the median, over rounds,
	// of linear's time per lookup divided by varint's (the runtime-shaped
	// walk, no cache) and by varint-cache-7in8's in the same round, on the
	// Result's Clock; 0 when either was not timed.
	LinearVsVarint   float64 `json:"linear_vs_varint,omitempty"`
	LinearVsCacheHit float64 `json:"linear_vs_varint_cache_hit,omitempty"`
	// Ratios holds, for every encoding and each baseline (varint,
	// varint-walk, varint-cache-7in8), the median over rounds of the two
	// times in the same round, with its 95% confidence interval
	// (benchmath, at least 6 rounds).
	Ratios []Ratio `json:"ratios,omitempty"`
}

// Ratio is an encoding's time per lookup divided by a baseline's, summarized
// over the rounds that timed both side by side.
type Ratio struct {
	Encoding string       `json:"encoding"`
	Baseline string       `json:"baseline"`
	Summary  stat.Summary `json:"summary"`
}

// Ratio returns the ratio of enc to baseline, or nil.
func (g *Group) Ratio(enc, baseline string) *Ratio {
	for i := range g.Ratios {
		if r := &g.Ratios[i]; r.Encoding == enc && r.Baseline == baseline {
			return r
		}
	}
	return nil
}

// Baselines are the encodings Group.Ratios divides by.
var Baselines = []string{EncVarint, EncVarintWalk, EncVarintCacheHit}

// Timing is the timings of one encoding in one group.
type Timing struct {
	Encoding   string  `json:"encoding"`
	NsPerOp    float64 `json:"ns_per_op"`               // median over the runs, wall time
	CPUNsPerOp float64 `json:"cpu_ns_per_op,omitempty"` // median over the runs, thread CPU time
	// Summary is the median over the runs on the Result's Clock, with its
	// 95% confidence interval (benchmath, at least 6 runs).
	Summary stat.Summary `json:"summary"`
	// HitRate is the varint cache's hits per lookup, over all runs, for
	// the cache encodings.
	HitRate *float64 `json:"hit_rate,omitempty"`
	Runs    []Run    `json:"runs"`
}

// Run is one timed run: Iters lookups at NsPerOp each (wall time), and
// CPUNsPerOp each in CPU time of the timing thread, 0 if unknown.
type Run struct {
	Iters      int      `json:"iters"`
	NsPerOp    float64  `json:"ns_per_op"`
	CPUNsPerOp float64  `json:"cpu_ns_per_op,omitempty"`
	HitRate    *float64 `json:"hit_rate,omitempty"`
}

// ns returns the time per lookup on clock.
func (r *Run) ns(clock string) float64 {
	if clock == ClockThreadCPU {
		return r.CPUNsPerOp
	}
	return r.NsPerOp
}

// Ns returns the median time per lookup on clock.
func (t *Timing) Ns(clock string) float64 {
	if clock == ClockThreadCPU {
		return t.CPUNsPerOp
	}
	return t.NsPerOp
}

// Timing returns the timing of the named encoding, or nil.
func (g *Group) Timing(enc string) *Timing {
	for i := range g.Timings {
		if g.Timings[i].Encoding == enc {
			return &g.Timings[i]
		}
	}
	return nil
}

// runPlans times every plan, Count rounds each, into res's groups, and
// summarizes them with the clock the rounds were timed by.
func (b *Bench) runPlans(res *Result, plans []plan, st *runState) (*Result, error) {
	for _, pl := range plans {
		st.total += len(pl.encs) * st.count
	}
	for _, pl := range plans {
		g, err := b.runGroup(pl, st)
		if err != nil {
			return nil, err
		}
		res.Groups = append(res.Groups, g)
	}
	res.Clock = ClockWall
	if !st.noCPU && st.cpu > 0 {
		res.Clock = ClockThreadCPU
		res.WallPerCPU = float64(st.wall) / float64(st.cpu)
	}
	for i := range res.Groups {
		summarize(&res.Groups[i], res.Clock)
	}
	if st.ro.Progress != nil {
		st.ro.Progress(st.done, st.total, "")
	}
	return res, nil
}

// Name returns the benchmark name of encoding enc in g, such as
// "set=hot/pcs=random/enc=linear".
func (g *Group) Name(enc string) string {
	return "set=" + g.Set + "/pcs=" + g.PCs + "/enc=" + enc
}

// Run times every selected benchmark: for the hot and the cold set, for
// every PC rule, every encoding, Count rounds. It fails if an encoding gives
// a wrong value for any sample.
func (b *Bench) Run(ro RunOptions) (*Result, error) {
	count := max(ro.Count, 1)
	bt := ro.BenchTime
	if bt.N <= 0 && bt.D <= 0 {
		bt = BenchTime{D: defaultBenchTime}
	}
	encs := b.encodings()
	infos := b.Encodings()
	res := &Result{
		Host: CurrentHost(), Sampling: b.opt.Sampling.String(), BenchTime: bt.String(), Count: count,
		ReturnAddresses: b.numCalls, Disassembler: b.disasm, NoReturnAddresses: b.noCalls, Encodings: infos,
	}
	plans := b.plans(encs, ro.Match)
	st := &runState{ro: ro, bt: bt, count: count, encs: encs}
	return b.runPlans(res, plans, st)
}

// plan is one group to time: a sample set, a PC rule and the selected
// encodings (indexes into Encodings).
type plan struct {
	g    Group
	size int
	pcs  PCs
	encs []int
	// sample, if not nil, draws the group's samples instead of the PC
	// rule pcs.
	sample func(n int, seed uint64) ([]Sample, error)
}

// Sample sets (access patterns) of Group.Set.
const (
	// SetHot is the hot set looked up in the same order on every pass, as
	// golang/go#61984's benchmark does.
	SetHot = "hot"
	// SetHotShuffled is the same pairs in an order shuffled for every
	// pass: ShuffledPasses passes, each a different permutation, repeat.
	SetHotShuffled = "hot-shuffled"
	// SetCold is the cold set, looked up in order.
	SetCold = "cold"
)

// ShuffledPasses is the number of differently shuffled passes over the hot
// set after which the hot-shuffled pattern repeats: 32 passes of 1,024
// pairs are far more lookups than a branch predictor can learn.
const ShuffledPasses = 32

// order returns the order in which one pass of a pattern visits n samples.
func order(set string, n int, seed uint64) []uint32 {
	passes := 1
	if set == SetHotShuffled {
		passes = ShuffledPasses
	}
	o := make([]uint32, n*passes)
	rng := rand.New(rand.NewPCG(seed, 0x5f))
	for p := 0; p < passes; p++ {
		pass := o[p*n : (p+1)*n]
		for i := range pass {
			pass[i] = uint32(i)
		}
		if passes > 1 {
			rng.Shuffle(n, func(i, j int) { pass[i], pass[j] = pass[j], pass[i] })
		}
	}
	return o
}

// plans lists the groups that have a benchmark match selects.
func (b *Bench) plans(encs []encoding, match func(string) bool) []plan {
	var plans []plan
	for _, set := range []struct {
		name string
		size int
	}{{SetHot, b.opt.HotSize}, {SetHotShuffled, b.opt.HotSize}, {SetCold, b.opt.ColdSize}} {
		for _, p := range AllPCs() {
			g := Group{Set: set.name, PCs: p.String()}
			if p == PCReturn && b.calls == nil {
				p = PCRandom
				g.PCs = "random-fallback"
				g.Note = "no return addresses (" + b.noCalls + "): random PCs instead"
			}
			var sel []int
			for e := range encs {
				if match == nil || match(g.Name(encs[e].info.Name)) {
					sel = append(sel, e)
				}
			}
			if len(sel) > 0 {
				plans = append(plans, plan{g: g, size: set.size, pcs: p, encs: sel})
			}
		}
	}
	return plans
}

// runState is the progress of a Run.
type runState struct {
	ro          RunOptions
	bt          BenchTime
	count       int
	encs        []encoding
	done, total int
	noCPU       bool          // some run had no CPU time
	wall, cpu   time.Duration // totals over all runs
}

// runGroup samples the group's set and times its encodings: count rounds,
// each running every encoding once, starting one encoding later than the
// round before.
func (b *Bench) runGroup(pl plan, st *runState) (Group, error) {
	g := pl.g
	seed := b.opt.Seed ^ uint64(pl.size)
	var samples []Sample
	var err error
	if pl.sample != nil {
		samples, err = pl.sample(pl.size, seed)
	} else {
		samples, err = b.Sample(pl.pcs, pl.size, seed)
	}
	if err != nil {
		g.Note = err.Error()
		st.done += len(pl.encs) * st.count
		return g, nil
	}
	ref, tables, err := b.reference(samples)
	if err != nil {
		return g, err
	}
	g.Samples, g.Tables = len(samples), tables
	g.Timings = make([]Timing, len(pl.encs))
	for k, e := range pl.encs {
		g.Timings[k].Encoding = st.encs[e].info.Name
	}
	ord := order(g.Set, len(samples), seed)
	for round := 0; round < st.count; round++ {
		for k0 := range pl.encs {
			k := (k0 + round) % len(pl.encs)
			name := g.Timings[k].Encoding
			if st.ro.Progress != nil {
				st.ro.Progress(st.done, st.total, g.Name(name))
			}
			// The flat tables can take hundreds of megabytes: they live
			// only while their encoding is timed.
			var flat *flatTables
			if name == EncFlat {
				if flat, err = b.buildFlat(samples); err != nil {
					return g, err
				}
				g.FlatBytes = 4 * int64(len(flat.vals))
			}
			kern := st.encs[pl.encs[k]].prepare(b, kernelInput{samples: samples, order: ord, flat: flat, seed: seed})
			if round == 0 {
				if err := kern.check(name, samples, ref); err != nil {
					return g, err
				}
			}
			n, wall, cpu := b.measure(kern.run, st.bt)
			r := Run{Iters: n, NsPerOp: float64(wall.Nanoseconds()) / float64(n)}
			if cpu >= 0 {
				r.CPUNsPerOp = float64(cpu.Nanoseconds()) / float64(n)
				st.cpu += cpu
			} else {
				st.noCPU = true
			}
			st.wall += wall
			if c := kern.cache; c != nil {
				h := float64(c.Hits) / float64(c.Hits+c.Misses)
				r.HitRate = &h
			}
			g.Timings[k].Runs = append(g.Timings[k].Runs, r)
			st.done++
		}
	}
	return g, nil
}

// reference returns the value of every sample from the decoded tables and
// the number of distinct tables the samples touch.
func (b *Bench) reference(samples []Sample) ([]int32, int, error) {
	ref := make([]int32, len(samples))
	seen := make(map[int32]bool)
	for i, s := range samples {
		v, ok := b.tabs[s.Tab].Lookup(s.PC / b.q)
		if !ok {
			return nil, 0, fmt.Errorf("lookupbench: sample %d: table %d does not cover byte offset %#x", i, s.Tab, s.PC)
		}
		ref[i] = v
		seen[s.Tab] = true
	}
	return ref, len(seen), nil
}

// summarize fills in the medians, hit rates and ratios of g; the
// summaries and ratios on clock.
func summarize(g *Group, clock string) {
	for i := range g.Timings {
		t := &g.Timings[i]
		ns := make([]float64, len(t.Runs))
		cpu := make([]float64, len(t.Runs))
		var hits, ops float64
		for j, r := range t.Runs {
			ns[j] = r.NsPerOp
			cpu[j] = r.CPUNsPerOp
			if r.HitRate != nil {
				hits += *r.HitRate * float64(r.Iters)
				ops += float64(r.Iters)
			}
		}
		t.NsPerOp = stat.Of(ns).Median
		t.CPUNsPerOp = stat.Of(cpu).Median
		t.Summary = stat.Of(runsOn(t, clock))
		if ops > 0 {
			h := hits / ops
			t.HitRate = &h
		}
	}
	g.Ratios = nil
	for _, base := range Baselines {
		bt := g.Timing(base)
		if bt == nil {
			continue
		}
		for i := range g.Timings {
			t := &g.Timings[i]
			if t.Encoding == base {
				continue
			}
			g.Ratios = append(g.Ratios, Ratio{t.Encoding, base, stat.Ratios(runsOn(t, clock), runsOn(bt, clock))})
		}
	}
	if r := g.Ratio(EncLinear, EncVarint); r != nil {
		g.LinearVsVarint = r.Summary.Median
	}
	if r := g.Ratio(EncLinear, EncVarintCacheHit); r != nil {
		g.LinearVsCacheHit = r.Summary.Median
	}
}

// runsOn returns the time per lookup of each of t's runs on clock.
func runsOn(t *Timing, clock string) []float64 {
	ns := make([]float64, len(t.Runs))
	for i := range t.Runs {
		ns[i] = t.Runs[i].ns(clock)
	}
	return ns
}

// maxIters bounds the lookups of one run, as go test bounds b.N.
const maxIters = 1e9

// measure runs run with go test's benchmark semantics and returns the
// lookups, the wall time and the thread CPU time (-1 if unknown) of the
// last run: with a count, one run of that many lookups; with a duration,
// runs of growing size until one takes at least that long in wall time.
func (b *Bench) measure(run func(n int) int64, bt BenchTime) (int, time.Duration, time.Duration) {
	var cpu time.Duration
	timed := func(n int) time.Duration {
		runtime.GC()
		// The thread's CPU clock is only meaningful while the goroutine
		// stays on it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, ok0 := cputime.Thread()
		start := time.Now()
		b.sink += run(n)
		d := time.Since(start)
		c1, ok1 := cputime.Thread()
		cpu = -1
		if ok0 && ok1 {
			cpu = c1 - c0
		}
		return d
	}
	if bt.N > 0 {
		d := timed(bt.N)
		return bt.N, d, cpu
	}
	n := 1
	d := timed(n)
	for d < bt.D && n < maxIters {
		last := n
		prevns := max(d.Nanoseconds(), 1)
		// testing's predictN: aim 20% past the goal, grow at most 100x.
		m := float64(bt.D.Nanoseconds()) * float64(last) / float64(prevns)
		m += m / 5
		m = math.Min(m, 100*float64(last))
		m = math.Max(m, float64(last+1))
		m = math.Min(m, maxIters)
		n = int(m)
		d = timed(n)
	}
	return n, d, cpu
}
