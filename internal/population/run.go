package population

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/pctab/pctab/internal/svgplot"
	"github.com/pctab/pctab/internal/textfmt"
)

// Run builds what is missing of each program (unless cachedOnly, which
// measures only programs whose builds are all there, and reports the
// programs whose last build failed, with the failure) and measures it,
// writing one JSON line per program to w (may be nil) as it goes. A
// program that fails to build or measure gets a line with Error set; the
// next program is tried. Run stops early only when ctx is done.
func (b *Builder) Run(ctx context.Context, programs []Program, cachedOnly bool, w io.Writer) ([]Line, error) {
	var lines []Line
	for _, p := range programs {
		if err := ctx.Err(); err != nil {
			return lines, err
		}
		l := b.Program(ctx, p, cachedOnly)
		if l == nil {
			continue
		}
		lines = append(lines, *l)
		if w != nil {
			data, err := json.Marshal(l)
			if err != nil {
				return lines, err
			}
			if _, err := w.Write(append(data, '\n')); err != nil {
				return lines, err
			}
		}
	}
	return lines, ctx.Err()
}

// Program builds and measures one program. With cachedOnly it returns nil
// when a build is missing, or a line with the error of the last build
// when it failed.
func (b *Builder) Program(ctx context.Context, p Program, cachedOnly bool) *Line {
	l := &Line{
		SchemaVersion: SchemaVersion, Program: p.Name, Module: p.Module, Package: p.Package, Version: p.Version,
		GoVersion: b.Toolchain.Version, BuildFlags: BuildFlags(), Formats: []Result{},
	}
	if cachedOnly {
		if !b.Built(p) {
			// The last run's failure, if it failed.
			if data, err := os.ReadFile(b.buildErrorPath(p)); err == nil {
				l.Error = string(data)
				return l
			}
			return nil
		}
	} else if err := b.Build(ctx, p); err != nil {
		l.Error = err.Error()
		b.logf("population: %s: %v\n", p.Name, err)
		if ctx.Err() == nil {
			if werr := writeFileAtomic(b.buildErrorPath(p), []byte(l.Error)); werr != nil {
				b.logf("population: %s: %v\n", p.Name, werr)
			}
		}
		return l
	} else {
		os.Remove(b.buildErrorPath(p))
	}
	s, err := b.MeasureStock(ctx, p)
	if err != nil {
		l.Error = err.Error()
		return l
	}
	l.Stock = s
	for _, f := range b.Formats {
		r, err := b.Measure(ctx, p, f, s)
		if err != nil {
			l.Error = fmt.Sprintf("%s: %v", f.Name, err)
			return l
		}
		l.Formats = append(l.Formats, *r)
	}
	return l
}

// buildErrorPath is where a failed build's error is kept until a build
// of the program succeeds.
func (b *Builder) buildErrorPath(p Program) string {
	return filepath.Join(b.ProgramDir(p), "build-error.txt")
}

// Built reports whether every build of p is in the cache.
func (b *Builder) Built(p Program) bool {
	paths := []string{b.StockPath(p)}
	for _, f := range b.Formats {
		paths = append(paths, b.FormatPath(p, f, false), b.FormatPath(p, f, true))
	}
	for _, path := range paths {
		if _, err := fileSize(path); err != nil {
			return false
		}
	}
	return true
}

// A Distribution summarizes one format's real file change across the
// programs that have a result in it.
type Distribution struct {
	Format     string
	N          int
	Median     float64 // percent of the stock file
	P90        float64 // nearest rank
	Max        float64
	MaxProgram string
	Over       []string // programs above Goal
}

// Goal is the size goal: at most +0.5% of the stock file.
const Goal = 0.5

// Distributions returns, for each format in order of first appearance,
// the distribution of FileDeltaPercent over the lines without error.
func Distributions(lines []Line) []Distribution {
	var ds []Distribution
	idx := map[string]int{}
	vals := map[string][]float64{}
	for _, l := range lines {
		if l.Error != "" {
			continue
		}
		for _, r := range l.Formats {
			i, ok := idx[r.Format]
			if !ok {
				i = len(ds)
				idx[r.Format] = i
				ds = append(ds, Distribution{Format: r.Format, Max: math.Inf(-1)})
			}
			d := &ds[i]
			vals[r.Format] = append(vals[r.Format], r.FileDeltaPercent)
			if r.FileDeltaPercent > d.Max {
				d.Max, d.MaxProgram = r.FileDeltaPercent, l.Program
			}
			if r.FileDeltaPercent > Goal {
				d.Over = append(d.Over, l.Program)
			}
		}
	}
	for i := range ds {
		v := vals[ds[i].Format]
		slices.Sort(v)
		ds[i].N = len(v)
		ds[i].Median = median(v)
		ds[i].P90 = nearestRank(v, 0.9)
	}
	return ds
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// nearestRank returns the q-quantile of sorted by the nearest-rank method.
func nearestRank(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(n))) - 1
	return sorted[max(0, min(k, n-1))]
}

// WriteTable writes one row per program and format, then the distribution
// of each format. Its columns: the stock and patched file sizes and the
// change, pctab-stats' estimate of it, the twin's size and the change
// against it (the tables alone), the stock pctab's share of the file, the
// patched pctab's size over the twin's, the check and the run.
func WriteTable(w io.Writer, lines []Line) error {
	ew := &textfmt.ErrWriter{W: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "program\tversion\tformat\tstock\tpatched\tvs stock\testimate\ttwin\tvs twin\tpctab/file\ttables\tcheck\trun\t\n")
	for _, l := range lines {
		if l.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\tFAILED: %s\t\n", l.Program, l.Version, firstLine(l.Error))
			continue
		}
		for _, r := range l.Formats {
			est := "-"
			if r.EstimateFileDeltaPercent != nil {
				est = fmt.Sprintf("%+.2f%%", *r.EstimateFileDeltaPercent)
			}
			chk := "ok"
			switch {
			case r.Check.Error != "":
				chk = "error: " + firstLine(r.Check.Error)
			case !r.Check.OK:
				chk = fmt.Sprintf("FAIL %d", r.Check.Mismatches)
			}
			run := fmt.Sprintf("exit %d", r.Run.ExitCode)
			if !r.SameRun {
				run += " DIFFERS"
			}
			tables := "-"
			if r.TwinPCTabBytes > 0 {
				tables = fmt.Sprintf("%.3fx", float64(r.PCTabBytes)/float64(r.TwinPCTabBytes))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.2f%%\t%s\t%s\t%+.2f%%\t%.1f%%\t%s\t%s\t%s\t\n", l.Program, l.Version, r.Format,
				textfmt.Commas(l.Stock.Bytes), textfmt.Commas(r.Bytes), r.FileDeltaPercent, est,
				textfmt.Commas(r.TwinBytes), r.TwinDeltaPercent, 100*float64(l.Stock.PCTabBytes)/float64(max(l.Stock.Bytes, 1)), tables, chk, run)
		}
	}
	tw.Flush()
	fmt.Fprintf(ew, "\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "format\tprograms\tmedian\tp90\tmax\tmax program\tover %+.1f%%\t\n", Goal)
	for _, d := range Distributions(lines) {
		fmt.Fprintf(tw, "%s\t%d\t%+.2f%%\t%+.2f%%\t%+.2f%%\t%s\t%d\t\n", d.Format, d.N, d.Median, d.P90, d.Max, d.MaxProgram, len(d.Over))
	}
	tw.Flush()
	return ew.Err
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// Plot returns the population's plot: for each format, one point per
// program that has a result, its stock file size in MB (log scale)
// against the real file change in percent, with the Goal as a reference
// line. subtitle says what made it (command, machine, date).
func Plot(lines []Line, subtitle string) *svgplot.Plot {
	p := &svgplot.Plot{
		Title:    "File change of each program built with linear tables, against its size",
		Subtitle: subtitle,
		X:        svgplot.Axis{Label: "stock file size (MB, -ldflags=-w, log scale)", Log: true},
		Y: svgplot.Axis{Label: "file change vs stock (%)", Zero: true, Format: func(v float64) string {
			return strconv.FormatFloat(v, 'f', -1, 64) + "%"
		}},
		RefLines: []svgplot.RefLine{{Y: Goal, Label: fmt.Sprintf("goal %+.1f%%", Goal)}},
	}
	idx := map[string]int{}
	for _, l := range lines {
		if l.Error != "" || l.Stock == nil {
			continue
		}
		for _, r := range l.Formats {
			i, ok := idx[r.Format]
			if !ok {
				i = len(p.Series)
				idx[r.Format] = i
				p.Series = append(p.Series, svgplot.Series{Name: r.Format, Markers: true})
			}
			label := ""
			if i == 0 {
				label = l.Program
			}
			p.Series[i].Points = append(p.Series[i].Points, svgplot.Point{X: float64(l.Stock.Bytes) / 1e6, Y: r.FileDeltaPercent, Label: label})
		}
	}
	return p
}
