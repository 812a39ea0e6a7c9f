// Package plots turns pctab's measurements into charts (internal/svgplot):
// lookup time against the PC's offset into its function
// (lookupbench.Bench.Offsets) and the size change per table kind
// (report.Report).
package plots

import (
	"fmt"
	"slices"

	"github.com/pctab/pctab/internal/svgplot"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
)

// Offsets returns the plot of an Offsets result: for each encoding, the
// median time per lookup (on the result's clock) in each offset bucket,
// at the bucket's middle. Buckets without timings (no function that long)
// are left out.
func Offsets(r *lookupbench.Result, title, subtitle string) *svgplot.Plot {
	clock := "wall time"
	if r.Clock == lookupbench.ClockThreadCPU {
		clock = "thread CPU time"
	}
	p := &svgplot.Plot{
		Title: title, Subtitle: subtitle,
		X: svgplot.Axis{Label: "byte offset of the PC into its function (bucket middle)"},
		Y: svgplot.Axis{Label: fmt.Sprintf("ns per lookup (median of %d rounds, %s)", r.Count, clock), Zero: true},
	}
	idx := map[string]int{}
	for _, g := range r.Groups {
		lo, hi, ok := lookupbench.OffsetBucket(g.PCs)
		if !ok {
			continue
		}
		for _, t := range g.Timings {
			i, ok := idx[t.Encoding]
			if !ok {
				i = len(p.Series)
				idx[t.Encoding] = i
				p.Series = append(p.Series, svgplot.Series{Name: t.Encoding, Line: true, Markers: true,
					Dashed: t.Encoding == lookupbench.EncFlat})
			}
			ns := t.Summary.Median
			if ns <= 0 {
				continue
			}
			p.Series[i].Points = append(p.Series[i].Points, svgplot.Point{X: float64(lo+hi) / 2, Y: ns})
		}
	}
	return p
}

// Kinds returns the bar chart of a size report's table kinds: the change
// of each kind's bytes from varint to linear variant (the spec encoding
// for "" or "spec"; another variant needs the report's per-kind variant
// bytes, report.Options.Variants), in percent of its varint bytes, with
// the bytes behind it, then all tables. For the variant of the report's
// mix (pcln left varint) a last bar gives the mix's total.
func Kinds(r *report.Report, variant, title, subtitle string) (*svgplot.BarChart, error) {
	spec := variant == "" || variant == "spec"
	if spec {
		variant = "spec"
	}
	c := &svgplot.BarChart{
		Title: title, Subtitle: subtitle,
		ValueLabel: fmt.Sprintf("change of the kind's table bytes, varint to linear %s (%%)", variant),
		Format:     func(v float64) string { return fmt.Sprintf("%+.1f%%", v+0) },
	}
	bar := func(label string, varint, linear int64) {
		c.Bars = append(c.Bars, svgplot.Bar{Label: label, Value: 100 * float64(linear-varint) / float64(max(varint, 1)),
			Note: fmt.Sprintf("(%s → %s)", mb(varint), mb(linear))})
	}
	for _, k := range r.Kinds {
		lin := k.LinearBytes
		if !spec {
			i := slices.IndexFunc(k.Variants, func(v report.KindVariant) bool { return v.Name == variant })
			if i < 0 {
				return nil, fmt.Errorf("plots: the report has no %s bytes for kind %s", variant, k.Kind)
			}
			lin = k.Variants[i].Bytes
		}
		if k.VarintBytes != 0 || lin != 0 {
			bar(k.Kind, k.VarintBytes, lin)
		}
	}
	t := r.Tables
	total := t.LinearBytes
	if !spec {
		i := slices.IndexFunc(r.Variants, func(v report.VariantRow) bool { return v.Name == variant })
		if i < 0 {
			return nil, fmt.Errorf("plots: the report has no variant %s", variant)
		}
		total = r.Variants[i].Bytes
	}
	bar("all tables", t.VarintBytes, total)
	if m := r.Mix; m != nil && variant == objscan.LinearVarintPCLnVariant {
		bar("all, pcln in varint", t.VarintBytes, m.Bytes)
	}
	return c, nil
}

// mb formats a byte count in kB or MB.
func mb(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2f MB", float64(n)/1e6)
}
