package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pctab/pctab/toolchain"
)

// runInstr counts the instructions per operation of a package's benchmarks
// in every flavour under cachegrind (toolchain.Instructions) and prints
// them as a table with each flavour's ratio to stock.
func runInstr(ctx context.Context, get func() (*toolchain.Toolchain, error), args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("instr", flag.ContinueOnError)
	dir := fs.String("dir", "", "module directory of the package (default: a standard-library package)")
	bench := fs.String("bench", "^BenchmarkCallers$", "benchmarks to run (-test.bench)")
	target := fs.Duration("target", 0, "native time of each benchmark's smaller run (default 20ms)")
	par := fs.Int("p", 1, "valgrind runs at once")
	outPath := fs.String("o", "", "also write the counts (Go benchmark format) to `file`")
	flavours := fs.String("flavours", "", "comma-separated `names` of the flavours to count besides stock (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pkg := "runtime"
	if fs.NArg() > 1 {
		return errors.New("instr takes at most one package")
	} else if fs.NArg() == 1 {
		pkg = fs.Arg(0)
	}
	tc, err := get()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "pctab-instr-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var raw bytes.Buffer
	o := toolchain.InstrOptions{Dir: *dir, Package: pkg, Bench: *bench, Work: work, Target: *target, Parallel: *par}
	if *flavours != "" {
		o.Flavours = strings.Split(*flavours, ",")
	}
	if err := tc.Instructions(ctx, o, &raw, stderr); err != nil {
		return err
	}
	if *outPath != "" {
		if err := os.WriteFile(*outPath, raw.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "pctab-toolchain: wrote %s\n", *outPath)
	}
	return toolchain.SummarizeInstructions(&raw, stdout)
}
