package benchcmp

import (
	"fmt"
	"io"
	"math"
)

// IsTime reports whether the results are times (sec/op), whose goal is
// checked on the paired intervals' upper bounds; other units (instruction
// counts, one run each) are checked on the ratios.
func (r *Results) IsTime() bool { return r.Unit == "sec/op" }

// Bound returns what a goal checks of c: the upper bound of the paired
// interval for times, the ratio of medians otherwise.
func (r *Results) Bound(c Comparison) float64 {
	if r.IsTime() {
		return c.Paired.Hi
	}
	return c.Ratio
}

// Above counts, over every benchmark of every group measured in flavour fl,
// those whose Bound exceeds limit, and names the highest.
func (r *Results) Above(fl string, limit float64) (above, total int, worst float64, worstName string) {
	return r.above(fl, limit, r.Bound)
}

// AboveShift counts, over every benchmark of every group measured in
// flavour fl, those whose two-sample interval (Comparison.Shift) ends above
// limit, and names the highest upper bound.
func (r *Results) AboveShift(fl string, limit float64) (above, total int, worst float64, worstName string) {
	return r.above(fl, limit, func(c Comparison) float64 { return c.Shift.Hi })
}

// above counts the benchmarks of flavour fl whose bound exceeds limit and
// names the highest.
func (r *Results) above(fl string, limit float64, bound func(Comparison) float64) (above, total int, worst float64, worstName string) {
	for _, g := range r.Groups {
		for _, k := range r.Keys[g] {
			c, ok := r.Compare(g, k, fl)
			if !ok {
				continue
			}
			total++
			b := bound(c)
			if b > limit {
				above++
			}
			if b > worst || worstName == "" {
				worst, worstName = b, k.String()
				if g != "" {
					worstName = g + " " + worstName
				}
			}
		}
	}
	return above, total, worst, worstName
}

// WriteShift writes, under a goal's line for times in flavour fl, how many
// two-sample intervals (Comparison.Shift) end above limit: the check for
// rounds in random function layouts, whose per-round pairs join two
// independent placements.
func (r *Results) WriteShift(w io.Writer, fl string, limit float64) {
	if !r.IsTime() {
		return
	}
	above, total, worst, name := r.AboveShift(fl, limit)
	fmt.Fprintf(w, "%-18s two-sample intervals: %d of %d above %.2f (highest %.3f: %s)\n", "", above, total, limit, worst, name)
}

// WithinControl counts, of the benchmarks whose Bound in flavour fl
// exceeds limit, those that fl does not tell apart from flavour control, a
// build of the baseline's code that differs only in where it lies (such as
// toolchain.LayoutControl): for times, fl's paired interval overlaps the
// control's on the same benchmark; for one-run counts, fl's ratio lies
// within the range of the control's ratios over every benchmark. ok is
// false if no benchmark was measured in control.
func (r *Results) WithinControl(fl, control string, limit float64) (n int, ok bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range r.Groups {
		for _, k := range r.Keys[g] {
			if c, found := r.Compare(g, k, control); found {
				ok = true
				lo, hi = min(lo, c.Ratio), max(hi, c.Ratio)
			}
		}
	}
	if !ok {
		return 0, false
	}
	for _, g := range r.Groups {
		for _, k := range r.Keys[g] {
			c, found := r.Compare(g, k, fl)
			if !found || r.Bound(c) <= limit {
				continue
			}
			if !r.IsTime() {
				if c.Ratio >= lo && c.Ratio <= hi {
					n++
				}
				continue
			}
			if cc, found := r.Compare(g, k, control); found && c.Paired.Lo <= cc.Paired.Hi && cc.Paired.Lo <= c.Paired.Hi {
				n++
			}
		}
	}
	return n, true
}

// WriteControl writes, under a goal's line for flavour fl, how many of
// the benchmarks above limit fl does not tell apart from flavour control
// (WithinControl). It writes nothing if fl is the control, none is above
// limit, or control was not measured.
func (r *Results) WriteControl(w io.Writer, fl, control string, limit float64) {
	above, _, _, _ := r.Above(fl, limit)
	n, ok := r.WithinControl(fl, control, limit)
	if fl == control || above == 0 || !ok {
		return
	}
	how := "paired intervals overlap"
	if !r.IsTime() {
		how = "ratios within the control's range"
	}
	fmt.Fprintf(w, "%-18s %d of the %d within the layout control %s (%s)\n", "", n, above, control, how)
}

// GroupName is the name a table gives group g.
func GroupName(g string) string {
	if g == "" {
		return "(no library)"
	}
	return g
}

// Format formats a value per operation in r's unit.
func (r *Results) Format(v float64) string {
	if r.IsTime() {
		return Duration(v)
	}
	return fmt.Sprintf("%.0f", v)
}

// WriteTables writes, for each group, a table of every benchmark in every
// flavour: the median and its interval's half-width, the ratio of medians
// to the baseline, the paired ratio with its 95% interval, the U test's p
// and the number of rounds. A group's table is headed "# NAME" when there
// is more than one group or the group has a name.
func (r *Results) WriteTables(w io.Writer) {
	for _, g := range r.Groups {
		if g != "" || len(r.Groups) > 1 {
			fmt.Fprintf(w, "# %s\n", GroupName(g))
		}
		fmt.Fprintf(w, "%-44s %-18s %10s %5s %7s %21s %6s %3s\n", "benchmark", "flavour", "median", "±", "×stock", "paired ×stock [95%]", "p", "n")
		for _, k := range r.Keys[g] {
			name := k.String()
			for _, fl := range r.Flavours {
				c, ok := r.Compare(g, k, fl)
				if !ok {
					continue
				}
				ratio, paired, p := "", "", ""
				if fl != r.Baseline {
					ratio = fmt.Sprintf("%.3f", c.Ratio)
					paired = Interval(c.Paired)
					p = fmt.Sprintf("%.3f", c.P)
				}
				fmt.Fprintf(w, "%-44s %-18s %10s %5s %7s %21s %6s %3d\n", name, fl, r.Format(c.Value.Center), Pct(c.Value), ratio, paired, p, c.Value.N)
				name = ""
			}
		}
		fmt.Fprintln(w)
	}
}

// WriteGeomeans writes each group's geomean of the ratios to the baseline,
// one column per flavour.
func (r *Results) WriteGeomeans(w io.Writer, title string) {
	fmt.Fprintf(w, "# %s\n%-12s %4s", title, "library", "n")
	for _, fl := range r.Flavours[1:] {
		fmt.Fprintf(w, " %18s", fl)
	}
	fmt.Fprintln(w)
	for _, g := range r.Groups {
		_, n := r.Geomean(g, r.Baseline)
		fmt.Fprintf(w, "%-12s %4d", GroupName(g), n)
		for _, fl := range r.Flavours[1:] {
			m, _ := r.Geomean(g, fl)
			fmt.Fprintf(w, " %18.3f", m)
		}
		fmt.Fprintln(w)
	}
}

// Interval formats a paired ratio and its interval.
func Interval(s Stat) string {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || math.IsNaN(s.Lo) {
		return fmt.Sprintf("%.3f [∞]", s.Center)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", s.Center, s.Lo, s.Hi)
}

// Pct formats the half-width of a median's interval as benchstat does
// (the larger distance to a bound, in percent of the median).
func Pct(s Stat) string {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return "∞"
	}
	if s.Center == 0 {
		return "?"
	}
	d := math.Max(s.Center-s.Lo, s.Hi-s.Center) / math.Abs(s.Center)
	return fmt.Sprintf("%.0f%%", 100*d)
}

// Duration formats seconds per operation.
func Duration(v float64) string {
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
