package toolchain

import (
	"fmt"
	"io"

	"github.com/pctab/pctab/internal/benchcmp"
)

// Summarize reads Bench's output (the Go benchmark format, each result
// under a "toolchain" configuration key) and writes, for each benchmark, one
// row per flavour in Flavours order: the median with its 95% confidence
// interval, the ratio of the median to the stock flavour's, the median of
// the per-round ratios with its 95% interval, the p-value of the
// Mann-Whitney U test against stock, and the number of rounds. These are
// benchstat's statistics (golang.org/x/perf/benchmath), so the medians,
// intervals and p-values agree with `benchstat -col toolchain`. A last line
// per flavour checks the goal of issue 22: every median ratio at most 1.00
// and every paired interval's upper bound at most 1.03; the next ones
// compare the benchmarks above it with the layout control, and count the
// two-sample intervals (benchcmp.Shift) above 1.03, the check for rounds
// in random function layouts (Bench with Layouts).
func Summarize(r io.Reader, w io.Writer) error {
	res, err := benchcmp.Read(r, "sec/op", FlavourNames())
	if err != nil {
		return fmt.Errorf("toolchain: %w", err)
	}
	if len(res.Groups) == 0 {
		return fmt.Errorf("toolchain: no timing results")
	}
	if !res.HasBaseline() {
		return fmt.Errorf("toolchain: the results have no %q flavour to compare with", res.Baseline)
	}
	res.WriteTables(w)
	fmt.Fprintf(w, "# goals: every median ×stock <= 1.00 and every paired interval's upper bound <= 1.03\n")
	for _, fl := range res.Flavours[1:] {
		above, total, worst, worstName := res.Above(fl, 1.03)
		medians := 0
		for _, g := range res.Groups {
			for _, k := range res.Keys[g] {
				if c, ok := res.Compare(g, k, fl); ok && c.Ratio > 1 {
					medians++
				}
			}
		}
		fmt.Fprintf(w, "%-18s %d of %d medians above 1.00; %d of %d upper bounds above 1.03 (highest %.3f: %s)\n", fl, medians, total, above, total, worst, worstName)
		res.WriteControl(w, fl, LayoutControl().Name, 1.03)
		res.WriteShift(w, fl, 1.03)
	}
	return nil
}
