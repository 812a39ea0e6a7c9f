package libbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

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
}

// Run builds the tests of every target's package in every flavour (go test
// -c in the work module) and runs their benchmarks round-robin, o.Count
// rounds: in each round, each target runs in every flavour in turn, the
// flavours' order rotated by one each round. Every benchmark runs with
// -test.cpu=1, so that the parallel ones (zap's, slog's) measure one
// goroutine's work rather than the contention of a shared machine. The
// results go to w in the Go benchmark format, each run's block under the
// configuration keys library, variant (the target's) and toolchain (the
// flavour's name), so that `benchstat -col toolchain` compares them and
// [Summarize] reads them. Progress goes to log.
func Run(ctx context.Context, o Options, w, log io.Writer) error {
	if o.Count < 1 {
		o.Count = 1
	}
	bins, err := buildTests(ctx, o, log)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	header := true
	for round := range o.Count {
		for _, l := range o.Libraries {
			for _, t := range l.Targets {
				for i := range o.Flavours {
					fl := o.Flavours[(i+round)%len(o.Flavours)]
					fmt.Fprintf(log, "libbench: round %d of %d, %s %s %s (%s)\n", round+1, o.Count, l.Name, t.Package, t.Variant, fl.Name)
					args := append([]string{"-test.run=^$", "-test.bench=" + t.Bench, "-test.benchtime=" + o.BenchTime, "-test.count=1", "-test.cpu=1"}, t.Args...)
					cmd := exec.CommandContext(ctx, bins[binKey(t.Package, fl)], args...)
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
								fmt.Fprintf(bw, "library: %s\nvariant: %s\ntoolchain: %s\npkg: %s\n", l.Name, t.Variant, fl.Name, t.Package)
							}
							fmt.Fprintln(bw, line)
							n++
						case header && (strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "goarch:") || strings.HasPrefix(line, "cpu:")):
							fmt.Fprintln(bw, line)
						}
					}
					if n == 0 {
						return fmt.Errorf("libbench: %s -test.bench=%q ran no benchmark (%s):\n%s", t.Package, t.Bench, fl.Name, out)
					}
					header = false
				}
			}
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

func binKey(pkg string, fl toolchain.Flavour) string { return pkg + " " + fl.Name }

// buildTests builds the test binary of every target's package in every
// flavour (go test -c in the work module), each once, and returns their
// paths by binKey.
func buildTests(ctx context.Context, o Options, log io.Writer) (map[string]string, error) {
	bins := map[string]string{}
	for _, l := range o.Libraries {
		for _, t := range l.Targets {
			for _, fl := range o.Flavours {
				key := binKey(t.Package, fl)
				if bins[key] != "" {
					continue
				}
				bin := filepath.Join(o.BinDir, fmt.Sprintf("%d.%s.test", len(bins), fl.Name))
				fmt.Fprintf(log, "libbench: go test -c %s (%s)\n", t.Package, fl.Name)
				args := append([]string{"test", "-c", "-o", bin}, tagArgs(fl)...)
				if _, err := goCmd(ctx, o.Toolchain, &fl, o.WorkDir, append(args, t.Package)...); err != nil {
					return nil, err
				}
				bins[key] = bin
			}
		}
	}
	return bins, nil
}
