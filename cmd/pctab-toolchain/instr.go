package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/toolchain"
)

// instrCommand is "pctab-toolchain instr": instructions per benchmark
// operation in every flavour under cachegrind (toolchain.Instructions),
// printed as a table with each flavour's ratio to stock.
var instrCommand = &cli.Command{
	Name:  "instr",
	Args:  "[-dir DIR] [-bench RE] [-target D] [-p N] [-flavours LIST] [-o FILE] [PKG]",
	Short: "count each flavour's instructions per benchmark operation (cachegrind)",
	Long: "Instr counts the instructions per operation of package PKG's benchmarks\n" +
		"(default: runtime) built stock and in every runtime flavour, under cachegrind\n" +
		"with GOGC=off, as the difference of two run lengths, which the machine's load\n" +
		"does not move, and prints them with each flavour's ratio to stock.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		pf := addPkgBenchFlags(fs)
		target := fs.Duration("target", 0, "native time of each benchmark's smaller run (default 20ms)")
		par := fs.Int("p", 1, "`n` valgrind runs at once")
		outPath := fs.String("o", "", "also write the counts (Go benchmark format) to `file`")
		return func(env *cli.Env, args []string) error {
			if *par < 1 {
				return cli.Usagef("-p=%d: must be at least 1", *par)
			}
			if *target < 0 {
				return cli.Usagef("-target=%v: must not be negative", *target)
			}
			pb, err := pf.setup(env, args)
			if err != nil {
				return err
			}
			defer pb.done()
			var raw bytes.Buffer
			o := toolchain.InstrOptions{Dir: pb.dir, Package: pb.pkg, Bench: pb.bench, Work: pb.work, Target: *target, Parallel: *par, Flavours: pb.flavours}
			if err := pb.tc.Instructions(env.Ctx, o, &raw, env.Stderr); err != nil {
				return err
			}
			if *outPath != "" {
				if err := os.WriteFile(*outPath, raw.Bytes(), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(env.Stderr, "pctab-toolchain: wrote %s\n", *outPath)
			}
			return toolchain.SummarizeInstructions(&raw, env.Stdout)
		}
	},
}
