package toolchain

import (
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// Summarize reads Bench's output (the Go benchmark format, each result
// under a "toolchain" configuration key) and writes, for each benchmark and
// unit, one row per flavour in Flavours order: the median with its 95%
// confidence interval, the ratio of the median to the stock flavour's, and
// the p-value of the Mann-Whitney U test against stock. These are
// benchstat's statistics (golang.org/x/perf/benchmath), so the rows agree
// with `benchstat -col toolchain`.
func Summarize(r io.Reader, w io.Writer) error {
	type key struct{ name, unit string }
	samples := map[key]map[string][]float64{}
	var keys []key
	br := benchfmt.NewReader(r, "bench")
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		fl := res.GetConfig("toolchain")
		for _, v := range res.Values {
			k := key{string(res.Name.Full()), v.Unit}
			if samples[k] == nil {
				samples[k] = map[string][]float64{}
				keys = append(keys, k)
			}
			samples[k][fl] = append(samples[k][fl], v.Value)
		}
	}
	if err := br.Err(); err != nil {
		return fmt.Errorf("toolchain: reading benchmark results: %w", err)
	}
	flavours := Flavours()
	fmt.Fprintf(w, "%-32s %-18s %12s %7s %8s %7s %3s\n", "benchmark", "flavour", "median", "± CI", "× stock", "p", "n")
	for _, k := range keys {
		if k.unit != "sec/op" && k.unit != "ns/op" {
			continue
		}
		var base *benchmath.Sample
		var baseMedian float64
		first := true
		for _, fl := range flavours {
			vals := samples[k][fl.Name]
			if len(vals) == 0 {
				continue
			}
			s := benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds)
			sum := benchmath.AssumeNothing.Summary(s, 0.95)
			name := ""
			if first {
				name, first = k.name, false
			}
			ratio, p := "", ""
			if fl.Stock {
				base, baseMedian = s, sum.Center
				ratio = "1.000"
			} else if base != nil && baseMedian != 0 {
				ratio = fmt.Sprintf("%.3f", sum.Center/baseMedian)
				p = fmt.Sprintf("%.3f", benchmath.AssumeNothing.Compare(base, s).P)
			}
			fmt.Fprintf(w, "%-32s %-18s %12s %7s %8s %7s %3d\n", name, fl.Name, seconds(sum.Center, k.unit), sum.PctRangeString(), ratio, p, len(vals))
		}
	}
	return nil
}

// seconds formats a time per operation in the unit of v (sec/op or ns/op).
func seconds(v float64, unit string) string {
	if unit == "ns/op" {
		v *= 1e-9
	}
	switch a := math.Abs(v); {
	case a >= 1:
		return fmt.Sprintf("%.3fs", v)
	case a >= 1e-3:
		return fmt.Sprintf("%.3fms", v*1e3)
	case a >= 1e-6:
		return fmt.Sprintf("%.3fµs", v*1e6)
	}
	return fmt.Sprintf("%.1fns", v*1e9)
}
