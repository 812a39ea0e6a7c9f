// Command pctab-toolchain builds and uses the Go toolchain whose linker
// writes, and whose runtime reads, linear-index PC-value tables (package
// toolchain).
//
// Usage:
//
//	pctab-toolchain [-go RELEASE] SUBCOMMAND ...
//
// -go go1.27.3 builds and uses that release (GOTOOLCHAIN downloads it) with
// its own patch series (toolchain.SeriesFor) instead of the local Go.
//
//	pctab-toolchain build                 build the toolchain (cached) and print where it is
//	pctab-toolchain go ARGS...            run its go command
//	pctab-toolchain twin ARGS...          run the twin's go command (patched sources, stock linker)
//	pctab-toolchain sizes [-ldflags F] [PKG...]  build packages stock and in every table format, check and compare sizes
//	pctab-toolchain bench [flags] [PKG]   benchmark a package's tests built stock and in every runtime flavour (toolchain.Flavours)
//	pctab-toolchain summary FILE...       summarize bench's results against stock (benchstat's statistics)
//	pctab-toolchain instr [flags] [PKG]   count each flavour's instructions per benchmark operation (cachegrind)
//	pctab-toolchain libbench [flags]      benchmark real libraries that unwind on hot paths, stock against every flavour
//	pctab-toolchain compare [flags]       all of it: build what is missing, sizes, the runtime's and stackbench's benchmarks, summaries
//	pctab-toolchain testsuite [flags] -o DIR [PKGS]  go test -short std cmd stock and in runtime flavours; the packages whose outcome differs
//	pctab-toolchain population [flags] [NAME...]     real programs built stock, patched and twin: checks and file sizes
//	pctab-toolchain readers [flags]       outside readers of the pclntab, released and patched, on patched binaries
//
// A patched binary is checked against its twin by pctab-stats verify -twin
// TWIN PATCHED. Run "pctab-toolchain help COMMAND" for a command's flags.
//
// The patched go command builds the default flavour with no tags:
// cf-palette-short tables with lengths derived from the functab, read
// through a direct-mapped per-M pcvalue cache and per-PC unwind caches.
// -tags pctab_compactfast selects compact-fast tables, pctab_spec the spec
// variant (it wins over pctab_compactfast), pctab_funcfield a length field
// in _func, pctab_stockcache the stock pcvalue cache and pctab_nocache
// none (pctab_palette is accepted and changes nothing).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/toolchain"
)

// program returns the command's table of subcommands.
func program() *cli.Program {
	return &cli.Program{
		Name: "pctab-toolchain",
		Doc: "Pctab-toolchain builds and uses the Go toolchain whose linker writes, and whose\n" +
			"runtime reads, linear-index PC-value tables (package toolchain). With no tags the\n" +
			"patched go command builds the default flavour: cf-palette-short tables, lengths\n" +
			"derived from the functab, a direct-mapped per-M pcvalue cache and per-PC unwind\n" +
			"caches. -tags pctab_compactfast selects compact-fast tables, pctab_spec spec\n" +
			"tables, pctab_funcfield a length field in _func, pctab_stockcache the stock\n" +
			"pcvalue cache and pctab_nocache none.\n\n" +
			"pctab-toolchain -go RELEASE COMMAND ... (for example -go go1.27.3) builds and\n" +
			"uses that Go release, which GOTOOLCHAIN downloads, with its own patch.",
		Commands: []*cli.Command{
			buildCommand,
			goCommand(false),
			goCommand(true),
			sizesCommand,
			benchCommand,
			summaryCommand,
			instrCommand,
			compareCommand,
			libbenchCommand,
			testsuiteCommand,
			populationCommand,
			readersCommand,
			{Name: "check", MovedTo: "pctab-stats verify -twin TWIN PATCHED"},
		},
	}
}

// run is main without the process: it returns the exit status. A leading
// -go RELEASE (or --go, -go=RELEASE) selects the Go release every
// subcommand patches and uses.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	first := ""
	if len(args) > 0 {
		first = args[0]
		if strings.HasPrefix(first, "--") {
			first = first[1:] // --go is -go, as for the flag package
		}
	}
	if first == "-go" || strings.HasPrefix(first, "-go=") {
		release, ok := strings.CutPrefix(first, "-go=")
		args = args[1:]
		if !ok {
			release = ""
			if len(args) > 0 {
				release, args = args[0], args[1:]
			}
		}
		if release == "" {
			fmt.Fprintln(stderr, "pctab-toolchain: -go needs a RELEASE, for example -go go1.27.3")
			return cli.ExitUsage
		}
		ctx = context.WithValue(ctx, releaseKey{}, release)
	}
	return program().Run(ctx, args, stdout, stderr)
}

// releaseKey is the context key of -go's release.
type releaseKey struct{}

// main runs the program on the process's arguments.
func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// getToolchain builds the toolchain, or finds it in the cache.
func getToolchain(env *cli.Env) (*toolchain.Toolchain, error) {
	cache, err := toolchain.DefaultCacheDir()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	release, _ := env.Ctx.Value(releaseKey{}).(string)
	tc, err := toolchain.BuildRelease(env.Ctx, cache, release, env.Stderr)
	if err != nil {
		return nil, err
	}
	if !tc.Cached {
		fmt.Fprintf(env.Stderr, "pctab-toolchain: built %s in %.1fs\n", tc.Dir, time.Since(start).Seconds())
	}
	return tc, nil
}

// buildCommand is "pctab-toolchain build".
var buildCommand = &cli.Command{
	Name:  "build",
	Short: "build the toolchain (cached) and print where it is",
	Long: "Build builds the patched toolchain and its twin (the same sources with the\n" +
		"stock linker) under $HOME/.cache/pctab-toolchain, unless they are there\n" +
		"already, and prints their GOROOTs.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		return func(env *cli.Env, args []string) error {
			if len(args) != 0 {
				return cli.Usagef("no arguments wanted")
			}
			tc, err := getToolchain(env)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "GOROOT=%s\nTWIN=%s\nversion %s, patch key %s\n", tc.GOROOT, tc.TwinGOROOT, tc.Version, tc.Key)
			return nil
		}
	},
}

// goCommand is "pctab-toolchain go", or with twin "pctab-toolchain twin".
func goCommand(twin bool) *cli.Command {
	c := &cli.Command{
		Name:    "go",
		Args:    "ARGS...",
		Short:   "run the patched toolchain's go command",
		Long:    "Go runs the patched toolchain's go command with ARGS, building the toolchain first\nif it is not in the cache. It exits with the go command's status.",
		RawArgs: true,
	}
	if twin {
		c.Name = "twin"
		c.Short = "run the twin's go command (patched sources, stock linker)"
		c.Long = "Twin runs the twin toolchain's go command with ARGS: the same patched sources\n" +
			"with the stock linker, which writes varint tables. A binary built by both is\n" +
			"checked by pctab-stats verify -twin TWIN PATCHED. It exits with the go command's status."
	}
	c.Flags = func(fs *flag.FlagSet) cli.RunFunc {
		return func(env *cli.Env, args []string) error {
			if !twin && len(args) > 0 && args[0] == "-twin" {
				return cli.Usagef("-twin is gone: the twin's go command is pctab-toolchain twin ARGS...")
			}
			tc, err := getToolchain(env)
			if err != nil {
				return err
			}
			cmd := exec.CommandContext(env.Ctx, tc.GoCommand(twin), args...)
			cmd.Env = tc.Env(twin)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.Stdout, env.Stderr
			err = cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() > 0 {
				return &cli.ExitError{Code: ee.ExitCode()}
			}
			return err
		}
	}
	return c
}

// summaryCommand is "pctab-toolchain summary".
var summaryCommand = &cli.Command{
	Name:  "summary",
	Args:  "FILE...",
	Short: "summarize bench's results against stock",
	Long:  "Summary summarizes the results bench wrote to each FILE against stock, with\nbenchstat's statistics (toolchain.Summarize).",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		return func(env *cli.Env, args []string) error {
			if len(args) == 0 {
				return cli.Usagef("no result FILE")
			}
			for _, p := range args {
				if err := summarizeFile(p, env.Stdout); err != nil {
					return err
				}
			}
			return nil
		}
	},
}

// summarizeFile prints toolchain.Summarize of the results in file path.
func summarizeFile(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := toolchain.Summarize(f, w); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
