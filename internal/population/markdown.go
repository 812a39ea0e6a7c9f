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
	rows := mdRows(lines, o.Programs)
	formats := formatsOf(lines)
	writeMadeBy(ew, rows, o)
	t := writeProgramTable(ew, rows, formats)
	if t.results > 0 {
		fmt.Fprintf(ew, "- **check**: %d of %d patched builds matched their twins at every PC (%s (table, PC) pairs).\n",
			t.checked, t.results, textfmt.Commas(t.pcs))
		fmt.Fprintf(ew, "- **run**: %d of %d patched builds exited as their stock builds did, with the same output.\n\n", t.sameRuns, t.results)
	}
	writeDistributions(ew, lines)
	return ew.Err
}

// mdRow is one program's row of the Markdown table.
type mdRow struct {
	p Program
	l *Line // nil: not built
}

// mdRows returns a row for every program, in order, then one for every
// line of a program not among them.
func mdRows(lines []Line, programs []Program) []mdRow {
	byName := map[string]*Line{}
	for i := range lines {
		byName[lines[i].Program] = &lines[i]
	}
	var rows []mdRow
	for _, p := range programs {
		rows = append(rows, mdRow{p, byName[p.Name]})
	}
	for i := range lines {
		l := &lines[i]
		if !slices.ContainsFunc(programs, func(p Program) bool { return p.Name == l.Program }) {
			rows = append(rows, mdRow{Program{Name: l.Program, Module: l.Module, Package: l.Package, Version: l.Version}, l})
		}
	}
	return rows
}

// writeMadeBy writes where the results come from and how many programs
// were built, failed and not built.
func writeMadeBy(w io.Writer, rows []mdRow, o MarkdownOptions) {
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
	fmt.Fprintf(w, "Made by `%s`", o.Command)
	if o.Machine != "" {
		fmt.Fprintf(w, " on %s", o.Machine)
	}
	if o.Date != "" {
		fmt.Fprintf(w, ", %s", o.Date)
	}
	fmt.Fprintf(w, ". %d of the %d programs built, checked and run", built, len(rows))
	if failed > 0 {
		fmt.Fprintf(w, "; %d failed", failed)
	}
	if missing > 0 {
		fmt.Fprintf(w, "; %d not built", missing)
	}
	fmt.Fprintf(w, ".\n\n")
}

// mdTally counts the results the program table reports.
type mdTally struct {
	results, checked, sameRuns int
	pcs                        int64
}

// writeProgramTable writes the row per program and returns the tally of
// its results.
func writeProgramTable(w io.Writer, rows []mdRow, formats []string) mdTally {
	fmt.Fprintf(w, "| program | domain | module @ version | stock (bytes) | pctab/file |")
	for _, f := range formats {
		fmt.Fprintf(w, " %s | estimate | tables |", f)
	}
	fmt.Fprintf(w, " check | run |\n|---|---|---|---:|---:|")
	for range formats {
		fmt.Fprintf(w, "---:|---:|---:|")
	}
	fmt.Fprintf(w, "---|---|\n")
	var t mdTally
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | `%s` %s |", cell(r.p.Name), cell(r.p.Doc), cell(r.p.ImportPath()), cell(r.p.Version))
		switch {
		case r.l == nil:
			fmt.Fprintf(w, " | |%s not built | |\n", strings.Repeat(" | | |", len(formats)))
			continue
		case r.l.Error != "" && r.l.Stock == nil:
			fmt.Fprintf(w, " | |%s failed: %s | |\n", strings.Repeat(" | | |", len(formats)), cell(shorten(r.l.Error)))
			continue
		}
		l := r.l
		fmt.Fprintf(w, " %s | %.1f%% |", textfmt.Commas(l.Stock.Bytes), 100*float64(l.Stock.PCTabBytes)/float64(max(l.Stock.Bytes, 1)))
		var chk, run []string
		for _, f := range formats {
			i := slices.IndexFunc(l.Formats, func(r Result) bool { return r.Format == f })
			if i < 0 {
				fmt.Fprintf(w, " | | |")
				continue
			}
			prefix := ""
			if len(formats) > 1 {
				prefix = f + ": "
			}
			c, rn := t.add(w, &l.Formats[i], prefix)
			chk, run = append(chk, c), append(run, rn)
		}
		if l.Error != "" {
			chk = append(chk, "failed: "+shorten(l.Error))
		}
		fmt.Fprintf(w, " %s | %s |\n", cell(strings.Join(chk, "; ")), cell(strings.Join(run, "; ")))
	}
	fmt.Fprintf(w, "\n")
	return t
}

// add writes res's three cells (file change, estimate, tables), counts
// it, and returns its check and run texts, each after prefix.
func (t *mdTally) add(w io.Writer, res *Result, prefix string) (chk, run string) {
	t.results++
	est := "-"
	if res.EstimateFileDeltaPercent != nil {
		est = fmt.Sprintf("%+.2f%%", *res.EstimateFileDeltaPercent)
	}
	tables := "-"
	if res.TwinPCTabBytes > 0 {
		tables = fmt.Sprintf("%.3f×", float64(res.PCTabBytes)/float64(res.TwinPCTabBytes))
	}
	fmt.Fprintf(w, " **%+.2f%%** | %s | %s |", res.FileDeltaPercent, est, tables)
	switch {
	case res.Check.Error != "":
		chk = prefix + "error: " + shorten(res.Check.Error)
	case !res.Check.OK:
		chk = fmt.Sprintf("%sFAIL: %d mismatches", prefix, res.Check.Mismatches)
	default:
		t.checked++
		t.pcs += res.Check.PCs
		chk = prefix + "ok"
	}
	args := strings.Join(res.Run.Args, " ")
	run = fmt.Sprintf("%s`%s`: exit %d", prefix, args, res.Run.ExitCode)
	switch {
	case res.Run.TimedOut:
		run = fmt.Sprintf("%s`%s`: timed out", prefix, args)
	case res.Run.Error != "":
		run = fmt.Sprintf("%s`%s`: %s", prefix, args, shorten(res.Run.Error))
	}
	if res.SameRun {
		t.sameRuns++
	} else {
		run += ", differs from stock"
	}
	return chk, run
}

// writeDistributions writes the distribution of the file change per
// format, naming the programs above Outlier.
func writeDistributions(w io.Writer, lines []Line) {
	fmt.Fprintf(w, "| format | programs | median | p90 (nearest rank) | max | over %+.1f%% | over %+.1f%% |\n", Goal, Outlier)
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---|\n")
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
		fmt.Fprintf(w, "| %s | %d | %+.2f%% | %+.2f%% | %+.2f%% (%s) | %d | %s |\n",
			cell(d.Format), d.N, d.Median, d.P90, d.Max, cell(d.MaxProgram), len(d.Over), cell(names))
	}
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
