package lookupbench

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pctab/pctab/internal/textfmt"
	"golang.org/x/perf/benchfmt"
)

// BenchName returns the benchmark name of encoding enc in group g of the
// binary called bin, without the "Benchmark" prefix and the GOMAXPROCS
// suffix: "Lookup/bin=go/set=hot/pcs=random/enc=linear".
func BenchName(bin string, g *Group, enc string) string {
	return "Lookup/bin=" + NameValue(bin) + "/" + g.Name(enc)
}

// NameValue makes s usable as the value of a benchmark name key: no spaces,
// slashes or '=' signs.
func NameValue(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '/', '=':
			return '_'
		}
		return r
	}, s)
}

// WriteBench writes the runs of r in the Go benchmark format, one line per
// run, each named as BenchName with go test's "-GOMAXPROCS" suffix. Units are
// ns/op (wall time, as go test), cpu-ns/op (CPU time of the timing thread,
// when known) and, for the cache encodings, hits/op (the measured hit rate). The
// file configuration holds goos, goarch and cpu of the timing machine,
// pctab-sampling and pctab-timing ("native" or "emulated ...").
func WriteBench(w *benchfmt.Writer, bin string, r *Result) error {
	timing := "native"
	if r.Host.Emulated {
		timing = "emulated: " + r.Host.Note
	}
	cfg := []benchfmt.Config{
		{Key: "goos", Value: []byte(r.Host.GOOS), File: true},
		{Key: "goarch", Value: []byte(r.Host.GOARCH), File: true},
	}
	if r.Host.CPU != "" {
		cfg = append(cfg, benchfmt.Config{Key: "cpu", Value: []byte(r.Host.CPU), File: true})
	}
	cfg = append(cfg,
		benchfmt.Config{Key: "pctab-sampling", Value: []byte(r.Sampling), File: true},
		benchfmt.Config{Key: "pctab-timing", Value: []byte(timing), File: true})
	procs := ""
	if r.Host.GOMAXPROCS > 1 {
		procs = "-" + strconv.Itoa(r.Host.GOMAXPROCS)
	}
	for gi := range r.Groups {
		g := &r.Groups[gi]
		for _, t := range g.Timings {
			for _, run := range t.Runs {
				res := &benchfmt.Result{
					Config: cfg,
					Name:   benchfmt.Name(BenchName(bin, g, t.Encoding) + procs),
					Iters:  run.Iters,
					Values: []benchfmt.Value{{Value: round4(run.NsPerOp), Unit: "ns/op"}},
				}
				if run.CPUNsPerOp > 0 {
					res.Values = append(res.Values, benchfmt.Value{Value: round4(run.CPUNsPerOp), Unit: "cpu-ns/op"})
				}
				if run.HitRate != nil {
					res.Values = append(res.Values, benchfmt.Value{Value: round4(*run.HitRate), Unit: "hits/op"})
				}
				if err := w.Write(res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// round4 rounds v to 4 significant digits.
func round4(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// WriteText writes r as aligned tables: for each sample set, one row per
// encoding and one column per PC rule, in ns per lookup on r.Clock, followed
// by the measured cache hit rates and the ratios linear/varint and
// linear/varint-cache-7in8.
func WriteText(w io.Writer, r *Result) error {
	ew := &textfmt.ErrWriter{W: w}
	writeTextHeader(ew, r)
	for _, set := range []string{SetHot, SetHotShuffled, SetCold} {
		var gs []*Group
		for i := range r.Groups {
			if g := &r.Groups[i]; g.Set == set {
				gs = append(gs, g)
			}
		}
		if len(gs) > 0 {
			writeTextSet(ew, r, set, gs)
		}
	}
	return ew.Err
}

// writeTextHeader writes what WriteText's numbers are and where they
// were timed.
func writeTextHeader(w io.Writer, r *Result) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	runs := "1 run"
	if r.Count > 1 {
		runs = fmt.Sprintf("median of %d runs", r.Count)
	}
	clock := "wall time"
	if r.Clock == ClockThreadCPU {
		clock = "CPU time of the timing thread"
	}
	p("lookup speed: ns per lookup in %s (%s of %s each), samples uniform over %s\n", clock, runs, r.BenchTime, r.Sampling)
	p("  ratios: median of the per-round ratios [95%% confidence interval, benchmath; none below 6 rounds]\n")
	p("  varint is runtime.pcvalue's code shape (non-inlined step); varint-walk the faster one-loop walk\n")
	p("  sets: hot in the same order every pass; hot-shuffled reshuffled every pass (%d permutations); cold in order\n", ShuffledPasses)
	h := r.Host
	p("  timed on %s/%s", h.GOOS, h.GOARCH)
	if h.CPU != "" {
		p(", %s", h.CPU)
	}
	p(", GOMAXPROCS %d\n", h.GOMAXPROCS)
	if h.Emulated {
		p("  EMULATED: %s\n", h.Note)
	}
	if r.WallPerCPU > 0 {
		p("  wall time / CPU time: %.2f (above 1: other processes competed for the CPU)\n", r.WallPerCPU)
	}
	if r.Disassembler != "" {
		p("  return addresses: %s call instructions found with %s\n", textfmt.Commas(int64(r.ReturnAddresses)), r.Disassembler)
	} else {
		p("  return addresses: none (%s)\n", r.NoReturnAddresses)
	}
}

// writeTextSet writes one sample set's table: a column per group (PC
// rule), a row per encoding's ns per lookup, then the tables touched,
// the cache hit rates and the ratios.
func writeTextSet(w io.Writer, r *Result, set string, gs []*Group) {
	size := 0
	for _, g := range gs {
		size = max(size, g.Samples)
	}
	fmt.Fprintf(w, "\n")
	head := []string{fmt.Sprintf("%s set, %s pairs", set, textfmt.Commas(int64(size)))}
	for _, g := range gs {
		head = append(head, "pcs="+g.PCs)
	}
	rows := [][]string{head}
	// row appends a row of f's cells for each group, unless all are empty.
	row := func(label string, f func(g *Group) string) {
		cells := []string{label}
		filled := false
		for _, g := range gs {
			c := f(g)
			filled = filled || c != ""
			cells = append(cells, c)
		}
		if filled {
			rows = append(rows, cells)
		}
	}
	for _, e := range r.Encodings {
		row(e.Name, func(g *Group) string {
			if t := g.Timing(e.Name); t != nil {
				return nsString(t.Ns(r.Clock))
			}
			return ""
		})
	}
	row("tables touched", func(g *Group) string {
		if g.Samples == 0 {
			return ""
		}
		return textfmt.Commas(int64(g.Tables))
	})
	for _, enc := range []string{EncVarintCacheCold, EncVarintCacheHit} {
		row(enc+" hit rate", func(g *Group) string {
			if t := g.Timing(enc); t != nil && t.HitRate != nil {
				return fmt.Sprintf("%.1f%%", 100**t.HitRate)
			}
			return ""
		})
	}
	// Ratios to the runtime-shaped varint of every encoding, and of
	// linear to the other baselines: medians of the per-round ratios
	// with their 95% confidence intervals.
	for _, e := range r.Encodings {
		if e.Name != EncVarint {
			row(e.Name+" / "+EncVarint, func(g *Group) string { return ciString(g.Ratio(e.Name, EncVarint)) })
		}
	}
	for _, base := range Baselines[1:] {
		row(EncLinear+" / "+base, func(g *Group) string { return ciString(g.Ratio(EncLinear, base)) })
	}
	writeTable(w, rows)
	for _, g := range gs {
		if g.Note != "" {
			fmt.Fprintf(w, "  pcs=%s: %s\n", g.PCs, g.Note)
		}
	}
}

// WriteComparison writes one row per binary, set and PC rule: the main
// encodings' ns per lookup and the two ratios, on each Result's Clock.
// names[i] names rs[i].
func WriteComparison(w io.Writer, names []string, rs []*Result) error {
	ew := &textfmt.ErrWriter{W: w}
	rows := [][]string{{"binary", "set", "pcs", EncVarint, EncVarintCacheHit, EncLinear, EncFlat, "linear/varint", "linear/cache-hit", "clock"}}
	for i, r := range rs {
		timing := r.Clock
		if r.Host.Emulated {
			timing += ", EMULATED"
		}
		for gi := range r.Groups {
			g := &r.Groups[gi]
			if len(g.Timings) == 0 {
				continue
			}
			row := []string{names[i], g.Set, g.PCs}
			for _, enc := range []string{EncVarint, EncVarintCacheHit, EncLinear, EncFlat} {
				c := ""
				if t := g.Timing(enc); t != nil {
					c = nsString(t.Ns(r.Clock))
				}
				row = append(row, c)
			}
			row = append(row, ratioString(g.LinearVsVarint), ratioString(g.LinearVsCacheHit), timing)
			rows = append(rows, row)
		}
	}
	writeTable(ew, rows)
	return ew.Err
}

// writeTable writes rows with the first column left-aligned and the others
// right-aligned, two spaces apart.
func writeTable(w io.Writer, rows [][]string) {
	var width []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len(c))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", width[0]-len(c)))
				continue
			}
			b.WriteString("  " + strings.Repeat(" ", width[i]-len(c)) + c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

func nsString(ns float64) string {
	switch {
	case ns < 10:
		return fmt.Sprintf("%.2f", ns)
	case ns < 100:
		return fmt.Sprintf("%.1f", ns)
	}
	return fmt.Sprintf("%.0f", ns)
}

// ciString formats a ratio with its confidence interval, "" for nil.
func ciString(r *Ratio) string {
	if r == nil || r.Summary.N == 0 {
		return ""
	}
	if !r.Summary.Bounded() {
		return fmt.Sprintf("%.3f", r.Summary.Median)
	}
	return fmt.Sprintf("%.3f [%.3f,%.3f]", r.Summary.Median, r.Summary.Low, r.Summary.High)
}

func ratioString(r float64) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprintf("%.3f", r)
}
