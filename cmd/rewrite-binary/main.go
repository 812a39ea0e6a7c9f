// Command rewrite-binary rewrites a Go binary (ELF, Mach-O or PE) so that
// its PC-value tables are in the linear-index format of golang/go#61984,
// and reports what that really costs in file size.
//
// Usage:
//
//	rewrite-binary [-mode replace|append] [-variant NAME] [-derived] -o OUT BINARY
//	rewrite-binary rewrite [flags] -o OUT BINARY    the same
//
// Replace mode rebuilds the pclntab with every table in the linear format
// (a stock runtime rejects the result) and moves it to a new segment or
// section; append mode keeps the pclntab and adds the linear tables in a
// new non-loaded section (the result runs unchanged). The formats are documented in package objscan (linear.go) and
// the layout changes in package rewrite.
//
// The output is verified before it is written (every lookup in the linear
// tables equals the original varint lookup; see rewrite.Check) and written
// through a temporary file, so a failed run leaves no output behind. The
// size report puts the real difference next to pctab-stats' estimate and
// explains the gap.
//
// Rewritten binaries are checked afterwards by pctab-stats verify
// (-orig ORIG for replace mode).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/rewrite"
)

func main() {
	program().Main()
}

// program returns the command's table of subcommands.
func program() *cli.Program {
	return &cli.Program{
		Name: "rewrite-binary",
		Doc: "Rewrite-binary rewrites a Go binary (ELF, Mach-O or PE) so that its PC-value\n" +
			"tables are in the linear-index format of golang/go#61984, and reports what\n" +
			"that really costs in file size. Pctab-stats verify checks rewritten binaries.",
		Commands: []*cli.Command{
			rewriteCommand,
			{Name: "verify", MovedTo: "pctab-stats verify [-orig ORIG] REWRITTEN..."},
		},
		Default: "rewrite",
		Operand: cli.IsFile,
	}
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return program().Run(context.Background(), args, stdout, stderr)
}

// schemaVersion is the schema_version of rewrite-binary's JSON
// (testdata/rewrite.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in docs/json.md.
const schemaVersion = 3

// rewriteJSON is the JSON form of one rewrite: the schema version, the
// files, the result and, with -estimate, pctab-stats' estimate and the gap
// between the two.
type rewriteJSON struct {
	SchemaVersion int               `json:"schema_version"`
	In            string            `json:"in"`
	Out           string            `json:"out"`
	Result        *rewrite.Result   `json:"result"`
	Estimate      *rewrite.Estimate `json:"estimate,omitempty"`
	Gap           []rewrite.GapItem `json:"gap,omitempty"`
}

// rewriteCommand is "rewrite-binary rewrite", also "rewrite-binary [flags] -o OUT BINARY".
var rewriteCommand = &cli.Command{
	Name:  "rewrite",
	Args:  "[flags] -o OUT BINARY",
	Short: "rewrite a binary's tables in the linear format and report the size",
	Long: "Rewrite writes to OUT a copy of BINARY whose PC-value tables are in the\n" +
		"linear-index format. Replace mode rebuilds the pclntab with every table in the\n" +
		"linear format (a stock runtime rejects the result) and moves it to a new\n" +
		"segment or section; append mode keeps the pclntab and adds the linear tables\n" +
		"in a new non-loaded section (the result runs unchanged). The output is\n" +
		"verified before it is written (see rewrite.Check), so a failed run leaves no\n" +
		"output behind. The size report puts the real difference next to pctab-stats'\n" +
		"estimate and explains the gap. Check a rewritten binary again with\n" +
		"pctab-stats verify.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		rf := &rewriteFlags{
			mode:     fs.String("mode", "replace", "replace: rebuild the pclntab in the linear format; append: add the linear tables in a new section"),
			variant:  fs.String("variant", "spec", "linearpc variant, or cfps-varint-pcln (cf-palette-short with the pcln tables left varint, as the pctab toolchain's pctab_varln writes; replace mode with -derived)"),
			derived:  fs.Bool("derived", false, "replace mode: derive function lengths from the functab (magic 0xffffffe2, no bytes) instead of a uint32 in every _func"),
			out:      fs.String("o", "", "output `file` (required)"),
			check:    fs.Bool("verify", true, "verify the output before writing it"),
			estimate: fs.Bool("estimate", true, "compare with pctab-stats' size estimate"),
			jsonOut:  fs.Bool("json", false, "print the result as JSON"),
			workers:  fs.Int("j", 0, "verification goroutines (0 = GOMAXPROCS)"),
		}
		return func(env *cli.Env, args []string) error { return runRewrite(rf, args, env.Stdout) }
	},
}

// rewriteFlags holds the flag values of rewrite-binary rewrite.
type rewriteFlags struct {
	mode, variant, out                *string
	derived, check, estimate, jsonOut *bool
	workers                           *int
}

func runRewrite(rf *rewriteFlags, args []string, stdout io.Writer) error {
	if len(args) != 1 || *rf.out == "" {
		return cli.Usagef("need exactly one BINARY and -o OUT")
	}
	if *rf.workers < 0 {
		return cli.Usagef("-j=%d: want 0 (GOMAXPROCS) or more", *rf.workers)
	}
	in := args[0]
	opt := rewrite.Options{Mode: rewrite.Mode(*rf.mode), Variant: *rf.variant, Derived: *rf.derived, Verify: *rf.check, Workers: *rf.workers}
	if err := opt.Check(); err != nil {
		return cli.Usagef("%w", err)
	}
	if err := cli.CheckOutput("-o", *rf.out, in); err != nil {
		return err
	}
	res, err := rewrite.RewriteFile(in, *rf.out, opt)
	if err != nil {
		return err
	}
	var est *rewrite.Estimate
	if *rf.estimate {
		f, err := objscan.Open(in)
		if err != nil {
			return fmt.Errorf("estimate: %w", err)
		}
		est, err = rewrite.EstimateFor(f, *rf.variant, *rf.derived)
		f.Close()
		if err != nil {
			return err
		}
	}
	if *rf.jsonOut {
		v := rewriteJSON{SchemaVersion: schemaVersion, In: in, Out: *rf.out, Result: res, Estimate: est}
		if est != nil {
			v.Gap = rewrite.Gap(res, est)
		}
		return jsonschema.Write(stdout, v)
	}
	fmt.Fprintf(stdout, "%s -> %s\n", in, *rf.out)
	return rewrite.WriteText(stdout, res, est)
}
