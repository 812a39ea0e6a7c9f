package libbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/pctab/pctab/toolchain"
)

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
const (
	InstrLow  = 200
	InstrMinN = 1000
	InstrWork = 50e6
)

// Instructions builds the targets' tests in every flavour, as Run does,
// and counts each benchmark's instructions per operation under cachegrind
// (valgrind --tool=cachegrind --cache-sim=no, GOGC=off so that the
// collector's timing does not move the counts, GOMAXPROCS=1). The counts
// do not depend on the machine's load: one round is enough. It finds the
// benchmarks by running the stock binary with -test.benchtime=1x, and
// writes the counts to w in the Go benchmark format ("instructions/op"),
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
		if o.Flavours[i].Stock {
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
			for _, name := range names {
				count := func(fl toolchain.Flavour, iters int) (uint64, error) {
					fmt.Fprintf(log, "libbench: cachegrind %s %s -test.benchtime=%dx (%s)\n", name, t.Variant, iters, fl.Name)
					return countInstructions(ctx, o, bins[binKey(t.Package, fl)], name, iters, t.Args)
				}
				stockLow, err := count(o.Flavours[*stock], InstrLow)
				if err != nil {
					return err
				}
				cal, err := count(o.Flavours[*stock], InstrLow+InstrMinN)
				if err != nil {
					return err
				}
				n := InstrMinN
				if cal > stockLow {
					n = max(InstrMinN, int(InstrWork/(float64(cal-stockLow)/InstrMinN)))
				}
				for i, fl := range o.Flavours {
					low := stockLow
					if i != *stock {
						if low, err = count(fl, InstrLow); err != nil {
							return err
						}
					}
					var high uint64
					for range 2 {
						c, err := count(fl, InstrLow+n)
						if err != nil {
							return err
						}
						if high == 0 || c < high {
							high = c
						}
					}
					if high < low {
						return fmt.Errorf("libbench: %s (%s): %d iterations took fewer instructions (%d) than %d (%d)", name, fl.Name, InstrLow+n, high, InstrLow, low)
					}
					fmt.Fprintf(bw, "library: %s\nvariant: %s\ntoolchain: %s\npkg: %s\n", l.Name, t.Variant, fl.Name, t.Package)
					fmt.Fprintf(bw, "%s\t%d\t%.1f instructions/op\n", name, n, float64(high-low)/float64(n))
				}
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}

var irefsRE = regexp.MustCompile(`I\s+refs:\s+([0-9,]+)`)

// countInstructions runs benchmark name (a full name, e.g.
// "BenchmarkAttrs/Text_discard/5_args") of test binary bin, n iterations,
// under cachegrind and returns the process's instruction count.
func countInstructions(ctx context.Context, o Options, bin, name string, n int, extra []string) (uint64, error) {
	args := []string{"--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", bin,
		"-test.run=^$", "-test.bench=" + BenchRegexp(name), fmt.Sprintf("-test.benchtime=%dx", n), "-test.count=1", "-test.cpu=1"}
	cmd := exec.CommandContext(ctx, "valgrind", append(args, extra...)...)
	cmd.Dir = o.WorkDir
	cmd.Env = append(os.Environ(), "GOGC=off", "GOMAXPROCS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("libbench: cachegrind %s: %w\n%s%s", name, err, out, stderr.Bytes())
	}
	var ran []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "Benchmark") {
			ran = append(ran, f[0])
		}
	}
	if len(ran) != 1 || ran[0] != name {
		return 0, fmt.Errorf("libbench: cachegrind %s ran %q", name, ran)
	}
	m := irefsRE.FindSubmatch(stderr.Bytes())
	if m == nil {
		return 0, fmt.Errorf("libbench: cachegrind %s printed no instruction count:\n%s", name, stderr.Bytes())
	}
	return strconv.ParseUint(strings.ReplaceAll(string(m[1]), ",", ""), 10, 64)
}

// BenchRegexp returns the -test.bench expression that selects exactly the
// benchmark of full name name: each slash-separated element anchored and
// quoted, as the testing package splits both the name and the expression
// at slashes.
func BenchRegexp(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
