package libbench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/pctab/pctab/toolchain"
)

// Results are Run's or Instructions' results, read back: for each
// library, benchmark and flavour, the values of one unit (seconds or
// instructions per operation), in round order.
type Results struct {
	Unit      string
	Libraries []string                                // in the order of first appearance
	Keys      map[string][]Key                        // per library, in the order of first appearance
	Flavours  []string                                // baseline first, then in toolchain.Flavours order, then others by name
	Times     map[string]map[Key]map[string][]float64 // library, benchmark, flavour
	Baseline  string                                  // the stock flavour's name
}

// ReadResults reads the values of unit (benchfmt's: "sec/op" for times,
// "instructions/op") from the Go benchmark format as Run and Instructions
// write it (each result under the configuration keys library, variant and
// toolchain). Results without a library key belong to library "".
func ReadResults(r io.Reader, unit string) (*Results, error) {
	res := &Results{Unit: unit, Keys: map[string][]Key{}, Times: map[string]map[Key]map[string][]float64{}}
	seenFl := map[string]bool{}
	br := benchfmt.NewReader(r, "results")
	for br.Scan() {
		rec, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		lib, fl := rec.GetConfig("library"), rec.GetConfig("toolchain")
		k := Key{Variant: rec.GetConfig("variant"), Name: string(rec.Name.Full())}
		for _, v := range rec.Values {
			if v.Unit != unit {
				continue
			}
			if res.Times[lib] == nil {
				res.Times[lib] = map[Key]map[string][]float64{}
				res.Libraries = append(res.Libraries, lib)
			}
			if res.Times[lib][k] == nil {
				res.Times[lib][k] = map[string][]float64{}
				res.Keys[lib] = append(res.Keys[lib], k)
			}
			res.Times[lib][k][fl] = append(res.Times[lib][k][fl], v.Value)
			seenFl[fl] = true
		}
	}
	if err := br.Err(); err != nil {
		return nil, fmt.Errorf("libbench: reading results: %w", err)
	}
	for _, fl := range toolchain.Flavours() {
		if fl.Stock && res.Baseline == "" {
			res.Baseline = fl.Name
		}
	}
	if seenFl[res.Baseline] {
		res.Flavours = append(res.Flavours, res.Baseline)
	}
	for _, fl := range toolchain.Flavours() {
		if seenFl[fl.Name] && fl.Name != res.Baseline {
			res.Flavours = append(res.Flavours, fl.Name)
			delete(seenFl, fl.Name)
		}
	}
	delete(seenFl, res.Baseline)
	var others []string
	for fl := range seenFl {
		others = append(others, fl)
	}
	slices.Sort(others)
	res.Flavours = append(res.Flavours, others...)
	return res, nil
}

// A Stat is a median with benchstat's 95% confidence interval
// (benchmath.AssumeNothing: distribution-free, from order statistics).
// Lo and Hi are infinite when there are too few samples for the interval.
type Stat struct {
	Center, Lo, Hi float64
	N              int
}

func summarize(vals []float64) Stat {
	if len(vals) == 0 {
		return Stat{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds), 0.95)
	return Stat{s.Center, s.Lo, s.Hi, len(vals)}
}

// A Comparison is one benchmark of one flavour against the baseline.
type Comparison struct {
	Time Stat // the flavour's time per operation, seconds
	// Ratio is the ratio of the medians, flavour over baseline (what
	// benchstat prints as the change).
	Ratio float64
	// Paired is the median of the per-round ratios (flavour over baseline
	// in the same round) with its 95% interval: the interval the goals
	// are checked against. Rounds are matched by order.
	Paired Stat
	P      float64 // Mann-Whitney U test against the baseline
}

// Compare compares benchmark k of lib in flavour fl with the baseline.
func (r *Results) Compare(lib string, k Key, fl string) (Comparison, bool) {
	base, vals := r.Times[lib][k][r.Baseline], r.Times[lib][k][fl]
	if len(base) == 0 || len(vals) == 0 {
		return Comparison{}, false
	}
	c := Comparison{Time: summarize(vals)}
	bs := summarize(base)
	c.Ratio = c.Time.Center / bs.Center
	c.Paired = summarize(pairedRatios(vals, base))
	c.P = benchmath.AssumeNothing.Compare(
		benchmath.NewSample(slices.Clone(base), &benchmath.DefaultThresholds),
		benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds)).P
	return c, true
}

func pairedRatios(num, den []float64) []float64 {
	n := min(len(num), len(den))
	out := make([]float64, 0, n)
	for i := range n {
		out = append(out, num[i]/den[i])
	}
	return out
}

// Geomean returns the geometric mean, over lib's benchmarks measured in
// both, of flavour fl's ratio of medians to the baseline, and the number of
// benchmarks.
func (r *Results) Geomean(lib, fl string) (float64, int) {
	sum, n := 0.0, 0
	for _, k := range r.Keys[lib] {
		if c, ok := r.Compare(lib, k, fl); ok && c.Ratio > 0 {
			sum += math.Log(c.Ratio)
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return math.Exp(sum / float64(n)), n
}

// A Price is the price of caller information in one flavour: the
// difference of the medians of the benchmark with the caller and without,
// and that difference over the baseline's.
type Price struct {
	Diff  float64 // seconds per operation, with minus without
	Ratio float64 // Diff over the baseline's Diff
	// Paired is the median of the per-round ratios of the differences,
	// with its 95% interval.
	Paired Stat
}

// Price returns pair p's price of lib in flavour fl.
func (r *Results) Price(lib string, p Pair, fl string) (Price, bool) {
	t := r.Times[lib]
	w, wo, bw, bwo := t[p.With][fl], t[p.Without][fl], t[p.With][r.Baseline], t[p.Without][r.Baseline]
	if len(w) == 0 || len(wo) == 0 || len(bw) == 0 || len(bwo) == 0 {
		return Price{}, false
	}
	d := summarize(w).Center - summarize(wo).Center
	bd := summarize(bw).Center - summarize(bwo).Center
	n := min(len(w), len(wo), len(bw), len(bwo))
	per := make([]float64, n)
	for i := range n {
		per[i] = (w[i] - wo[i]) / (bw[i] - bwo[i])
	}
	return Price{Diff: d, Ratio: d / bd, Paired: summarize(per)}, true
}

// Summarize writes the summary of Run's results: for each library a table
// of every benchmark in every flavour (median and its 95% interval, the
// ratio of medians to stock, the per-round paired ratio and its 95%
// interval, the U test's p), each library's geomean of the ratios, and for
// the suite's pairs the price of caller information.
func Summarize(r io.Reader, w io.Writer, suite []Library) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	n := 0
	for _, u := range []struct{ unit, title string }{
		{"sec/op", "time per operation"},
		{"instructions/op", "instructions per operation (cachegrind)"},
	} {
		res, err := ReadResults(bytes.NewReader(data), u.unit)
		if err != nil {
			return err
		}
		if len(res.Libraries) == 0 {
			continue
		}
		if res.Baseline == "" || len(res.Flavours) == 0 || res.Flavours[0] != res.Baseline {
			return fmt.Errorf("libbench: the results have no %q flavour to compare with", res.Baseline)
		}
		if n > 0 {
			fmt.Fprintln(w)
		}
		n++
		fmt.Fprintf(w, "## %s\n\n", u.title)
		summarizeUnit(res, w, suite)
	}
	if n == 0 {
		return fmt.Errorf("libbench: no results")
	}
	return nil
}

func summarizeUnit(res *Results, w io.Writer, suite []Library) {
	duration := duration
	if res.Unit != "sec/op" {
		duration = func(v float64) string { return fmt.Sprintf("%.0f", v) }
	}
	pairs := map[string][]Pair{}
	for _, l := range suite {
		pairs[l.Name] = l.Pairs
	}
	for _, lib := range res.Libraries {
		fmt.Fprintf(w, "# %s\n", libName(lib))
		fmt.Fprintf(w, "%-44s %-18s %10s %5s %7s %21s %6s %3s\n", "benchmark", "flavour", "median", "±", "×stock", "paired ×stock [95%]", "p", "n")
		for _, k := range res.Keys[lib] {
			name := k.String()
			for _, fl := range res.Flavours {
				c, ok := res.Compare(lib, k, fl)
				if !ok {
					continue
				}
				ratio, paired, p := "", "", ""
				if fl != res.Baseline {
					ratio = fmt.Sprintf("%.3f", c.Ratio)
					paired = interval(c.Paired)
					p = fmt.Sprintf("%.3f", c.P)
				}
				fmt.Fprintf(w, "%-44s %-18s %10s %5s %7s %21s %6s %3d\n", name, fl, duration(c.Time.Center), pct(c.Time), ratio, paired, p, c.Time.N)
				name = ""
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# geomean of ×stock over each library's benchmarks\n%-12s %4s", "library", "n")
	for _, fl := range res.Flavours[1:] {
		fmt.Fprintf(w, " %18s", fl)
	}
	fmt.Fprintln(w)
	for _, lib := range res.Libraries {
		_, n := res.Geomean(lib, res.Baseline)
		fmt.Fprintf(w, "%-12s %4d", libName(lib), n)
		for _, fl := range res.Flavours[1:] {
			g, _ := res.Geomean(lib, fl)
			fmt.Fprintf(w, " %18.3f", g)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n# the price of caller information: (with - without) in each flavour, over stock's\n")
	fmt.Fprintf(w, "%-50s %-18s %10s %7s %21s\n", "pair", "flavour", "price", "×stock", "paired ×stock [95%]")
	for _, lib := range res.Libraries {
		for _, p := range pairs[lib] {
			name := p.Name
			for _, fl := range res.Flavours {
				pr, ok := res.Price(lib, p, fl)
				if !ok {
					continue
				}
				ratio, paired := "", ""
				if fl != res.Baseline {
					ratio = fmt.Sprintf("%.3f", pr.Ratio)
					paired = interval(pr.Paired)
				}
				fmt.Fprintf(w, "%-50s %-18s %10s %7s %21s\n", name, fl, duration(pr.Diff), ratio, paired)
				name = ""
			}
		}
	}
	limit, what := 1.03, "paired intervals' upper bounds"
	if res.Unit != "sec/op" {
		limit, what = 1.00, "ratios"
	}
	fmt.Fprintf(w, "\n# goals: every one of the %s <= %.2f; every price <= 0.6× stock's\n", what, limit)
	for _, fl := range res.Flavours[1:] {
		var worst float64
		var worstName string
		above, total := 0, 0
		for _, lib := range res.Libraries {
			for _, k := range res.Keys[lib] {
				c, ok := res.Compare(lib, k, fl)
				if !ok {
					continue
				}
				total++
				hi := c.Paired.Hi
				if res.Unit != "sec/op" {
					hi = c.Ratio
				}
				if hi > limit {
					above++
				}
				if hi > worst || worstName == "" {
					worst, worstName = hi, libName(lib)+" "+k.String()
				}
			}
		}
		priceMet, prices := 0, 0
		for _, lib := range res.Libraries {
			for _, p := range pairs[lib] {
				if pr, ok := res.Price(lib, p, fl); ok {
					prices++
					if pr.Ratio <= 0.6 {
						priceMet++
					}
				}
			}
		}
		fmt.Fprintf(w, "%-18s %d of %d above %.2f (highest %.3f: %s); %d of %d prices <= 0.6× stock's\n", fl, above, total, limit, worst, worstName, priceMet, prices)
	}
}

func libName(lib string) string {
	if lib == "" {
		return "(no library)"
	}
	return lib
}

// interval formats a paired ratio and its interval.
func interval(s Stat) string {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || math.IsNaN(s.Lo) {
		return fmt.Sprintf("%.3f [∞]", s.Center)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", s.Center, s.Lo, s.Hi)
}

// pct formats the half-width of a median's interval as benchstat does
// (the larger distance to a bound, in percent of the median).
func pct(s Stat) string {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return "∞"
	}
	if s.Center == 0 {
		return "?"
	}
	d := math.Max(s.Center-s.Lo, s.Hi-s.Center) / math.Abs(s.Center)
	return fmt.Sprintf("%.0f%%", 100*d)
}

// duration formats seconds per operation.
func duration(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "-"
	case a >= 1:
		return fmt.Sprintf("%.3fs", v)
	case a >= 1e-3:
		return fmt.Sprintf("%.3fms", v*1e3)
	case a >= 1e-6:
		return fmt.Sprintf("%.3fµs", v*1e6)
	}
	return fmt.Sprintf("%.1fns", v*1e9)
}
