package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/libbench"
	"github.com/pctab/pctab/toolchain"
)

// libbenchCommand is "pctab-toolchain libbench": the real-library
// benchmark suite (package internal/libbench).
var libbenchCommand = &cli.Command{
	Name:  "libbench",
	Args:  "[-outputdir DIR] [-count N] [-benchtime T] [-layouts N] [-interleave=false] [-flavours LIST] [-libs LIST] [-bench RE] [-tests | -instructions | -summary FILE...]",
	Short: "benchmark real libraries that unwind on hot paths, stock against every flavour",
	Long: "Libbench fetches the pinned libraries (internal/libbench/versions.txt) through the\n" +
		"module proxy into a work module under the cache directory, builds their\n" +
		"benchmarks with the stock toolchain and in each runtime flavour, runs them\n" +
		"round-robin, one benchmark at a time, each in every flavour in turn\n" +
		"(-interleave=false: each flavour's whole test binary in turn), and prints\n" +
		"the summary: ratios to stock with 95% intervals, each library's geomean,\n" +
		"and the price of caller information. -layouts N builds every flavour in N\n" +
		"random function layouts (the linker's -randlayout, seeds 1 to N) and runs round\n" +
		"R in layout R mod N + 1, so that code placement falls on every flavour alike\n" +
		"(compare with: benchstat -col toolchain -ignore layout). -instructions counts\n" +
		"instructions per operation under cachegrind instead of timing; -tests runs the\n" +
		"libraries' own tests stock and in each flavour and compares their normalized\n" +
		"output; -summary summarizes earlier results files.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		var o libbenchFlags
		fs.StringVar(&o.outDir, "outputdir", "", "write the results (libbench.txt or instructions.txt, its -summary.txt, tests.txt) to `dir` (default: only the summary, to standard output)")
		fs.IntVar(&o.count, "count", 8, "`n` rounds, each running every benchmark in every flavour once")
		fs.StringVar(&o.benchtime, "benchtime", "100ms", "-test.benchtime of each benchmark")
		fs.IntVar(&o.layouts, "layouts", 0, "build every flavour in `n` random function layouts, round r in layout r mod n + 1 (0: the linker's order)")
		fs.BoolVar(&o.interleave, "interleave", true, "run the benchmarks one at a time, each in every flavour in turn (false: each flavour's whole binary in turn)")
		fs.StringVar(&o.flavours, "flavours", "", "comma-separated flavours to compare (default: all of toolchain.Flavours: "+flavourNames(toolchain.Flavours())+")")
		fs.StringVar(&o.libs, "libs", "", "comma-separated libraries (default: all: "+libraryNames(libbench.Suite())+")")
		fs.StringVar(&o.bench, "bench", "", "only the benchmarks whose full name (BenchmarkX/sub) matches `regexp` (default: all)")
		fs.BoolVar(&o.tests, "tests", false, "compare the libraries' own tests' output with stock Go's instead of benchmarking")
		fs.BoolVar(&o.instructions, "instructions", false, "count instructions per operation under cachegrind (one round) instead of timing")
		fs.BoolVar(&o.summary, "summary", false, "summarize the results files named as arguments (libbench.txt, instructions.txt) and exit")
		return func(env *cli.Env, args []string) error {
			if o.summary && len(args) == 0 {
				return cli.Usagef("-summary needs results files")
			}
			if !o.summary && len(args) > 0 {
				return cli.Usagef("unexpected arguments %q", args)
			}
			if o.count < 1 {
				return cli.Usagef("-count=%d: must be at least 1", o.count)
			}
			if o.layouts < 0 || o.layouts > o.count {
				return cli.Usagef("-layouts=%d: must be between 0 and -count (%d)", o.layouts, o.count)
			}
			if o.bench != "" && (o.tests || o.summary || !o.interleave && !o.instructions) {
				return cli.Usagef("-bench applies to interleaved timed runs and -instructions")
			}
			if o.bench != "" {
				var err error
				if o.only, err = regexp.Compile(o.bench); err != nil {
					return cli.Usagef("-bench: %v", err)
				}
			}
			if err := checkBenchtime(o.benchtime); err != nil {
				return err
			}
			if o.layouts > 0 && (o.tests || o.instructions || o.summary) {
				return cli.Usagef("-layouts applies to timed runs, not to -tests, -instructions or -summary")
			}
			return runLibbench(env.Ctx, func() (*toolchain.Toolchain, error) { return getToolchain(env) }, o, args, env.Stdout, env.Stderr)
		}
	},
}

// libbenchFlags are libbench's flags.
type libbenchFlags struct {
	outDir, benchtime, flavours, libs string
	bench                             string
	only                              *regexp.Regexp // bench, compiled
	count, layouts                    int
	tests, instructions, summary      bool
	interleave                        bool
}

// runLibbench runs libbench with its flags parsed; args are -summary's
// files.
func runLibbench(ctx context.Context, get func() (*toolchain.Toolchain, error), fl libbenchFlags, args []string, stdout, stderr io.Writer) error {
	suite := libbench.Suite()
	if fl.summary {
		return summarizeFiles(args, stdout, suite)
	}
	selected, err := libbench.Select(suite, split(fl.libs))
	if err != nil {
		return cli.Usagef("-libs: %w", err)
	}
	fls, err := selectFlavours(split(fl.flavours))
	if err != nil {
		return cli.Usagef("-flavours: %w", err)
	}
	tc, err := get()
	if err != nil {
		return err
	}
	work, err := libbench.DefaultWorkDir()
	if err != nil {
		return err
	}
	if err := libbench.Prepare(ctx, tc, work, selected, stderr); err != nil {
		return err
	}
	if fl.outDir != "" {
		if err := os.MkdirAll(fl.outDir, 0o755); err != nil {
			return err
		}
	}
	o := libbench.Options{Only: fl.only, Toolchain: tc, Flavours: fls, Libraries: selected, WorkDir: work, Count: fl.count, BenchTime: fl.benchtime, Interleave: fl.interleave, Layouts: fl.layouts}
	if fl.tests {
		return compareTests(ctx, o, fl.outDir, stdout, stderr)
	}
	return runMeasured(ctx, o, fl, stdout, stderr, suite)
}

// summarizeFiles summarizes the results in the files at paths, read as
// one stream.
func summarizeFiles(paths []string, stdout io.Writer, suite []libbench.Library) error {
	var rs []io.Reader
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	return libbench.Summarize(io.MultiReader(rs...), stdout, suite)
}

// compareTests runs the libraries' own tests stock and patched, printing
// the comparison to stdout and, with an outDir, to its tests.txt.
func compareTests(ctx context.Context, o libbench.Options, outDir string, stdout, stderr io.Writer) error {
	w := stdout
	if outDir != "" {
		f, err := os.Create(filepath.Join(outDir, "tests.txt"))
		if err != nil {
			return err
		}
		defer f.Close()
		w = io.MultiWriter(stdout, f)
	}
	return libbench.Compare(ctx, o, w, stderr)
}

// runMeasured times the benchmarks (or counts their instructions, with
// -instructions) into libbench.txt (instructions.txt), in the output
// directory or a temporary one, and prints their summary, which the
// output directory also keeps.
func runMeasured(ctx context.Context, o libbench.Options, fl libbenchFlags, stdout, stderr io.Writer, suite []libbench.Library) error {
	bins, err := os.MkdirTemp("", "pctab-libbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	o.BinDir = bins
	name, run := "libbench.txt", libbench.Run
	if fl.instructions {
		name, run = "instructions.txt", libbench.Instructions
	}
	resPath := filepath.Join(bins, name)
	if fl.outDir != "" {
		resPath = filepath.Join(fl.outDir, name)
	}
	f, err := os.Create(resPath)
	if err != nil {
		return err
	}
	err = run(ctx, o, f, stderr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	f, err = os.Open(resPath)
	if err != nil {
		return err
	}
	defer f.Close()
	w := stdout
	if fl.outDir != "" {
		sf, err := os.Create(filepath.Join(fl.outDir, strings.TrimSuffix(name, ".txt")+"-summary.txt"))
		if err != nil {
			return err
		}
		defer sf.Close()
		w = io.MultiWriter(stdout, sf)
		ignore := ""
		if fl.layouts > 0 {
			ignore = "-ignore layout "
		}
		fmt.Fprintf(stderr, "pctab-toolchain: results in %s; compare with: benchstat -col toolchain %s%s\n", resPath, ignore, resPath)
	}
	return libbench.Summarize(f, w, suite)
}

// selectFlavours returns the flavours of toolchain.Flavours named in
// names (all if none), in its order; the stock one is always included.
func selectFlavours(names []string) ([]toolchain.Flavour, error) {
	all := toolchain.Flavours()
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []toolchain.Flavour
	for _, fl := range all {
		if want[fl.Name] || fl.Baseline() {
			out = append(out, fl)
		}
		delete(want, fl.Name)
	}
	for n := range want {
		return nil, fmt.Errorf("libbench: no flavour %q (have %s)", n, flavourNames(all))
	}
	return out, nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func flavourNames(fls []toolchain.Flavour) string {
	var names []string
	for _, fl := range fls {
		names = append(names, fl.Name)
	}
	return strings.Join(names, ",")
}

func libraryNames(libs []libbench.Library) string {
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	return strings.Join(names, ",")
}
