// Package testsuite runs Go's own test suite (go test -short std cmd) with
// several toolchains and compares the outcome of every package: the
// machinery of "pctab-toolchain testsuite".
//
// Each run is a go command with its environment and build flags. Its go
// test -json output is appended to DIR/NAME.json, batch by batch, so an
// interrupted run resumes where it stopped: a package is done in a run once
// its JSON holds the package's final action (pass, fail or skip). A batch
// that was stopped counts for nothing: its packages run again. The runs
// take turns batch by batch, so that at any time they have finished nearly
// the same packages and their comparison covers most of what has run.
package testsuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A Run is one toolchain configuration the suite runs under.
type Run struct {
	Name  string   // file name stem and table column, e.g. "stock"
	Go    string   // path of the go command
	Env   []string // its environment
	Flags []string // go test flags before the packages, e.g. -tags
	Dir   string   // directory the go command runs in ("": the current one)
}

// Options configure Execute.
type Options struct {
	Dir      string   // where the runs' JSON files and the log go
	Packages []string // the packages, in the order to run them
	Runs     []Run
	Batch    int      // packages per go test invocation (default 20)
	TestArgs []string // go test flags for every run (default -short -count=1 -timeout=20m)
	Log      io.Writer
}

// Outcomes of a package in a run.
const (
	Pass    = "pass"
	Fail    = "fail"
	Skip    = "skip" // no test files, or every test skipped
	Missing = "-"    // not (yet) run
)

// event is the part of a go test -json event (cmd/test2json) read here.
type event struct {
	Action     string
	Package    string
	Test       string
	ImportPath string // build-output and build-fail events
}

// Outcomes reads go test -json output and returns the final action of each
// package: pass, fail or skip. A package that failed to build counts as a
// failure. Lines that are not JSON events (a panic of the go command) are
// ignored; a truncated last line ends the reading without an error.
func Outcomes(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	err := scanEvents(r, func(e *event) {
		switch {
		case e.Action == "build-fail" && e.ImportPath != "":
			// The package's own fail event follows; a test-only
			// import path ("p [p.test]") names it too.
			p, _, _ := strings.Cut(e.ImportPath, " ")
			if _, ok := out[p]; !ok {
				out[p] = Fail
			}
		case e.Test == "" && e.Package != "" && (e.Action == Pass || e.Action == Fail || e.Action == Skip):
			out[e.Package] = e.Action
		}
	})
	return out, err
}

// scanEvents calls f with each go test -json event in r, skipping the lines
// that are not JSON events and a truncated last line.
func scanEvents(r io.Reader, f func(*event)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		f(&e)
	}
	return sc.Err()
}

// CaseOutcomes reads go test -json output and returns the final action of
// each test (pass, fail or skip), keyed by package and test name joined by
// a space. Hexadecimal numbers in a test's name (subtests named after a
// pointer, such as errors' TestAs) become "0x…", so that the same test
// has the same name in every run; of different tests whose names then
// coincide, a failure wins over a pass, and a pass over a skip.
func CaseOutcomes(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	names := map[string]string{} // the last name read of each key
	err := scanEvents(r, func(e *event) {
		if e.Test != "" && e.Package != "" && (e.Action == Pass || e.Action == Fail || e.Action == Skip) {
			k := e.Package + " " + hexName.ReplaceAllLiteralString(e.Test, "0x…")
			// A test run again (a resumed run) takes its last outcome.
			if prev, ok := out[k]; !ok || names[k] == e.Test || actionRank[e.Action] > actionRank[prev] {
				out[k] = e.Action
			}
			names[k] = e.Test
		}
	})
	return out, err
}

// hexName matches the hexadecimal numbers CaseOutcomes takes out of test
// names.
var hexName = regexp.MustCompile(`0x[0-9a-fA-F]+`)

// actionRank orders the outcomes of tests whose names coincide once
// CaseOutcomes has taken their numbers out.
var actionRank = map[string]int{Skip: 0, Pass: 1, Fail: 2}

// readOutcomes returns Outcomes of the file at path, none if it is missing.
func readOutcomes(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	o, err := Outcomes(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return o, nil
}

// JSONFile returns the path of run name's go test -json output in dir.
func JSONFile(dir, name string) string { return filepath.Join(dir, name+".json") }

// Execute runs the packages not yet done in each run, in batches of
// o.Batch packages, taking turns: the first batch in every run, then the
// second, and so on. It stops at the first error of the go command other
// than failing tests (a failing test is the result, not an error), or
// when ctx is done.
func Execute(ctx context.Context, o Options) error {
	if o.Batch <= 0 {
		o.Batch = 20
	}
	if o.TestArgs == nil {
		o.TestArgs = []string{"-short", "-count=1", "-timeout=20m"}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	done := make([]map[string]string, len(o.Runs))
	for i, r := range o.Runs {
		if !validName.MatchString(r.Name) {
			return fmt.Errorf("testsuite: run name %q: want letters, digits, '-', '_' or '.'", r.Name)
		}
		var err error
		if done[i], err = readOutcomes(JSONFile(o.Dir, r.Name)); err != nil {
			return err
		}
	}
	logf, err := os.OpenFile(filepath.Join(o.Dir, "runs.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	for start := 0; start < len(o.Packages); start += o.Batch {
		batch := o.Packages[start:min(start+o.Batch, len(o.Packages))]
		for i, r := range o.Runs {
			var todo []string
			for _, p := range batch {
				if _, ok := done[i][p]; !ok {
					todo = append(todo, p)
				}
			}
			if len(todo) == 0 {
				continue
			}
			t0 := time.Now()
			fmt.Fprintf(o.Log, "testsuite: %s: packages %d-%d of %d (%d to run)\n", r.Name, start+1, start+len(batch), len(o.Packages), len(todo))
			got, err := runBatch(ctx, o, r, todo)
			fmt.Fprintf(logf, "%s %s %s packages %d-%d: %d run in %.0fs, err=%v\n",
				t0.UTC().Format(time.RFC3339), r.Name, r.Go, start+1, start+len(batch), len(todo), time.Since(t0).Seconds(), err)
			if err != nil {
				return err
			}
			for p, a := range got {
				done[i][p] = a
			}
		}
	}
	return nil
}

// validName is the form of a run's name, a file name stem.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// runBatch runs go test -json on pkgs in run r and returns the outcomes
// it printed. While it runs, the output goes to r's partial file
// (NAME.partial.json); only when go test ends by itself is it appended to
// r's JSON file, so that a stopped batch (an interrupt, ctx done), whose
// packages may have failed only because they were stopped, counts for
// nothing and runs again.
func runBatch(ctx context.Context, o Options, r Run, pkgs []string) (map[string]string, error) {
	partial := filepath.Join(o.Dir, r.Name+".partial.json")
	f, err := os.Create(partial)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	args := append([]string{"test", "-json"}, o.TestArgs...)
	args = append(append(args, r.Flags...), pkgs...)
	cmd := exec.CommandContext(ctx, r.Go, args...)
	cmd.Env, cmd.Dir = r.Env, r.Dir
	stopGroup(cmd)
	cmd.WaitDelay = time.Minute
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(f, &buf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && ctx.Err() == nil {
		// go test exits 1 when a package fails: the JSON says which.
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("testsuite: %s: go %s: %w\n%s", r.Name, strings.Join(args[:len(args)-len(pkgs)], " "), err, lastLines(stderr.Bytes(), 20))
	}
	if err := appendFile(JSONFile(o.Dir, r.Name), buf.Bytes()); err != nil {
		return nil, err
	}
	f.Close()
	os.Remove(partial)
	got, _ := Outcomes(&buf)
	// What go test printed on standard error (build failures of
	// packages without a JSON event, vet failures) is kept with the JSON.
	if stderr.Len() > 0 {
		if err := appendFile(filepath.Join(o.Dir, r.Name+".stderr"), stderr.Bytes()); err != nil {
			return got, err
		}
	}
	return got, nil
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}

// A Table holds each package's outcome in each run.
type Table struct {
	Runs     []string
	Packages []string            // every package, in the suite's order
	Outcome  map[string][]string // package -> outcome per run, Missing if not run
	// Tests holds each test's outcome per run ("" if it did not run),
	// keyed by package and test name joined by a space.
	Tests map[string][]string
}

// Load reads the runs' JSON files in dir into a Table over pkgs; packages
// the files name that are not in pkgs are added at the end, sorted.
func Load(dir string, runs []string, pkgs []string) (*Table, error) {
	t := &Table{Runs: runs, Packages: slices.Clone(pkgs), Outcome: map[string][]string{}, Tests: map[string][]string{}}
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p] = true
	}
	var extra []string
	for i, r := range runs {
		o, err := readOutcomes(JSONFile(dir, r))
		if err != nil {
			return nil, err
		}
		for p, a := range o {
			if !seen[p] {
				seen[p] = true
				extra = append(extra, p)
			}
			if t.Outcome[p] == nil {
				t.Outcome[p] = make([]string, len(runs))
				for j := range runs {
					t.Outcome[p][j] = Missing
				}
			}
			t.Outcome[p][i] = a
		}
		f, err := os.Open(JSONFile(dir, r))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		to, err := CaseOutcomes(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		for k, a := range to {
			if t.Tests[k] == nil {
				t.Tests[k] = make([]string, len(runs))
			}
			t.Tests[k][i] = a
		}
	}
	slices.Sort(extra)
	t.Packages = append(t.Packages, extra...)
	return t, nil
}

// outcome returns package p's outcome in run i.
func (t *Table) outcome(p string, i int) string {
	if o := t.Outcome[p]; o != nil {
		return o[i]
	}
	return Missing
}

// Complete reports whether package p has an outcome in every run.
func (t *Table) Complete(p string) bool {
	for i := range t.Runs {
		if t.outcome(p, i) == Missing {
			return false
		}
	}
	return true
}

// Differences returns the packages that every run has finished and whose
// outcome is not the same in all of them.
func (t *Table) Differences() []string {
	var d []string
	for _, p := range t.Packages {
		if !t.Complete(p) {
			continue
		}
		for i := 1; i < len(t.Runs); i++ {
			if t.outcome(p, i) != t.outcome(p, 0) {
				d = append(d, p)
				break
			}
		}
	}
	return d
}

// TestDifferences returns the tests (package, a space, test) of the
// packages every run has finished whose outcome is not the same in all
// runs (a test that did not run in one counts as different), sorted.
func (t *Table) TestDifferences() []string {
	var d []string
	for k, o := range t.Tests {
		p, _, _ := strings.Cut(k, " ")
		if !t.Complete(p) {
			continue
		}
		for _, a := range o[1:] {
			if a != o[0] {
				d = append(d, k)
				break
			}
		}
	}
	slices.Sort(d)
	return d
}

// Totals are the counts of one run's outcomes.
type Totals struct {
	Pass, Fail, Skip, Missing int
}

// Totals returns run i's counts over every package, and over the packages
// every run has finished (the ones the comparison covers).
func (t *Table) Totals(i int) (all, common Totals) {
	for _, p := range t.Packages {
		count := func(c *Totals) {
			switch t.outcome(p, i) {
			case Pass:
				c.Pass++
			case Fail:
				c.Fail++
			case Skip:
				c.Skip++
			default:
				c.Missing++
			}
		}
		count(&all)
		if t.Complete(p) {
			count(&common)
		}
	}
	return all, common
}

// Write prints the packages whose outcome differs between the runs, one
// row each, the packages that failed in every run, and each run's totals.
func (t *Table) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	diffs := t.Differences()
	width := len("package")
	for _, p := range diffs {
		width = max(width, len(p))
	}
	for _, r := range t.Runs {
		width = max(width, len(r))
	}
	row := func(first string, cells []string) {
		fmt.Fprintf(bw, "%-*s", width, first)
		for i, c := range cells {
			fmt.Fprintf(bw, "  %-*s", max(len(t.Runs[i]), 7), c)
		}
		fmt.Fprintln(bw)
	}
	complete := 0
	for _, p := range t.Packages {
		if t.Complete(p) {
			complete++
		}
	}
	fmt.Fprintf(bw, "packages whose outcome differs (%d of the %d that every run has finished; %d in the suite):\n", len(diffs), complete, len(t.Packages))
	row("package", t.Runs)
	for _, p := range diffs {
		row(p, t.Outcome[p])
	}
	var allFail []string
	for _, p := range t.Packages {
		if t.Complete(p) && !slices.Contains(diffs, p) && t.outcome(p, 0) == Fail {
			allFail = append(allFail, p)
		}
	}
	fmt.Fprintf(bw, "\npackages failing in every run (%d):", len(allFail))
	for _, p := range allFail {
		fmt.Fprintf(bw, " %s", p)
	}
	tdiffs := t.TestDifferences()
	fmt.Fprintf(bw, "\n\ntests whose outcome differs, in the packages every run has finished (%d; - did not run):\n", len(tdiffs))
	for _, k := range tdiffs {
		fmt.Fprintf(bw, "%s", k)
		for i, a := range t.Tests[k] {
			if a == "" {
				a = Missing
			}
			fmt.Fprintf(bw, "  %s=%s", t.Runs[i], a)
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintf(bw, "\ntotals (all packages: pass fail skip not-run | packages every run finished: pass fail skip):\n")
	for i, r := range t.Runs {
		a, c := t.Totals(i)
		fmt.Fprintf(bw, "%-*s  %4d %4d %4d %4d | %4d %4d %4d\n", width, r, a.Pass, a.Fail, a.Skip, a.Missing, c.Pass, c.Fail, c.Skip)
	}
	return bw.Flush()
}
