package libbench

import (
	"bytes"
	"fmt"
	"io"

	"github.com/pctab/pctab/internal/benchcmp"
	"github.com/pctab/pctab/toolchain"
)

// ReadResults reads the values of unit (benchfmt's: "sec/op" for times,
// "instructions/op") from the Go benchmark format as Run and Instructions
// write it (each result under the configuration keys library, variant and
// toolchain), the stock flavour first and the others in toolchain.Flavours
// order.
func ReadResults(r io.Reader, unit string) (*benchcmp.Results, error) {
	return benchcmp.Read(r, unit, toolchain.FlavourNames())
}

// A Price is the price of caller information in one flavour: the
// difference of the medians of the benchmark with the caller and without,
// and that difference over the baseline's.
type Price struct {
	Diff  float64 // seconds per operation, with minus without
	Ratio float64 // Diff over the baseline's Diff
	// Paired is the median of the per-round ratios of the differences,
	// with its 95% interval.
	Paired benchcmp.Stat
}

// PriceOf returns pair p's price of lib in flavour fl.
func PriceOf(r *benchcmp.Results, lib string, p Pair, fl string) (Price, bool) {
	t := r.Values[lib]
	w, wo, bw, bwo := t[p.With][fl], t[p.Without][fl], t[p.With][r.Baseline], t[p.Without][r.Baseline]
	if len(w) == 0 || len(wo) == 0 || len(bw) == 0 || len(bwo) == 0 {
		return Price{}, false
	}
	d := benchcmp.Summarize(w).Center - benchcmp.Summarize(wo).Center
	bd := benchcmp.Summarize(bw).Center - benchcmp.Summarize(bwo).Center
	return Price{Diff: d, Ratio: d / bd, Paired: benchcmp.Summarize(benchcmp.PerRound(w, bw, wo, bwo))}, true
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
		{SymtabUnit, "instructions per operation in the runtime's unwinder and symbol tables (cachegrind): prices only"},
	} {
		res, err := ReadResults(bytes.NewReader(data), u.unit)
		if err != nil {
			return err
		}
		if len(res.Groups) == 0 {
			continue
		}
		if !res.HasBaseline() {
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

func summarizeUnit(res *benchcmp.Results, w io.Writer, suite []Library) {
	pairs := map[string][]Pair{}
	for _, l := range suite {
		pairs[l.Name] = l.Pairs
	}
	symtab := res.Unit == SymtabUnit
	if !symtab {
		res.WriteTables(w)
		res.WriteGeomeans(w, "geomean of ×stock over each library's benchmarks")
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# the price of caller information: (with - without) in each flavour, over stock's\n")
	fmt.Fprintf(w, "%-50s %-18s %10s %7s %21s\n", "pair", "flavour", "price", "×stock", "paired ×stock [95%]")
	for _, lib := range res.Groups {
		for _, p := range pairs[lib] {
			name := p.Name
			for _, fl := range res.Flavours {
				pr, ok := PriceOf(res, lib, p, fl)
				if !ok {
					continue
				}
				ratio, paired := "", ""
				if fl != res.Baseline {
					ratio = fmt.Sprintf("%.3f", pr.Ratio)
					paired = benchcmp.Interval(pr.Paired)
				}
				fmt.Fprintf(w, "%-50s %-18s %10s %7s %21s\n", name, fl, res.Format(pr.Diff), ratio, paired)
				name = ""
			}
		}
	}
	limit, what := 1.03, "paired intervals' upper bounds"
	if !res.IsTime() {
		limit, what = 1.00, "ratios"
	}
	if symtab {
		fmt.Fprintf(w, "\n# goal: every price <= 0.6× stock's\n")
	} else {
		fmt.Fprintf(w, "\n# goals: every one of the %s <= %.2f; every price <= 0.6× stock's\n", what, limit)
	}
	for _, fl := range res.Flavours[1:] {
		above, total, worst, worstName := res.Above(fl, limit)
		priceMet, prices := 0, 0
		for _, lib := range res.Groups {
			for _, p := range pairs[lib] {
				if pr, ok := PriceOf(res, lib, p, fl); ok {
					prices++
					if pr.Ratio <= 0.6 {
						priceMet++
					}
				}
			}
		}
		if symtab {
			fmt.Fprintf(w, "%-18s %d of %d prices <= 0.6× stock's\n", fl, priceMet, prices)
			continue
		}
		fmt.Fprintf(w, "%-18s %d of %d above %.2f (highest %.3f: %s); %d of %d prices <= 0.6× stock's\n", fl, above, total, limit, worst, worstName, priceMet, prices)
		res.WriteControl(w, fl, toolchain.LayoutControl().Name, limit)
	}
}
