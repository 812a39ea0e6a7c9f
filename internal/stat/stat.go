// Package stat summarizes repeated measurements as benchstat does, with
// golang.org/x/perf/benchmath: the median and its 95% confidence interval,
// assuming nothing about the distribution, of timings or of ratios of
// timings measured side by side.
package stat

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchmath"
)

// Confidence is the confidence level of the intervals.
const Confidence = 0.95

// A Summary is the median of a sample and its confidence interval. With
// fewer values than a 95% interval needs (6), Low and High are 0 and
// Confidence is 0: the interval is unbounded.
type Summary struct {
	Median     float64 `json:"median"`
	Low        float64 `json:"ci_low,omitempty"`
	High       float64 `json:"ci_high,omitempty"`
	Confidence float64 `json:"ci_confidence,omitempty"` // the interval's actual level, >= 0.95
	N          int     `json:"n"`                       // values summarized
}

// Of summarizes xs. An empty xs gives the zero Summary.
func Of(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(xs, &benchmath.DefaultThresholds), Confidence)
	out := Summary{Median: s.Center, N: len(xs)}
	if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
		out.Low, out.High, out.Confidence = s.Lo, s.Hi, s.Confidence
	}
	return out
}

// Ratios summarizes a[i]/b[i] over the pairs measured side by side (the
// shorter length of the two), leaving out pairs where b[i] is not positive.
func Ratios(a, b []float64) Summary {
	var rs []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if b[i] > 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	return Of(rs)
}

// Bounded reports whether s has a finite confidence interval.
func (s Summary) Bounded() bool { return s.Confidence > 0 }

// Format prints the median with verb (such as "%.3f") and the interval:
// "0.312 [0.301, 0.320]", or "0.312 [no CI: 3 runs < 6]".
func (s Summary) Format(verb string) string {
	m := fmt.Sprintf(verb, s.Median)
	if !s.Bounded() {
		return fmt.Sprintf("%s [no CI: %d runs < 6]", m, s.N)
	}
	return fmt.Sprintf("%s ["+verb+", "+verb+"]", m, s.Low, s.High)
}
