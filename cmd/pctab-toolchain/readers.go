package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/readers"
)

// readersCommand is "pctab-toolchain readers".
var readersCommand = &cli.Command{
	Name:  "readers",
	Args:  "[-o DIR] [-formats LIST] [-archive FILE]",
	Short: "run outside readers of the pclntab, released and patched, on patched binaries",
	Long: "Readers builds the outside readers of the pclntab (package internal/readers:\n" +
		"Delve, govulncheck, the eBPF profiler's reader, goretk/gore and Pyroscope's\n" +
		"eBPF symbolizer, at the versions in internal/readers/versions.txt, through\n" +
		"the module proxy or the directory PCTAB_READER_SRC_NAME names, under\n" +
		"$HOME/.cache/pctab-readers; a reader that is neither is skipped with a\n" +
		"message), each as released and with its patch, builds the program of a\n" +
		"testdata archive with the patched toolchain in each format, with its twin\n" +
		"and with the stock toolchain, and prints what the released and the patched\n" +
		"reader do with the patched binary: what their decoders read (and what gore\n" +
		"reports) against the twin, for Pyroscope stripped too, govulncheck\n" +
		"-mode=binary's symbols against the stock build's (with a synthetic\n" +
		"vulnerability database), and dlv exec's breakpoints and stacks against the\n" +
		"stock build's. ok means the patched reader gives the stock answer; broken\n" +
		"that the released one does not. It runs from the module's root. See\n" +
		"docs/toolchain-readers.md.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		out := fs.String("o", "", "keep the binaries and the vulnerability database in `dir` (default: a temporary directory)")
		formats := fs.String("formats", strings.Join(readers.CheckFormats(), ","), "comma-separated table `formats` (toolchain.Formats; each built with its variant's tag)")
		archive := fs.String("archive", filepath.Join("testdata", "features.txtar"), "the program, a txtar `file` of a Go module")
		return func(env *cli.Env, args []string) error {
			if len(args) != 0 {
				return cli.Usagef("no arguments wanted")
			}
			fmts, err := readers.Formats(strings.Split(*formats, ",")...)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			if _, err := os.Stat(*archive); err != nil {
				return fmt.Errorf("%w (run from the module's root, or give -archive)", err)
			}
			dir := *out
			if dir == "" {
				d, err := os.MkdirTemp("", "pctab-readers-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			tc, err := getToolchain(env)
			if err != nil {
				return err
			}
			rs, err := readers.Readers()
			if err != nil {
				return err
			}
			cache, err := readers.DefaultCacheDir()
			if err != nil {
				return err
			}
			db := filepath.Join(dir, "vulndb")
			if err := readers.WriteVulnDB(db, readers.FeaturesSymbols()); err != nil {
				return err
			}
			var bins []*readers.Binaries
			for _, f := range fmts {
				b, err := readers.BuildProgram(env.Ctx, tc, *archive, filepath.Join(dir, f.Name), f, "")
				if err != nil {
					return err
				}
				bins = append(bins, b)
			}
			var results []*readers.Result
			for _, r := range rs {
				stock, err := r.Build(env.Ctx, cache, tc, false, env.Stderr)
				if errors.Is(err, readers.ErrUnavailable) {
					fmt.Fprintf(env.Stderr, "pctab-toolchain: skipping %s: %v\n", r.Name, err)
					continue
				}
				if err != nil {
					return err
				}
				patched, err := r.Build(env.Ctx, cache, tc, true, env.Stderr)
				if err != nil {
					return err
				}
				for _, b := range bins {
					res, err := readers.CheckProbe(env.Ctx, stock, patched, b)
					if err != nil {
						return err
					}
					results = append(results, res)
					switch r.Name {
					case "govulncheck":
						res, err = readers.CheckGovulncheck(env.Ctx, stock, patched, b, db)
						if err != nil {
							return err
						}
						results = append(results, res)
					case "pyroscope":
						// Without the ELF symbol table to fall back on.
						res, err = readers.CheckProbe(env.Ctx, stock, patched, b.Stripped())
						if err != nil {
							return err
						}
						results = append(results, res)
					case "dlv":
						for _, stripped := range []bool{false, true} {
							res, err = readers.CheckDelve(env.Ctx, stock, patched, b, stripped)
							if err != nil {
								return err
							}
							results = append(results, res)
						}
					}
				}
			}
			pdir := filepath.Join(dir, "pprof")
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				return err
			}
			res, err := readers.CheckPprof(env.Ctx, tc, pdir)
			if err != nil {
				return err
			}
			results = append(results, res)
			w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "reader\tversion\tformat\tcheck\treleased on patched\tpatched on patched\tstatus")
			for _, r := range results {
				status := "ok"
				if !r.OK {
					status = "FAIL"
				}
				if r.Broken {
					status += ", released broken"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Reader, r.Version, r.Format, r.Check, r.Released, r.Patched, status)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			for _, r := range results {
				if !r.OK {
					return fmt.Errorf("a patched reader differs from the stock answer")
				}
			}
			return nil
		}
	},
}
