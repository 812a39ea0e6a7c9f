package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/toolchain"
)

// pkgBenchFlags are the flags bench and instr share: which package's
// benchmarks, and in which flavours.
type pkgBenchFlags struct {
	dir, bench, flavours *string
}

func addPkgBenchFlags(fs *flag.FlagSet) pkgBenchFlags {
	return pkgBenchFlags{
		dir:      fs.String("dir", "", "module `directory` of the package (default: a standard-library package)"),
		bench:    fs.String("bench", "^BenchmarkCallers$", "benchmarks to run (-test.bench `regexp`)"),
		flavours: fs.String("flavours", "", "comma-separated `names` of the flavours besides stock (default: all)"),
	}
}

// A pkgBench is what bench and instr need to start: the toolchain, the
// package, its benchmarks and flavours, and a work directory that done
// removes.
type pkgBench struct {
	tc              *toolchain.Toolchain
	dir, pkg, bench string
	flavours        []string
	work            string
}

// setup checks the package argument, builds or finds the toolchain and
// makes the work directory.
func (f pkgBenchFlags) setup(env *cli.Env, args []string) (*pkgBench, error) {
	pb := &pkgBench{dir: *f.dir, pkg: "runtime", bench: *f.bench}
	if len(args) > 1 {
		return nil, cli.Usagef("at most one package")
	} else if len(args) == 1 {
		pb.pkg = args[0]
	}
	if *f.flavours != "" {
		pb.flavours = strings.Split(*f.flavours, ",")
		if err := checkFlavours(pb.flavours); err != nil {
			return nil, err
		}
	}
	var err error
	if pb.tc, err = getToolchain(env); err != nil {
		return nil, err
	}
	if pb.work, err = os.MkdirTemp("", "pctab-bench-"); err != nil {
		return nil, err
	}
	return pb, nil
}

func (pb *pkgBench) done() { os.RemoveAll(pb.work) }

// checkFlavours returns a usage error if a name of -flavours is not one of
// toolchain.Flavours, before anything is built.
func checkFlavours(names []string) error {
	for _, n := range names {
		if _, ok := flavourByName(n); !ok {
			return cli.Usagef("-flavours: unknown flavour %q (want some of %s)", n, flavourNames(toolchain.Flavours()))
		}
	}
	return nil
}

// checkBenchtime returns a usage error if t is not a -test.benchtime (a
// positive duration, or Nx), before anything is built.
func checkBenchtime(t string) error {
	if _, err := lookupbench.ParseBenchTime(t); err != nil {
		return cli.Usagef("-benchtime: %w (want a duration such as 200ms, or Nx)", err)
	}
	return nil
}

// benchCommand is "pctab-toolchain bench".
var benchCommand = &cli.Command{
	Name:  "bench",
	Args:  "[-dir DIR] [-bench RE] [-benchtime T] [-count N] [-layouts N] [-interleave=false] [-flavours LIST] [-o FILE] [PKG]",
	Short: "benchmark a package built stock and in every runtime flavour",
	Long: "Bench runs the benchmarks of package PKG (default: runtime) built with the\n" +
		"stock toolchain and in every runtime flavour of the patched one\n" +
		"(toolchain.Flavours), round-robin, the flavours' order rotated each round, and\n" +
		"writes the results in the Go benchmark format with a toolchain key, for\n" +
		"benchstat -col toolchain and pctab-toolchain summary. By default it runs the\n" +
		"benchmarks one at a time, each in every flavour in turn, so that the runs a\n" +
		"round pairs are adjacent in time; -interleave=false runs each flavour's\n" +
		"whole test binary in turn. -layouts N builds every flavour in N random\n" +
		"function layouts (the linker's -randlayout, seeds 1 to N) and runs round R in\n" +
		"layout R mod N + 1, so that code placement falls on every flavour alike.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		pf := addPkgBenchFlags(fs)
		benchtime := fs.String("benchtime", "200ms", "run each benchmark for `t` (-test.benchtime)")
		count := fs.Int("count", 6, "`n` rounds, each running every flavour once")
		outPath := fs.String("o", "", "write the results to `file` (default: standard output)")
		layouts := fs.Int("layouts", 0, "build every flavour in `n` random function layouts, round r in layout r mod n + 1 (0: the linker's order)")
		interleave := fs.Bool("interleave", true, "run the benchmarks one at a time, each in every flavour in turn (false: each flavour's whole binary in turn)")
		return func(env *cli.Env, args []string) error {
			if *count < 1 {
				return cli.Usagef("-count=%d: must be at least 1", *count)
			}
			if *layouts < 0 || *layouts > *count {
				return cli.Usagef("-layouts=%d: must be between 0 and -count (%d)", *layouts, *count)
			}
			if err := checkBenchtime(*benchtime); err != nil {
				return err
			}
			pb, err := pf.setup(env, args)
			if err != nil {
				return err
			}
			defer pb.done()
			w := env.Stdout
			if *outPath != "" {
				f, err := os.Create(*outPath)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			o := toolchain.BenchOptions{Dir: pb.dir, Package: pb.pkg, Bench: pb.bench, BenchTime: *benchtime, Count: *count, Work: pb.work, Flavours: pb.flavours, Interleave: *interleave, Layouts: *layouts}
			if err := pb.tc.Bench(env.Ctx, o, w, env.Stderr); err != nil {
				return err
			}
			if *outPath != "" {
				fmt.Fprintf(env.Stderr, "pctab-toolchain: compare with: pctab-toolchain summary %s (or benchstat -col toolchain -ignore layout)\n", *outPath)
			}
			return nil
		}
	},
}
