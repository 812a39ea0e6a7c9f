// Command pctab-toolchain builds and uses the Go toolchain whose linker
// writes, and whose runtime reads, linear-index PC-value tables (package
// toolchain).
//
// Usage:
//
//	pctab-toolchain [-go RELEASE] SUBCOMMAND ...
//
// -go go1.27.3 builds and uses that release (GOTOOLCHAIN downloads it) with
// its own patch (toolchain.PatchFor) instead of the local Go.
//
//	pctab-toolchain build                 build the toolchain (cached) and print where it is
//	pctab-toolchain go [-twin] ARGS...    run its go command (or the twin's: stock linker)
//	pctab-toolchain check PATCHED TWIN    check a patched binary against its twin
//	pctab-toolchain sizes [-ldflags F] [PKG...]  build packages stock and in every table format, check and compare sizes
//	pctab-toolchain bench [flags] [PKG]   benchmark a package's tests built stock and in every runtime flavour (toolchain.Flavours)
//	pctab-toolchain summary FILE...       summarize bench's results against stock (benchstat's statistics)
//	pctab-toolchain instr [flags] [PKG]   count each flavour's instructions per benchmark operation (cachegrind)
//	pctab-toolchain compare [flags]       all of it: build what is missing, sizes, the runtime's and stackbench's benchmarks, summaries
//
// The patched go command builds the default flavour with no tags:
// compact-fast tables with lengths derived from the functab, read through a
// direct-mapped per-M pcvalue cache. -tags pctab_spec selects the spec
// variant, pctab_funcfield a length field in _func, pctab_stockcache the
// stock pcvalue cache and pctab_nocache none (pctab_compactfast is
// accepted and changes nothing).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/toolchain"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		// The go subcommand's own failure: its exit code, its messages
		// already printed. Any other error says what failed.
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "pctab-toolchain:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: pctab-toolchain [-go RELEASE] SUBCOMMAND ...\n"+
		"       pctab-toolchain build\n"+
		"       pctab-toolchain go [-twin] ARGS...\n"+
		"       pctab-toolchain check PATCHED TWIN\n"+
		"       pctab-toolchain sizes [-ldflags FLAGS] [PKG...]\n"+
		"       pctab-toolchain bench [-dir DIR] [-bench RE] [-benchtime T] [-count N] [-o FILE] [PKG]\n"+
		"       pctab-toolchain summary FILE...\n"+
		"       pctab-toolchain instr [-dir DIR] [-bench RE] [-target D] [-p N] [-o FILE] [PKG]\n"+
		"       pctab-toolchain compare [-count N] [-benchtime T] [-o DIR]\n")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	top := flag.NewFlagSet("pctab-toolchain", flag.ContinueOnError)
	top.SetOutput(stderr)
	release := top.String("go", "", "Go `release` to patch, e.g. go1.27.3 (default: the local go command's)")
	if err := top.Parse(args); err != nil {
		return err
	}
	args = top.Args()
	if len(args) == 0 {
		usage(stderr)
		return errors.New("no subcommand")
	}
	cache, err := toolchain.DefaultCacheDir()
	if err != nil {
		return err
	}
	get := func() (*toolchain.Toolchain, error) {
		start := time.Now()
		tc, err := toolchain.BuildRelease(ctx, cache, *release, stderr)
		if err != nil {
			return nil, err
		}
		if !tc.Cached {
			fmt.Fprintf(stderr, "pctab-toolchain: built %s in %.1fs\n", tc.Dir, time.Since(start).Seconds())
		}
		return tc, nil
	}
	switch args[0] {
	case "build":
		tc, err := get()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "GOROOT=%s\nTWIN=%s\nversion %s, patch key %s\n", tc.GOROOT, tc.TwinGOROOT, tc.Version, tc.Key)
		return nil
	case "go":
		fs := flag.NewFlagSet("go", flag.ContinueOnError)
		twin := fs.Bool("twin", false, "use the twin GOROOT (patched sources, stock linker)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		tc, err := get()
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, tc.GoCommand(*twin), fs.Args()...)
		cmd.Env = tc.Env(*twin)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
		return cmd.Run()
	case "check":
		if len(args) != 3 {
			usage(stderr)
			return errors.New("check needs PATCHED and TWIN")
		}
		lin, err := objscan.Open(args[1])
		if err != nil {
			return err
		}
		defer lin.Close()
		twin, err := objscan.Open(args[2])
		if err != nil {
			return err
		}
		defer twin.Close()
		res, err := toolchain.Check(lin, twin)
		if err != nil {
			return err
		}
		status := "ok"
		if !res.OK() {
			status = "FAIL"
		}
		fmt.Fprintf(stdout, "%s: %s against %s: %d functions, %d distinct tables, %d PCs, %d mismatches\n",
			args[1], status, filepath.Base(args[2]), len(lin.Funcs), res.Tables, res.PCs, res.Mismatches)
		for _, e := range res.Examples {
			fmt.Fprintf(stdout, "\t%s\n", e)
		}
		if !res.OK() {
			return errors.New("check failed")
		}
		return nil
	case "sizes":
		return runSizes(ctx, get, args[1:], stdout)
	case "bench":
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		dir := fs.String("dir", "", "module directory of the package (default: a standard-library package)")
		bench := fs.String("bench", "^BenchmarkCallers$", "benchmarks to run (-test.bench)")
		benchtime := fs.String("benchtime", "200ms", "-test.benchtime")
		count := fs.Int("count", 6, "rounds, each running every flavour once")
		outPath := fs.String("o", "", "write the results to `file` (default: standard output)")
		flavours := fs.String("flavours", "", "comma-separated `names` of the flavours to run besides stock (default: all)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		pkg := "runtime"
		if fs.NArg() > 1 {
			return errors.New("bench takes at most one package")
		} else if fs.NArg() == 1 {
			pkg = fs.Arg(0)
		}
		tc, err := get()
		if err != nil {
			return err
		}
		work, err := os.MkdirTemp("", "pctab-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		w := stdout
		if *outPath != "" {
			f, err := os.Create(*outPath)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		}
		o := toolchain.BenchOptions{Dir: *dir, Package: pkg, Bench: *bench, BenchTime: *benchtime, Count: *count, Work: work}
		if *flavours != "" {
			o.Flavours = strings.Split(*flavours, ",")
		}
		if err := tc.Bench(ctx, o, w, stderr); err != nil {
			return err
		}
		if *outPath != "" {
			fmt.Fprintf(stderr, "pctab-toolchain: compare with: benchstat -col toolchain %s\n", *outPath)
		}
		return nil
	case "summary":
		if len(args) < 2 {
			return errors.New("summary needs result files")
		}
		for _, p := range args[1:] {
			if err := summarizeFile(p, stdout); err != nil {
				return err
			}
		}
		return nil
	case "compare":
		return runCompare(ctx, get, args[1:], stdout, stderr)
	case "instr":
		return runInstr(ctx, get, args[1:], stdout, stderr)
	}
	usage(stderr)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// summarizeFile prints toolchain.Summarize of the results in file path.
func summarizeFile(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return toolchain.Summarize(f, w)
}
