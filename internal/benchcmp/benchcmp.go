// Package benchcmp compares benchmark results measured round-robin against
// a baseline, with benchstat's statistics (golang.org/x/perf/benchmath):
// each flavour's median and its distribution-free 95% interval, the ratio
// of medians, the Mann-Whitney U test, and the median of the per-round
// ratios with its 95% interval, which is what a goal such as "no interval
// above 1.03×" is checked against.
//
// Results are read from the Go benchmark format (golang.org/x/perf/benchfmt)
// as pctab-toolchain's bench and libbench write it: each result under a
// "toolchain" configuration key naming its flavour, and optionally a
// "library" and a "variant" key grouping and qualifying benchmarks.
package benchcmp

import (
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// A Key names a benchmark within its group: the variant of the code it ran
// (a configuration key, "" for none) and the benchmark's name without
// "Benchmark" (e.g. "Callers/cached-2").
type Key struct {
	Variant string
	Name    string
}

// String returns the name, followed by the variant in brackets if any.
func (k Key) String() string {
	if k.Variant == "" {
		return k.Name
	}
	return k.Name + " [" + k.Variant + "]"
}

// Results hold the values of one unit (seconds or instructions per
// operation) for each group, benchmark and flavour, in round order.
type Results struct {
	Unit     string
	Groups   []string                                // the "library" keys, in the order of first appearance
	Keys     map[string][]Key                        // per group, in the order of first appearance
	Flavours []string                                // the baseline first, then in the order given to Read, then others by name
	Values   map[string]map[Key]map[string][]float64 // group, benchmark, flavour
	Baseline string                                  // the baseline flavour's name
}

// Read reads the values of unit (benchfmt's: "sec/op" for times,
// "instructions/op") from r. order lists the known flavours; its first
// element is the baseline. Results without a "library" key belong to
// group "".
func Read(r io.Reader, unit string, order []string) (*Results, error) {
	res := &Results{Unit: unit, Keys: map[string][]Key{}, Values: map[string]map[Key]map[string][]float64{}}
	if len(order) > 0 {
		res.Baseline = order[0]
	}
	seen := map[string]bool{}
	br := benchfmt.NewReader(r, "results")
	for br.Scan() {
		rec, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		g, fl := rec.GetConfig("library"), rec.GetConfig("toolchain")
		k := Key{Variant: rec.GetConfig("variant"), Name: string(rec.Name.Full())}
		for _, v := range rec.Values {
			if v.Unit != unit {
				continue
			}
			if res.Values[g] == nil {
				res.Values[g] = map[Key]map[string][]float64{}
				res.Groups = append(res.Groups, g)
			}
			if res.Values[g][k] == nil {
				res.Values[g][k] = map[string][]float64{}
				res.Keys[g] = append(res.Keys[g], k)
			}
			res.Values[g][k][fl] = append(res.Values[g][k][fl], v.Value)
			seen[fl] = true
		}
	}
	if err := br.Err(); err != nil {
		return nil, fmt.Errorf("benchcmp: reading results: %w", err)
	}
	for _, fl := range order {
		if seen[fl] {
			res.Flavours = append(res.Flavours, fl)
			delete(seen, fl)
		}
	}
	var others []string
	for fl := range seen {
		others = append(others, fl)
	}
	slices.Sort(others)
	res.Flavours = append(res.Flavours, others...)
	return res, nil
}

// HasBaseline reports whether the results hold the baseline flavour.
func (r *Results) HasBaseline() bool {
	return r.Baseline != "" && len(r.Flavours) > 0 && r.Flavours[0] == r.Baseline
}

// A Stat is a median with benchstat's 95% confidence interval
// (benchmath.AssumeNothing: distribution-free, from order statistics).
// Lo and Hi are infinite when there are too few samples for the interval.
type Stat struct {
	Center, Lo, Hi float64
	N              int
}

// Summarize returns the median of vals and its 95% interval.
func Summarize(vals []float64) Stat {
	if len(vals) == 0 {
		return Stat{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds), 0.95)
	return Stat{s.Center, s.Lo, s.Hi, len(vals)}
}

// A Comparison is one benchmark of one flavour against the baseline.
type Comparison struct {
	Value Stat // the flavour's value per operation
	// Ratio is the ratio of the medians, flavour over baseline (what
	// benchstat prints as the change).
	Ratio float64
	// Paired is the median of the per-round ratios (flavour over baseline
	// in the same round) with its 95% interval. Rounds are matched by
	// order.
	Paired Stat
	// Shift is the two-sample ratio with its 95% interval (see [Shift]):
	// the interval that matches the U test, for rounds whose pairing says
	// nothing, such as rounds in random function layouts.
	Shift Stat
	P     float64 // Mann-Whitney U test against the baseline
}

// Compare compares benchmark k of group g in flavour fl with the baseline.
func (r *Results) Compare(g string, k Key, fl string) (Comparison, bool) {
	base, vals := r.Values[g][k][r.Baseline], r.Values[g][k][fl]
	if len(base) == 0 || len(vals) == 0 {
		return Comparison{}, false
	}
	c := Comparison{Value: Summarize(vals)}
	c.Ratio = c.Value.Center / Summarize(base).Center
	c.Paired = Summarize(PerRound(vals, base, nil, nil))
	c.Shift = Shift(base, vals)
	c.P = benchmath.AssumeNothing.Compare(
		benchmath.NewSample(slices.Clone(base), &benchmath.DefaultThresholds),
		benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds)).P
	return c, true
}

// Shift returns the Hodges-Lehmann estimate of the ratio of vals to base,
// the median of the ratios of every value of vals to every value of base,
// with its distribution-free 95% confidence interval (Moses): the C-th
// smallest and largest of those m·n ratios, where C is the lower critical
// value of the Mann-Whitney U statistic at 95%, by the normal
// approximation (close from about 8 samples a side). The interval
// excludes 1 where the U test finds the samples different at about 5%. Lo
// and Hi are infinite when there are too few samples for an interval.
// Values that are not positive and finite are left out; with none left on
// a side, every field is NaN. It takes O((m+n) log) time and O(m+n)
// memory: the m·n ratios are never listed.
func Shift(base, vals []float64) Stat {
	a, b := logs(base), logs(vals)
	m, n := len(a), len(b)
	if m == 0 || n == 0 {
		return Stat{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	mn := m * n
	center := kthDiff(a, b, mn/2)
	if mn%2 == 0 {
		center = (kthDiff(a, b, mn/2-1) + center) / 2
	}
	s := Stat{Center: math.Exp(center), Lo: math.Inf(-1), Hi: math.Inf(1), N: n}
	fmn := float64(mn)
	if c := int(math.Floor(fmn/2 - 1.959964*math.Sqrt(fmn*float64(m+n+1)/12))); c >= 0 {
		s.Lo, s.Hi = math.Exp(kthDiff(a, b, c)), math.Exp(kthDiff(a, b, mn-1-c))
	}
	return s
}

// logs returns the logarithms of the positive, finite values of vals,
// sorted.
func logs(vals []float64) []float64 {
	out := make([]float64, 0, len(vals))
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 1) {
			out = append(out, math.Log(v))
		}
	}
	slices.Sort(out)
	return out
}

// kthDiff returns the k-th smallest (from 0) of the differences b[i] -
// a[j] over every i and j, a and b sorted: a bisection on the value
// between lo, with at most k differences at or below it, and hi, with more,
// each step counting the differences at or below the midpoint in one pass;
// the answer is then the smallest difference above lo.
func kthDiff(a, b []float64, k int) float64 {
	lo, hi := b[0]-a[len(a)-1], b[len(b)-1]-a[0]
	if n, _ := countAtMost(a, b, lo); n > k {
		return lo
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if n, _ := countAtMost(a, b, mid); n > k {
			hi = mid
		} else {
			lo = mid
		}
	}
	_, next := countAtMost(a, b, lo)
	return next
}

// countAtMost returns how many differences b[i] - a[j] are at most t, and
// the smallest difference above t (+Inf if none), a and b sorted.
func countAtMost(a, b []float64, t float64) (int, float64) {
	n, next := 0, math.Inf(1)
	// a[j:] are the a with b[i] - a <= t; going down b, the bound b[i] - t
	// falls, so j only falls.
	j := len(a)
	for i := len(b) - 1; i >= 0; i-- {
		for j > 0 && b[i]-a[j-1] <= t {
			j--
		}
		n += len(a) - j
		if j > 0 {
			next = min(next, b[i]-a[j-1])
		}
	}
	return n, next
}

// PerRound returns the per-round ratios (num[i] - numSub[i]) / (den[i] -
// denSub[i]) over the rounds all four have; a nil numSub or denSub counts
// as zeros.
func PerRound(num, den, numSub, denSub []float64) []float64 {
	n := min(len(num), len(den))
	if numSub != nil {
		n = min(n, len(numSub))
	}
	if denSub != nil {
		n = min(n, len(denSub))
	}
	at := func(s []float64, i int) float64 {
		if s == nil {
			return 0
		}
		return s[i]
	}
	out := make([]float64, n)
	for i := range n {
		out[i] = (num[i] - at(numSub, i)) / (den[i] - at(denSub, i))
	}
	return out
}

// Geomean returns the geometric mean, over g's benchmarks measured in
// both, of flavour fl's ratio of medians to the baseline, and the number of
// benchmarks.
func (r *Results) Geomean(g, fl string) (float64, int) {
	sum, n := 0.0, 0
	for _, k := range r.Keys[g] {
		if c, ok := r.Compare(g, k, fl); ok && c.Ratio > 0 {
			sum += math.Log(c.Ratio)
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return math.Exp(sum / float64(n)), n
}
