package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/toolchain"
)

// compareCommand is "pctab-toolchain compare".
var compareCommand = &cli.Command{
	Name:  "compare",
	Args:  "[-count N] [-benchtime T] [-outputdir DIR]",
	Short: "all of it: sizes, the runtime's and stackbench's benchmarks, summaries",
	Long: "Compare builds what is missing and prints the whole comparison of the patched\n" +
		"toolchain with the stock one: the sizes of gofmt and go (without DWARF, as the\n" +
		"Go distribution ships them) in every table format, then the runtime's\n" +
		"traceback and stack-copy benchmarks and stackbench's in every runtime flavour,\n" +
		"summarized against stock. Run it from the repository's root.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		count := fs.Int("count", 6, "`n` rounds, each running every flavour once")
		benchtime := fs.String("benchtime", "200ms", "run each benchmark for `t` (-test.benchtime)")
		outDir := fs.String("outputdir", "", "keep the benchmark results (benchfmt) in `dir` (default: a temporary directory)")
		return func(env *cli.Env, args []string) error {
			if len(args) != 0 {
				return cli.Usagef("no arguments wanted")
			}
			if *count < 1 {
				return cli.Usagef("-count=%d: must be at least 1", *count)
			}
			if err := checkBenchtime(*benchtime); err != nil {
				return err
			}
			return runCompare(env, *count, *benchtime, *outDir)
		}
	},
}

// runCompare builds what is missing and prints the whole comparison of the
// patched toolchain with the stock one: the sizes of gofmt and go (without
// DWARF, as the Go distribution ships them) in every table format, then the
// runtime's traceback and stack-copy benchmarks and stackbench's in every
// runtime flavour, summarized against stock. The raw results stay in outDir.
func runCompare(env *cli.Env, count int, benchtime, outDir string) error {
	ctx, stdout, stderr := env.Ctx, env.Stdout, env.Stderr
	tc, err := getToolchain(env)
	if err != nil {
		return err
	}
	dir := outDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pctab-compare-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "pctab-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Fprintf(stdout, "# sizes (go build -trimpath -ldflags=-w)\n")
	if err := runSizes(ctx, tc, "-w", toolchain.Formats(), []string{"cmd/gofmt", "cmd/go"}, stdout); err != nil {
		return err
	}
	stackbench, err := stackbenchDir(tc)
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		o    toolchain.BenchOptions
	}{
		{"runtime.txt", toolchain.BenchOptions{Package: "runtime", Bench: "^Benchmark(Callers|StackCopy)$"}},
		{"stackbench.txt", toolchain.BenchOptions{Dir: stackbench, Package: ".", Bench: "."}},
	} {
		o := b.o
		o.BenchTime, o.Count, o.Work = benchtime, count, work
		path := filepath.Join(dir, b.name)
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = tc.Bench(ctx, o, f, stderr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n# %s benchmarks (%s)\n", o.Package, path)
		if o.Dir != "" {
			fmt.Fprintf(stdout, "# in %s\n", o.Dir)
		}
		if err := summarizeFile(path, stdout); err != nil {
			return err
		}
	}
	return nil
}

// stackbenchDir returns the directory of toolchain/testdata/stackbench:
// this repository's, when run from its root or the toolchain package.
func stackbenchDir(tc *toolchain.Toolchain) (string, error) {
	for _, d := range []string{"toolchain/testdata/stackbench", "testdata/stackbench", "../../toolchain/testdata/stackbench"} {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Abs(d)
		}
	}
	return "", fmt.Errorf("compare: run it from the pctab repository's root (toolchain/testdata/stackbench not found)")
}
