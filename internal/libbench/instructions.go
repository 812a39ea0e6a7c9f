package libbench

import (
	"github.com/pctab/pctab/internal/cachegrind"

	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/pctab/pctab/toolchain"
)

// SymtabUnit is the unit of the instructions per operation that
// Instructions counts in the runtime's unwinder and symbol tables
// (toolchain.IsSymtabFile): the part of a benchmark the table format and
// the pcvalue cache change.
const SymtabUnit = "symtab-instructions/op"

// Instruction counts: each benchmark runs alone under cachegrind with
// -test.benchtime=InstrLowx and with InstrLow+n iterations; the difference
// of the process's instruction counts over n iterations is the benchmark's
// instructions per operation, free of the start-up and of the b.N=1 run
// that both runs share. The runtime's background work (sysmon, timers)
// adds instructions that grow with the run's wall time, which valgrind and
// the machine's load make long: n is chosen so that the n iterations take
// about InstrWork instructions (at least InstrMinN), measured on a stock
// calibration run of InstrLow+InstrMinN iterations, and the longer run is
// made twice and its smaller count kept (background work only adds).
// The counts still differ between runs of one binary: stock's runtime fills
// its type-assertion caches on a random one in 1,024 slow calls and
// replaces pcvalue cache entries at random, from a seed each process
// draws, which moves a benchmark of about 1,000 instructions by a few
// percent. Counting toolchain.LayoutControl beside stock measures that
// spread.
const (
	// InstrLow is the iterations of the shorter run.
	InstrLow = 200
	// InstrMinN is the fewest iterations the longer run adds.
	InstrMinN = 1000
	// InstrWork is about how many instructions the added iterations take.
	InstrWork = 50e6
)

// Instructions builds the targets' tests in every flavour, as Run does,
// and counts each benchmark's instructions per operation under cachegrind
// (valgrind --tool=cachegrind --cache-sim=no, GOGC=off so that the
// collector's timing does not move the counts, GOMAXPROCS=1). The counts
// do not depend on the machine's load: one round is enough. It finds the
// benchmarks by running the stock binary with -test.benchtime=1x, and
// writes the counts to w in the Go benchmark format ("instructions/op", and
// the part of them in the runtime's unwinder and symbol tables as
// SymtabUnit),
// under the same configuration keys as Run.
func Instructions(ctx context.Context, o Options, w, log io.Writer) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return fmt.Errorf("libbench: instruction counts need valgrind: %w", err)
	}
	bins, err := buildTests(ctx, o, log)
	if err != nil {
		return err
	}
	var stock *int
	for i := range o.Flavours {
		if o.Flavours[i].Baseline() {
			stock = &i
			break
		}
	}
	if stock == nil {
		return fmt.Errorf("libbench: no stock flavour")
	}
	bw := bufio.NewWriter(w)
	for _, l := range o.Libraries {
		for _, t := range l.Targets {
			bench := t.Bench
			if t.InstrBench != "" {
				bench = t.InstrBench
			}
			args := append([]string{"-test.run=^$", "-test.bench=" + bench, "-test.benchtime=1x", "-test.count=1", "-test.cpu=1"}, t.Args...)
			cmd := exec.CommandContext(ctx, bins[binKey(t.Package, o.Flavours[*stock])], args...)
			cmd.Dir = o.WorkDir
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("libbench: listing the benchmarks of %s: %w\n%s", t.Package, err, out)
			}
			var names []string
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "Benchmark") {
					names = append(names, f[0])
				}
			}
			for _, name := range o.keep(names) {
				run := func(fl toolchain.Flavour, iters int) (count, error) {
					fmt.Fprintf(log, "libbench: cachegrind %s %s -test.benchtime=%dx (%s)\n", name, t.Variant, iters, fl.Name)
					return countInstructions(ctx, o, bins[binKey(t.Package, fl)], name, iters, t.Args)
				}
				stockLow, err := run(o.Flavours[*stock], InstrLow)
				if err != nil {
					return err
				}
				cal, err := run(o.Flavours[*stock], InstrLow+InstrMinN)
				if err != nil {
					return err
				}
				n := InstrMinN
				if cal.all > stockLow.all {
					n = max(InstrMinN, int(InstrWork/(float64(cal.all-stockLow.all)/InstrMinN)))
				}
				for i, fl := range o.Flavours {
					low := stockLow
					if i != *stock {
						if low, err = run(fl, InstrLow); err != nil {
							return err
						}
					}
					var high count
					for range 2 {
						c, err := run(fl, InstrLow+n)
						if err != nil {
							return err
						}
						if high.all == 0 || c.all < high.all {
							high = c
						}
					}
					if high.all < low.all {
						return fmt.Errorf("libbench: %s (%s): %d iterations took fewer instructions (%d) than %d (%d)", name, fl.Name, InstrLow+n, high.all, InstrLow, low.all)
					}
					fmt.Fprintf(bw, "library: %s\nvariant: %s\ntoolchain: %s\npkg: %s\n", l.Name, t.Variant, fl.Name, t.Package)
					fmt.Fprintf(bw, "%s\t%d\t%.1f instructions/op\t%.1f %s\n", name, n, float64(high.all-low.all)/float64(n), float64(high.symtab-low.symtab)/float64(n), SymtabUnit)
				}
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}

// count is one cachegrind run's instructions, in all and in the runtime's
// unwinder and symbol tables (toolchain.IsSymtabFile).
type count struct{ all, symtab int64 }

// countInstructions runs benchmark name (a full name, e.g.
// "BenchmarkAttrs/Text_discard/5_args") of test binary bin, n iterations,
// under cachegrind and returns the process's instruction counts.
func countInstructions(ctx context.Context, o Options, bin, name string, n int, extra []string) (count, error) {
	out, p, err := cachegrind.Run(ctx, cachegrind.Cmd{
		Path: bin,
		Args: append([]string{"-test.run=^$", "-test.bench=" + toolchain.BenchRegexp(name), fmt.Sprintf("-test.benchtime=%dx", n), "-test.count=1", "-test.cpu=1"}, extra...),
		Dir:  o.WorkDir,
		Env:  append(os.Environ(), "GOGC=off", "GOMAXPROCS=1"),
	})
	if err != nil {
		return count{}, fmt.Errorf("libbench: %s: %w", name, err)
	}
	var ran []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "Benchmark") {
			ran = append(ran, f[0])
		}
	}
	if len(ran) != 1 || ran[0] != name {
		return count{}, fmt.Errorf("libbench: cachegrind %s ran %q", name, ran)
	}
	return count{p.Total, p.Sum(toolchain.IsSymtabFile)}, nil
}
