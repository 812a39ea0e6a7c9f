package libbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/pctab/pctab/internal/benchrun"
	"github.com/pctab/pctab/internal/par"
	"github.com/pctab/pctab/toolchain"
)

// Options configure [Run], [Instructions] and [Compare].
type Options struct {
	Toolchain *toolchain.Toolchain
	Flavours  []toolchain.Flavour // builds to compare; the first stock one is the baseline
	Libraries []Library
	WorkDir   string // the work module, made by Prepare
	BinDir    string // directory for the test binaries
	Count     int    // rounds; each runs every target in every flavour once
	BenchTime string // -test.benchtime, e.g. "100ms"
	// Interleave runs each target's benchmarks one at a time, each in
	// every flavour in turn (package benchrun), so that the runs a round
	// pairs are adjacent in time.
	Interleave bool
	// Layouts, if not zero, is the number of random function layouts
	// (toolchain.Flavour.Layout) Run builds every flavour in: round r runs
	// every flavour with seed r%Layouts+1, so that the rounds spread each
	// flavour's code over that many placements and their ratios measure
	// the code rather than one placement of it.
	Layouts int
	// Only, if not nil, keeps the benchmarks whose full name, as a test
	// binary prints it with -test.cpu=1 ("BenchmarkErrors/errors-stack-100"),
	// it matches. Run needs Interleave for it.
	Only *regexp.Regexp
}

// keep returns the names that o.Only matches (all without it).
func (o Options) keep(names []string) []string {
	if o.Only == nil {
		return names
	}
	var out []string
	for _, n := range names {
		if o.Only.MatchString(n) {
			out = append(out, n)
		}
	}
	return out
}

// roundFlavours returns the builds round r runs (toolchain.RoundFlavours).
func (o Options) roundFlavours(r int) []toolchain.Flavour {
	return toolchain.RoundFlavours(o.Flavours, o.Layouts, r)
}

// builds returns every build Run needs: each flavour in each layout.
func (o Options) builds() []toolchain.Flavour {
	return toolchain.LayoutBuilds(o.Flavours, o.Layouts)
}

// Run builds the tests of every target's package in every flavour (go test
// -c in the work module) and runs their benchmarks round-robin, o.Count
// rounds: in each round, each target runs in every flavour in turn, the
// flavours' order rotated by one each round, and with o.Layouts in the
// round's function layout. Every benchmark runs with -test.cpu=1, so that
// the parallel ones (zap's, slog's) measure one goroutine's work rather
// than the contention of a shared machine. The results go to w in the Go
// benchmark format, each run's block under the configuration keys library,
// variant (the target's), toolchain (the flavour's name) and, with
// o.Layouts, layout (the seed), so that `benchstat -col toolchain -ignore
// layout` compares them and [Summarize] reads them. With o.Interleave each
// round runs the benchmarks one at a time. Progress goes to log.
func Run(ctx context.Context, o Options, w, log io.Writer) error {
	if o.Count < 1 {
		o.Count = 1
	}
	bins, err := buildTests(ctx, o, log)
	if err != nil {
		return err
	}
	if o.Only != nil && !o.Interleave {
		return fmt.Errorf("libbench: selecting benchmarks by name (%v) needs Interleave", o.Only)
	}
	patterns, err := targetPatterns(ctx, o, bins)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	header := true
	for round := range o.Count {
		for _, l := range o.Libraries {
			for ti, t := range l.Targets {
				for _, pat := range patterns[l.Name][ti] {
					for _, fl := range o.roundFlavours(round) {
						fmt.Fprintf(log, "libbench: round %d of %d, %s %s %s %s (%s)\n", round+1, o.Count, l.Name, t.Package, t.Variant, pat, fl.Name)
						if err := runTarget(ctx, o, l, t, pat, fl, bins[binKey(t.Package, fl)], bw, header); err != nil {
							return err
						}
						header = false
					}
				}
			}
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// targetPatterns returns, by library name and target index, the
// -test.bench patterns each round runs: the target's own, or with
// o.Interleave one per benchmark it selects, listed by running the first
// flavour's binary once.
func targetPatterns(ctx context.Context, o Options, bins map[string]string) (map[string][][]string, error) {
	pats := map[string][][]string{}
	for _, l := range o.Libraries {
		for _, t := range l.Targets {
			p := []string{t.Bench}
			if o.Interleave {
				names, err := benchrun.Names(ctx, bins[binKey(t.Package, o.builds()[0])], o.WorkDir, t.Bench, t.Args)
				if err != nil {
					return nil, fmt.Errorf("libbench: %s %s: %w", l.Name, t.Package, err)
				}
				p = p[:0]
				for _, n := range o.keep(names) {
					p = append(p, benchrun.Pattern(n))
				}
			}
			pats[l.Name] = append(pats[l.Name], p)
		}
	}
	if o.Only != nil {
		n := 0
		for _, ps := range pats {
			for _, p := range ps {
				n += len(p)
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("libbench: no benchmark of the selected libraries matches %v", o.Only)
		}
	}
	return pats, nil
}

// runTarget runs the benchmarks of target t that pattern selects once, in
// flavour fl (test binary bin), and writes their result lines to w under
// the library, variant, toolchain and pkg keys, with the goos, goarch and
// cpu lines if header is set.
func runTarget(ctx context.Context, o Options, l Library, t Target, pattern string, fl toolchain.Flavour, bin string, w io.Writer, header bool) error {
	args := append([]string{"-test.run=^$", "-test.bench=" + pattern, "-test.benchtime=" + o.BenchTime, "-test.count=1", "-test.cpu=1"}, t.Args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = o.WorkDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("libbench: running the %s benchmarks of %s (%s): %w\n%s%s", fl.Name, t.Package, l.Name, err, out, stderr.Bytes())
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			if n == 0 {
				fmt.Fprintf(w, "library: %s\nvariant: %s\ntoolchain: %s\npkg: %s\n", l.Name, t.Variant, fl.Name, t.Package)
				if o.Layouts > 0 {
					fmt.Fprintf(w, "layout: %d\n", fl.Layout)
				}
			}
			fmt.Fprintln(w, line)
			n++
		case header && (strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "goarch:") || strings.HasPrefix(line, "cpu:")):
			fmt.Fprintln(w, line)
		}
	}
	if n == 0 {
		return fmt.Errorf("libbench: %s -test.bench=%q ran no benchmark (%s):\n%s", t.Package, pattern, fl.Name, out)
	}
	return nil
}

func binKey(pkg string, fl toolchain.Flavour) string {
	return fmt.Sprintf("%s %s %d", pkg, fl.Name, fl.Layout)
}

// buildTests builds the test binary of every target's package in every
// build of o.builds (go test -c in the work module), each once, two at a
// time, and returns their paths by binKey.
func buildTests(ctx context.Context, o Options, log io.Writer) (map[string]string, error) {
	type build struct {
		pkg string
		fl  toolchain.Flavour
		bin string
	}
	var todo []build
	bins := map[string]string{}
	for _, l := range o.Libraries {
		for _, t := range l.Targets {
			for _, fl := range o.builds() {
				key := binKey(t.Package, fl)
				if bins[key] != "" {
					continue
				}
				bins[key] = filepath.Join(o.BinDir, fmt.Sprintf("%d.%s.%d.test", len(bins), fl.Name, fl.Layout))
				todo = append(todo, build{t.Package, fl, bins[key]})
			}
		}
	}
	var mu sync.Mutex
	err := par.Dynamic(len(todo), 2, func(_, i int) error {
		b := todo[i]
		mu.Lock()
		fmt.Fprintf(log, "libbench: go test -c %s (%s, layout %d)\n", b.pkg, b.fl.Name, b.fl.Layout)
		mu.Unlock()
		args := append([]string{"test", "-c", "-vet=off", "-o", b.bin}, b.fl.BuildFlags()...)
		_, err := goCmd(ctx, o.Toolchain, &b.fl, o.WorkDir, append(args, b.pkg)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return bins, nil
}
