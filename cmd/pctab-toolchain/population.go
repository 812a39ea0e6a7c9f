package main

import (
	"bytes"
	"errors"
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
	Args:  "[-o DIR] [-md FILE] [-formats LIST] [-programs FILE] [-cache DIR] [-cached] [-note TEXT] [NAME...]",
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
		"program) and population.svg (file change against size, a point per program).\n" +
		"-md FILE writes the results as Markdown tables, with the command, the machine\n" +
		"(-note) and the date, into FILE between its generated-section markers, keeping\n" +
		"the rest of it; a new FILE gets the markers and the tables alone.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		out := fs.String("o", "", "write population.jsonl and population.svg to `DIR`")
		md := fs.String("md", "", "write the results as Markdown into the generated section of `FILE`")
		formats := fs.String("formats", "cf-palette-short", "comma-separated table `formats` to build (toolchain.Formats: "+formatNames()+")")
		programs := fs.String("programs", "", "programs `file` (default: the pinned internal/population/programs.txt)")
		cache := fs.String("cache", "", "cache `directory` for builds and results (default $HOME/.cache/pctab-population)")
		cached := fs.Bool("cached", false, "build nothing: measure only programs whose builds are all cached")
		note := fs.String("note", "", "say where it ran (`text`: the machine) in the plot and the Markdown")
		return func(env *cli.Env, args []string) error {
			fmts, err := parseFormats(*formats)
			if err != nil {
				return err
			}
			if *md != "" {
				// Refuse a file without its section before building for hours.
				if doc, err := os.ReadFile(*md); err == nil {
					if _, err := population.ReplaceSection(doc, nil); err != nil {
						return fmt.Errorf("-md %s: %w", *md, err)
					}
				} else if !errors.Is(err, os.ErrNotExist) {
					return err
				}
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
			key, err := population.BuildKey(tc)
			if err != nil {
				return err
			}
			b := &population.Builder{Toolchain: tc, CacheDir: *cache, Formats: fmts, Log: env.Stderr, Key: key}
			var jsonl bytes.Buffer
			lines, err := b.Run(env.Ctx, ps, *cached, &jsonl)
			if werr := population.WriteTable(env.Stdout, lines); err == nil {
				err = werr
			}
			date := time.Now().UTC().Format("2006-01-02")
			var mdText bytes.Buffer
			if *md != "" && len(lines) > 0 {
				machine := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
				if *note != "" {
					machine = *note + " (" + machine + ")"
				}
				o := population.MarkdownOptions{Programs: ps, Command: commandLine(fs, args), Machine: machine, Date: date}
				if werr := population.WriteMarkdown(&mdText, lines, o); err == nil {
					err = werr
				}
			}
			if *out != "" && len(lines) > 0 {
				sub := fmt.Sprintf("pctab-toolchain population · %s %s/%s · %s", tc.Version, runtime.GOOS, runtime.GOARCH, date)
				if *note != "" {
					sub += " · " + *note
				}
				if werr := writeOutputs(*out, jsonl.Bytes(), population.Plot(lines, sub)); err == nil {
					err = werr
				}
			}
			if *md != "" && len(lines) > 0 {
				if werr := writeMarkdownSection(*md, mdText.Bytes()); err == nil {
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

// commandLine returns the command as run: its set flags, in the order
// flag.FlagSet.Visit gives them, and its arguments, quoted for a shell
// where they need it.
func commandLine(fs *flag.FlagSet, args []string) string {
	words := []string{"pctab-toolchain", "population"}
	fs.Visit(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && f.Value.String() == "true" {
			words = append(words, "-"+f.Name)
			return
		}
		words = append(words, "-"+f.Name, shellQuote(f.Value.String()))
	})
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,=:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeMarkdownSection writes section into file's generated section, or
// makes file with only that section when it does not exist.
func writeMarkdownSection(file string, section []byte) error {
	doc, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		doc, err = []byte(population.BeginMarker+"\n"+population.EndMarker+"\n"), nil
	}
	if err != nil {
		return err
	}
	doc, err = population.ReplaceSection(doc, section)
	if err != nil {
		return fmt.Errorf("-md %s: %w", file, err)
	}
	return os.WriteFile(file, doc, 0o644)
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
