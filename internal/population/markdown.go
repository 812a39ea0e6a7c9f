package population

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pctab/pctab/internal/textfmt"
)

// Outlier is the file change, in percent of the stock file, above which
// the Markdown report names a program as an outlier of its format.
const Outlier = 1.0

// MarkdownOptions says what WriteMarkdown reports besides the lines.
type MarkdownOptions struct {
	// Programs is the population the lines came from, in order. Every
	// program gets a row, and one without a line is reported as not
	// built. Nil reports the lines alone, in their order.
	Programs []Program
	Command  string // the command that made the lines, quoted as code
	Machine  string // where it ran
	Date     string // when it ran (2006-01-02)
}

// WriteMarkdown writes the population's results as Markdown: where they
// come from (command, machine, date), a row per program (version, stock
// file size and its pctab's share, per format the real file change,
// pctab-stats' estimate of it and the tables' size over the twin's, the
// check against the twin and the run), the totals of the checks
// and runs, and per format the distribution of the file change (median,
// p90 by nearest rank, max) with the programs above Goal counted and the
// programs above Outlier named.
func WriteMarkdown(w io.Writer, lines []Line, o MarkdownOptions) error {
	ew := &textfmt.ErrWriter{W: w}
	byName := map[string]*Line{}
	for i := range lines {
		byName[lines[i].Program] = &lines[i]
	}
	type row struct {
		p    Program
		l    *Line
		have bool // p is from Programs (has a domain)
	}
	var rows []row
	for _, p := range o.Programs {
		rows = append(rows, row{p, byName[p.Name], true})
	}
	for i := range lines {
		l := &lines[i]
		if !slices.ContainsFunc(o.Programs, func(p Program) bool { return p.Name == l.Program }) {
			rows = append(rows, row{Program{Name: l.Program, Module: l.Module, Package: l.Package, Version: l.Version}, l, false})
		}
	}
	formats := formatsOf(lines)

	var built, failed, missing int
	for _, r := range rows {
		switch {
		case r.l == nil:
			missing++
		case r.l.Error != "":
			failed++
		default:
			built++
		}
	}
	fmt.Fprintf(ew, "Made by `%s`", o.Command)
	if o.Machine != "" {
		fmt.Fprintf(ew, " on %s", o.Machine)
	}
	if o.Date != "" {
		fmt.Fprintf(ew, ", %s", o.Date)
	}
	fmt.Fprintf(ew, ". %d of the %d programs built, checked and run", built, len(rows))
	if failed > 0 {
		fmt.Fprintf(ew, "; %d failed", failed)
	}
	if missing > 0 {
		fmt.Fprintf(ew, "; %d not built", missing)
	}
	fmt.Fprintf(ew, ".\n\n")

	// The row per program.
	fmt.Fprintf(ew, "| program | domain | module @ version | stock (bytes) | pctab/file |")
	for _, f := range formats {
		fmt.Fprintf(ew, " %s | estimate | tables |", f)
	}
	fmt.Fprintf(ew, " check | run |\n|---|---|---|---:|---:|")
	for range formats {
		fmt.Fprintf(ew, "---:|---:|---:|")
	}
	fmt.Fprintf(ew, "---|---|\n")
	var checked, sameRuns, results int
	var pcs int64
	for _, r := range rows {
		fmt.Fprintf(ew, "| %s | %s | `%s` %s |", cell(r.p.Name), cell(r.p.Doc), cell(r.p.ImportPath()), cell(r.p.Version))
		switch {
		case r.l == nil:
			fmt.Fprintf(ew, " | |%s not built | |\n", strings.Repeat(" | | |", len(formats)))
			continue
		case r.l.Error != "" && r.l.Stock == nil:
			fmt.Fprintf(ew, " | |%s failed: %s | |\n", strings.Repeat(" | | |", len(formats)), cell(shorten(r.l.Error)))
			continue
		}
		l := r.l
		fmt.Fprintf(ew, " %s | %.1f%% |", textfmt.Commas(l.Stock.Bytes), 100*float64(l.Stock.PCTabBytes)/float64(max(l.Stock.Bytes, 1)))
		var chk, run []string
		for _, f := range formats {
			i := slices.IndexFunc(l.Formats, func(r Result) bool { return r.Format == f })
			if i < 0 {
				fmt.Fprintf(ew, " | | |")
				continue
			}
			res := l.Formats[i]
			results++
			est := "-"
			if res.EstimateFileDeltaPercent != nil {
				est = fmt.Sprintf("%+.2f%%", *res.EstimateFileDeltaPercent)
			}
			tables := "-"
			if res.TwinPCTabBytes > 0 {
				tables = fmt.Sprintf("%.3f×", float64(res.PCTabBytes)/float64(res.TwinPCTabBytes))
			}
			fmt.Fprintf(ew, " **%+.2f%%** | %s | %s |", res.FileDeltaPercent, est, tables)
			prefix := ""
			if len(formats) > 1 {
				prefix = f + ": "
			}
			switch {
			case res.Check.Error != "":
				chk = append(chk, prefix+"error: "+shorten(res.Check.Error))
			case !res.Check.OK:
				chk = append(chk, fmt.Sprintf("%sFAIL: %d mismatches", prefix, res.Check.Mismatches))
			default:
				checked++
				pcs += res.Check.PCs
				chk = append(chk, prefix+"ok")
			}
			s := fmt.Sprintf("%s`%s`: exit %d", prefix, strings.Join(res.Run.Args, " "), res.Run.ExitCode)
			switch {
			case res.Run.TimedOut:
				s = fmt.Sprintf("%s`%s`: timed out", prefix, strings.Join(res.Run.Args, " "))
			case res.Run.Error != "":
				s = fmt.Sprintf("%s`%s`: %s", prefix, strings.Join(res.Run.Args, " "), shorten(res.Run.Error))
			}
			if res.SameRun {
				sameRuns++
			} else {
				s += ", differs from stock"
			}
			run = append(run, s)
		}
		if l.Error != "" {
			chk = append(chk, "failed: "+shorten(l.Error))
		}
		fmt.Fprintf(ew, " %s | %s |\n", cell(strings.Join(chk, "; ")), cell(strings.Join(run, "; ")))
	}
	fmt.Fprintf(ew, "\n")
	if results > 0 {
		fmt.Fprintf(ew, "- **check**: %d of %d patched builds matched their twins at every PC (%s (table, PC) pairs).\n",
			checked, results, textfmt.Commas(pcs))
		fmt.Fprintf(ew, "- **run**: %d of %d patched builds exited as their stock builds did, with the same output.\n\n", sameRuns, results)
	}

	// The distribution per format.
	fmt.Fprintf(ew, "| format | programs | median | p90 (nearest rank) | max | over %+.1f%% | over %+.1f%% |\n", Goal, Outlier)
	fmt.Fprintf(ew, "|---|---:|---:|---:|---:|---:|---|\n")
	for _, d := range Distributions(lines) {
		var out []string
		for _, l := range lines {
			if l.Error != "" {
				continue
			}
			for _, r := range l.Formats {
				if r.Format == d.Format && r.FileDeltaPercent > Outlier {
					out = append(out, fmt.Sprintf("%s %+.2f%%", l.Program, r.FileDeltaPercent))
				}
			}
		}
		names := "none"
		if len(out) > 0 {
			names = strings.Join(out, ", ")
		}
		fmt.Fprintf(ew, "| %s | %d | %+.2f%% | %+.2f%% | %+.2f%% (%s) | %d | %s |\n",
			cell(d.Format), d.N, d.Median, d.P90, d.Max, cell(d.MaxProgram), len(d.Over), cell(names))
	}
	return ew.Err
}

// formatsOf returns the formats of the lines, in order of first appearance.
func formatsOf(lines []Line) []string {
	var fs []string
	for _, l := range lines {
		for _, r := range l.Formats {
			if !slices.Contains(fs, r.Format) {
				fs = append(fs, r.Format)
			}
		}
	}
	return fs
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// shorten returns the first line of s, at most 160 bytes of it.
func shorten(s string) string {
	s = firstLine(s)
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// The markers that delimit the section ReplaceSection rewrites.
const (
	BeginMarker = "<!-- begin: made by pctab-toolchain population -->"
	EndMarker   = "<!-- end: made by pctab-toolchain population -->"
)

// ErrNoSection is returned by ReplaceSection for a document without the
// markers, or with them out of order or repeated.
var ErrNoSection = errors.New("population: no generated section (want one BeginMarker line, then one EndMarker line)")

// ReplaceSection returns doc with the lines between its BeginMarker and
// EndMarker lines replaced by section; the rest of doc, the prose around
// the generated tables, is kept as it is.
func ReplaceSection(doc, section []byte) ([]byte, error) {
	b := bytes.Count(doc, []byte(BeginMarker))
	e := bytes.Count(doc, []byte(EndMarker))
	i := bytes.Index(doc, []byte(BeginMarker+"\n"))
	j := bytes.Index(doc, []byte(EndMarker))
	if b != 1 || e != 1 || i < 0 || j < i || (j > 0 && doc[j-1] != '\n') {
		return nil, ErrNoSection
	}
	i += len(BeginMarker) + 1
	var out bytes.Buffer
	out.Write(doc[:i])
	out.Write(section)
	if len(section) > 0 && section[len(section)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.Write(doc[j:])
	return out.Bytes(), nil
}
