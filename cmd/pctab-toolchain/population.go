package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/population"
	"github.com/pctab/pctab/internal/svgplot"
	"github.com/pctab/pctab/toolchain"
)

// populationCommand is "pctab-toolchain population".
var populationCommand = &cli.Command{
	Name:  "population",
	Args:  "[-o DIR] [-formats LIST] [-programs FILE] [-cache DIR] [-cached] [NAME...]",
	Short: "build real Go programs stock, patched and twin; check them and compare sizes",
	Long: "Population builds each program of the pinned population (internal/population/\n" +
		"programs.txt; NAME... selects some), fetched through the module proxy, with the\n" +
		"local toolchain and with the patched toolchain and its twin in each format\n" +
		"(-trimpath -ldflags=-w, CGO_ENABLED=0). It checks every patched binary against\n" +
		"its twin (as pctab-stats verify -twin), runs each binary once (--version or the\n" +
		"program's arguments), prints a row per program and format with the real file\n" +
		"change against stock and pctab-stats' estimate, then the median, p90 and max of\n" +
		"the change per format. Builds and results are cached under -cache; an\n" +
		"interrupted run resumes. -o DIR also writes population.jsonl (one JSON line per\n" +
		"program) and population.svg (file change against size, a point per program).",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		out := fs.String("o", "", "write population.jsonl and population.svg to `DIR`")
		formats := fs.String("formats", "compact-fast", "comma-separated table `formats` to build (toolchain.Formats: "+formatNames()+")")
		programs := fs.String("programs", "", "programs `file` (default: the pinned internal/population/programs.txt)")
		cache := fs.String("cache", "", "cache `directory` for builds and results (default $HOME/.cache/pctab-population)")
		cached := fs.Bool("cached", false, "build nothing: measure only programs whose builds are all cached")
		note := fs.String("note", "", "add `text` (the machine, say) to the plot's subtitle")
		return func(env *cli.Env, args []string) error {
			fmts, err := parseFormats(*formats)
			if err != nil {
				return err
			}
			ps, err := loadPrograms(*programs, args)
			if err != nil {
				return err
			}
			if *cache == "" {
				if *cache, err = population.DefaultCacheDir(); err != nil {
					return err
				}
			}
			tc, err := getToolchain(env)
			if err != nil {
				return err
			}
			b := &population.Builder{Toolchain: tc, CacheDir: *cache, Formats: fmts, Log: env.Stderr}
			var jsonl bytes.Buffer
			lines, err := b.Run(env.Ctx, ps, *cached, &jsonl)
			if werr := population.WriteTable(env.Stdout, lines); err == nil {
				err = werr
			}
			if *out != "" && len(lines) > 0 {
				sub := fmt.Sprintf("pctab-toolchain population · %s %s/%s · %s", tc.Version, runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
				if *note != "" {
					sub += " · " + *note
				}
				if werr := writeOutputs(*out, jsonl.Bytes(), population.Plot(lines, sub)); err == nil {
					err = werr
				}
			}
			return err
		}
	},
}

func formatNames() string {
	var s []string
	for _, f := range toolchain.Formats() {
		s = append(s, f.Name)
	}
	return strings.Join(s, ", ")
}

// parseFormats looks up each comma-separated name in toolchain.Formats.
func parseFormats(list string) ([]toolchain.Format, error) {
	var fs []toolchain.Format
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(toolchain.Formats(), func(f toolchain.Format) bool { return f.Name == name })
		if i < 0 {
			return nil, cli.Usagef("-formats: unknown format %q (want one of %s)", name, formatNames())
		}
		fs = append(fs, toolchain.Formats()[i])
	}
	return fs, nil
}

// loadPrograms reads the programs file (or the pinned one) and keeps the
// named programs, in the order named.
func loadPrograms(file string, names []string) ([]population.Program, error) {
	var ps []population.Program
	var err error
	if file == "" {
		ps, err = population.Programs()
	} else {
		f, ferr := os.Open(file)
		if ferr != nil {
			return nil, ferr
		}
		defer f.Close()
		ps, err = population.ParsePrograms(f)
		if err != nil {
			err = fmt.Errorf("%s: %w", file, err)
		}
	}
	if err != nil || len(names) == 0 {
		return ps, err
	}
	var sel []population.Program
	for _, n := range names {
		i := slices.IndexFunc(ps, func(p population.Program) bool { return p.Name == n })
		if i < 0 {
			return nil, cli.Usagef("no program %q in the population", n)
		}
		sel = append(sel, ps[i])
	}
	return sel, nil
}

// writeOutputs writes population.jsonl and population.svg to dir.
func writeOutputs(dir string, jsonl []byte, plot *svgplot.Plot) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "population.jsonl"), jsonl, 0o644); err != nil {
		return err
	}
	var svg bytes.Buffer
	if err := plot.WriteSVG(&svg); err != nil {
		return fmt.Errorf("population.svg: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "population.svg"), svg.Bytes(), 0o644)
}
