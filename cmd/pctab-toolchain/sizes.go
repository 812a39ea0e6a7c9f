package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/toolchain"
)

// sizesCommand is "pctab-toolchain sizes".
var sizesCommand = &cli.Command{
	Name:  "sizes",
	Args:  "[-ldflags FLAGS] [-formats LIST] [PKG...]",
	Short: "build packages stock and in every table format, check them and compare sizes",
	Long: "Sizes builds each package (default: cmd/gofmt and cmd/go) with the stock\n" +
		"toolchain, and with the patched toolchain and its twin in every table format;\n" +
		"it checks each pair (as pctab-stats verify -twin) and prints the sizes: the\n" +
		"file against the stock build (the real cost) and against the twin (the same\n" +
		"code with varint tables, so the tables' cost alone), and the pctab and functab\n" +
		"parts. Every build uses -trimpath. -formats limits the table formats\n" +
		"(default: all of them).",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		ldflags := fs.String("ldflags", "", "-ldflags for every build, e.g. -w (no DWARF, as the Go distribution's binaries)")
		formats := fs.String("formats", "", "comma-separated table `formats` to build (default all: "+formatNames()+")")
		return func(env *cli.Env, args []string) error {
			fmts := toolchain.Formats()
			if *formats != "" {
				var err error
				if fmts, err = parseFormats(*formats); err != nil {
					return err
				}
			}
			tc, err := getToolchain(env)
			if err != nil {
				return err
			}
			return runSizes(env.Ctx, tc, *ldflags, fmts, args, env.Stdout)
		}
	},
}

// runSizes builds each package with the stock toolchain, and with the
// patched toolchain and its twin in each of the table formats fmts; it checks each
// pair and prints the sizes: the file against the stock build (the real
// cost) and against the twin (the same code with varint tables, so the
// tables' cost alone), and the pctab and functab parts. Every build uses
// -trimpath, so that file names do not depend on where each GOROOT is.
func runSizes(ctx context.Context, tc *toolchain.Toolchain, ldflags string, fmts []toolchain.Format, pkgs []string, w io.Writer) error {
	if len(pkgs) == 0 {
		pkgs = []string{"cmd/gofmt", "cmd/go"}
	}
	dir, err := os.MkdirTemp("", "pctab-toolchain-sizes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%-12s %-19s %10s %10s %8s %10s %8s %9s %9s %8s %8s  %s\n", "package", "format", "stock", "linear", "vs stock", "twin", "vs twin", "pctab", "linear", "functab", "linear", "check")
	for _, pkg := range pkgs {
		name := strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_")
		if name == "" {
			name = "main"
		}
		build := func(o toolchain.BuildOptions, root string) error {
			// -trimpath: file names must not differ with the GOROOT's path.
			o.Package, o.Flags = pkg, []string{"-trimpath"}
			if ldflags != "" {
				o.Flags = append(o.Flags, "-ldflags="+ldflags)
			}
			o.Dir = filepath.Join(root, "src")
			if !strings.HasPrefix(pkg, "cmd/") {
				o.Dir = wd
			}
			return tc.GoBuild(ctx, o)
		}
		stock := filepath.Join(dir, name+".stock")
		if err := build(toolchain.BuildOptions{Out: stock, Stock: true}, tc.StockRoot); err != nil {
			return err
		}
		for _, f := range fmts {
			lin, twin := filepath.Join(dir, name+"."+f.Name), filepath.Join(dir, name+"."+f.Name+".twin")
			if err := build(toolchain.BuildOptions{Out: lin, Tags: f.Tags}, tc.GOROOT); err != nil {
				return err
			}
			if err := build(toolchain.BuildOptions{Out: twin, Tags: f.Tags, Twin: true}, tc.TwinGOROOT); err != nil {
				return err
			}
			if err := sizeRow(w, pkg, f.Name, stock, lin, twin); err != nil {
				return err
			}
		}
	}
	return nil
}

// sizeRow checks one patched binary against its twin and prints its row.
func sizeRow(w io.Writer, pkg, format, stock, lin, twin string) error {
	fl, err := objscan.Open(lin)
	if err != nil {
		return err
	}
	defer fl.Close()
	ft, err := objscan.Open(twin)
	if err != nil {
		return err
	}
	defer ft.Close()
	res, err := toolchain.Check(fl, ft)
	status := "ok"
	switch {
	case err != nil:
		status = err.Error()
	case !res.OK():
		status = fmt.Sprintf("FAIL %d mismatches", res.Mismatches)
	}
	ss, sl, st := fileSize(stock), fileSize(lin), fileSize(twin)
	fmt.Fprintf(w, "%-12s %-19s %10d %10d %8s %10d %8s %9d %9d %8d %8d  %s\n", pkg, format, ss, sl, pct(sl, ss), st, pct(sl, st),
		ft.Sizes.PCTab, fl.Sizes.PCTab, ft.Sizes.FuncTab, fl.Sizes.FuncTab, status)
	return nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// pct formats the change from b to a in percent.
func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", 100*float64(a-b)/float64(b))
}
