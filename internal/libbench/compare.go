package libbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/pctab/pctab/toolchain"
)

// ErrOutputDiffers is returned by Compare when a library's tests print
// something else with the patched toolchain than with stock Go.
var ErrOutputDiffers = errors.New("libbench: the tests' output differs from stock Go's")

// A TestRun is the normalized output of one package's tests in one
// flavour.
type TestRun struct {
	Package string
	Flavour string
	Output  string // normalized (Normalize)
	Exit    int    // the go command's exit status
}

// Compare runs the tests of every library's Tests packages (go test
// -count=1 -json -vet=off, in the work module, printed in a canonical order by
// ByTest) with the stock toolchain and in every
// patched flavour, and compares each patched run's normalized output and
// exit status with stock's. Where they differ it runs stock again: output
// that stock itself does not repeat is nondeterministic and reported as
// such, not as a difference. It writes one line per package and flavour to
// w, with the first differing lines, and returns ErrOutputDiffers if any
// patched run differs from stock's repeatable output.
func Compare(ctx context.Context, o Options, w, log io.Writer) error {
	roots := []string{o.Toolchain.GOROOT, o.Toolchain.TwinGOROOT, o.Toolchain.StockRoot}
	var stock *toolchain.Flavour
	for i := range o.Flavours {
		if o.Flavours[i].Baseline() {
			stock = &o.Flavours[i]
			break
		}
	}
	if stock == nil {
		return errors.New("libbench: no stock flavour to compare with")
	}
	differ := false
	for _, l := range o.Libraries {
		for _, pkg := range l.Tests {
			base, err := testRun(ctx, o, *stock, pkg, l.TestSkip, roots, log)
			if err != nil {
				return err
			}
			var again *TestRun
			for _, fl := range o.Flavours {
				if fl.Baseline() {
					continue
				}
				got, err := testRun(ctx, o, fl, pkg, l.TestSkip, roots, log)
				if err != nil {
					return err
				}
				status := fmt.Sprintf("%d lines, exit status %d", strings.Count(base.Output, "\n"), base.Exit)
				if got.Output == base.Output && got.Exit == base.Exit {
					fmt.Fprintf(w, "%-12s %-40s %-18s identical to stock (%s)\n", l.Name, pkg, fl.Name, status)
					continue
				}
				if again == nil {
					if again, err = testRun(ctx, o, *stock, pkg, l.TestSkip, roots, log); err != nil {
						return err
					}
				}
				if again.Output != base.Output || again.Exit != base.Exit {
					fmt.Fprintf(w, "%-12s %-40s %-18s differs, but so do two stock runs (nondeterministic):\n%s", l.Name, pkg, fl.Name, indent(FirstDiff(base.Output, again.Output, 3)))
					continue
				}
				differ = true
				fmt.Fprintf(w, "%-12s %-40s %-18s DIFFERS from stock (%s; patched exit status %d):\n%s", l.Name, pkg, fl.Name, status, got.Exit, indent(FirstDiff(base.Output, got.Output, 3)))
			}
		}
	}
	if differ {
		return ErrOutputDiffers
	}
	return nil
}

func testRun(ctx context.Context, o Options, fl toolchain.Flavour, pkg, skip string, roots []string, log io.Writer) (*TestRun, error) {
	fmt.Fprintf(log, "libbench: go test %s (%s)\n", pkg, fl.Name)
	args := append([]string{"test", "-count=1", "-json", "-vet=off"}, fl.BuildFlags()...)
	if skip != "" {
		args = append(args, "-skip", skip)
	}
	cmd := command(ctx, o.Toolchain, &fl, o.WorkDir, append(args, pkg)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	exit := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("libbench: go test %s (%s): %w", pkg, fl.Name, err)
		}
		exit = ee.ExitCode()
	}
	text, err := ByTest(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("libbench: go test -json %s (%s): %w", pkg, fl.Name, err)
	}
	return &TestRun{Package: pkg, Flavour: fl.Name, Output: Normalize(text+stderr.String(), roots), Exit: exit}, nil
}

// A testEvent is a line of go test -json (cmd/test2json).
type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// ByTest returns go test -json's output as text in a canonical order, so
// that parallel tests' interleaving does not change it: the output of the
// package (outside any test) in order, then each test's output, tests
// ordered by name, each with its result. The lines the go command writes
// only when output switches between tests (=== PAUSE, CONT, NAME) are left
// out.
func ByTest(jsonOut []byte) (string, error) {
	type test struct {
		out    strings.Builder
		result string
	}
	tests := map[string]*test{}
	var pkgOut strings.Builder
	dec := json.NewDecoder(bytes.NewReader(jsonOut))
	for {
		var ev testEvent
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			return "", err
		}
		if ev.Test == "" {
			if ev.Action == "output" || ev.Action == "build-output" {
				pkgOut.WriteString(ev.Output)
			}
			continue
		}
		t := tests[ev.Test]
		if t == nil {
			t = &test{}
			tests[ev.Test] = t
		}
		switch ev.Action {
		case "output":
			if !switchLineRE.MatchString(ev.Output) {
				t.out.WriteString(ev.Output)
			}
		case "pass", "fail", "skip":
			t.result = ev.Action
		}
	}
	names := make([]string, 0, len(tests))
	for n := range tests {
		names = append(names, n)
	}
	slices.Sort(names)
	var sb strings.Builder
	sb.WriteString(pkgOut.String())
	for _, n := range names {
		fmt.Fprintf(&sb, "### %s: %s\n%s", n, tests[n].result, tests[n].out.String())
	}
	return sb.String(), nil
}

var switchLineRE = regexp.MustCompile(`^=== (PAUSE|CONT|NAME) `)

var (
	// "--- PASS: TestX (0.00s)", "=== NAME", "ok  \tpkg\t0.012s", "FAIL\tpkg\t0.3s"
	elapsedRE = regexp.MustCompile(`\(\d+(\.\d+)?s\)`)
	pkgTimeRE = regexp.MustCompile(`(?m)^(ok|FAIL|\?)(\s+\S+\s+)\d+(\.\d+)?s`)
	// "+0x1f" in tracebacks: the patched runtime's code, and so its
	// functions' PC offsets, differ from stock's; arguments and
	// pointers ("0xc000012345") differ from run to run.
	hexRE = regexp.MustCompile(`0x[0-9a-fA-F]+`)
	// Clock times that log lines print, and klog's header: date, time,
	// process ID ("I1126 15:01:37.180136   31995 klog_test.go:184]").
	clockRE = regexp.MustCompile(`\b\d\d:\d\d:\d\d(\.\d+)?\b`)
	klogRE  = regexp.MustCompile(`(?m)^([IWEF])\d{4} hh:mm:ss\s+\d+ `)
	// Durations that tests log as time.Duration prints them ("6.752µs",
	// "1m30s"), as sentry-go's do; not after a colon, where a line
	// number stands.
	durationRE = regexp.MustCompile(`(^|[^:\w.])(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|us|ms|s)\b`)
)

// Normalize returns go test's output with what legitimately differs
// between toolchains or runs replaced: the GOROOT directories in roots by
// "$GOROOT", elapsed times by "(T)" and "Ts", other durations by "D",
// clock times by "hh:mm:ss" (and in klog's header the date by "MMDD", the
// process ID by "PID"), and
// hexadecimal numbers (PC
// offsets in tracebacks, pointers, goroutine arguments) by "0x?".
// File names, line numbers, function names and the order of frames stay.
func Normalize(s string, roots []string) string {
	roots = slices.Clone(roots)
	slices.SortFunc(roots, func(a, b string) int { return len(b) - len(a) }) // longest first
	for _, r := range roots {
		if r != "" {
			s = strings.ReplaceAll(s, r, "$GOROOT")
		}
	}
	s = elapsedRE.ReplaceAllString(s, "(T)")
	s = pkgTimeRE.ReplaceAllString(s, "${1}${2}Ts")
	s = clockRE.ReplaceAllString(s, "hh:mm:ss")
	s = klogRE.ReplaceAllString(s, "${1}MMDD hh:mm:ss PID ")
	s = durationRE.ReplaceAllString(s, "${1}D")
	return hexRE.ReplaceAllString(s, "0x?")
}

// FirstDiff returns the first line where a and b differ, with up to
// context lines before it, as "-" (a) and "+" (b) lines; "" if they are
// equal.
func FirstDiff(a, b string, context int) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	i := 0
	for i < len(al) && i < len(bl) && al[i] == bl[i] {
		i++
	}
	if i == len(al) && i == len(bl) {
		return ""
	}
	var sb strings.Builder
	for j := max(0, i-context); j < i; j++ {
		fmt.Fprintf(&sb, " %s\n", al[j])
	}
	for j := i; j < min(len(al), i+context); j++ {
		fmt.Fprintf(&sb, "-%s\n", al[j])
	}
	for j := i; j < min(len(bl), i+context); j++ {
		fmt.Fprintf(&sb, "+%s\n", bl[j])
	}
	return sb.String()
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "\t" + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n\t") + "\n"
}
