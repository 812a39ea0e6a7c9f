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
// the suite's pairs the price of caller information; for instruction
// counts also the floor of each price (see [WriteFloors]).
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
	all, err := ReadResults(bytes.NewReader(data), "instructions/op")
	if err != nil {
		return err
	}
	rt, err := ReadResults(bytes.NewReader(data), SymtabUnit)
	if err != nil {
		return err
	}
	if len(all.Groups) > 0 && len(rt.Groups) > 0 {
		fmt.Fprintln(w)
		WriteFloors(w, all, rt, suite)
	}
	return nil
}

// Floor returns the floor of pair p's price of lib in flavour fl, over the
// baseline's price: the price with the instructions in the runtime's
// unwinder and symbol tables (rt, in SymtabUnit) taken out of all's
// instructions per operation. It is the lowest ratio that any further
// change to how fl unwinds and reads its tables could reach; the rest is
// the library's own work (formatting, allocation) and the runtime's
// outside those files.
func Floor(all, rt *benchcmp.Results, lib string, p Pair, fl string) (float64, bool) {
	pa, ok1 := PriceOf(all, lib, p, fl)
	pr, ok2 := PriceOf(rt, lib, p, fl)
	if !ok1 || !ok2 || pa.Ratio == 0 {
		return 0, false
	}
	base := pa.Diff / pa.Ratio
	return (pa.Diff - pr.Diff) / base, true
}

// WriteFloors writes, for every pair and patched flavour, the price in
// instructions over stock's and its floor ([Floor]), and how many prices
// could still reach 0.6× stock's by changes to the unwinder and tables.
func WriteFloors(w io.Writer, all, rt *benchcmp.Results, suite []Library) {
	fmt.Fprintf(w, "## the price's floor: without the instructions in the runtime's unwinder and symbol tables, over stock's price\n\n")
	fmt.Fprintf(w, "%-50s %-18s %7s %7s\n", "pair", "flavour", "×stock", "floor")
	reach := map[string]int{}
	n := map[string]int{}
	for _, l := range suite {
		for _, p := range l.Pairs {
			name := p.Name
			for _, fl := range all.Flavours[1:] {
				pa, ok1 := PriceOf(all, l.Name, p, fl)
				f, ok2 := Floor(all, rt, l.Name, p, fl)
				if !ok1 || !ok2 {
					continue
				}
				fmt.Fprintf(w, "%-50s %-18s %7.3f %7.3f\n", name, fl, pa.Ratio, f)
				name = ""
				n[fl]++
				if f <= 0.6 {
					reach[fl]++
				}
			}
		}
	}
	fmt.Fprintf(w, "\n# floors <= 0.6: the prices that changes to the unwinder and tables alone could bring to 0.6× stock's\n")
	for _, fl := range all.Flavours[1:] {
		if n[fl] > 0 {
			fmt.Fprintf(w, "%-18s %d of %d\n", fl, reach[fl], n[fl])
		}
	}
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
		res.WriteShift(w, fl, limit)
	}
}
