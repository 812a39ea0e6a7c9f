// Command rewrite-binary rewrites a Go binary (ELF, Mach-O or PE) so that
// its PC-value tables are in the linear-index format of golang/go#61984,
// and reports what that really costs in file size.
//
// Usage:
//
//	rewrite-binary [-mode replace|append] [-variant NAME] -o OUT BINARY
//	rewrite-binary verify [-orig ORIG] REWRITTEN...
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
// The verify subcommand checks rewritten binaries: append-mode binaries on
// their own, replace-mode binaries against the binary they were made from
// (-orig).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/rewrite"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var err error
	if len(args) > 0 && args[0] == "verify" {
		err = runVerify(args[1:], stdout, stderr)
	} else {
		err = runRewrite(args, stdout, stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "rewrite-binary: %v\n", err)
		return 1
	}
	return 0
}

// schemaVersion is the schema_version of rewrite-binary's JSON
// (testdata/rewrite.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in the README.
const schemaVersion = 2

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

func runRewrite(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rewrite-binary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "replace", "replace: rebuild the pclntab in the linear format; append: add the linear tables in a new section")
	variant := fs.String("variant", "spec", "linearpc variant")
	derived := fs.Bool("derived", false, "replace mode: derive function lengths from the functab (magic 0xffffffe2, no bytes) instead of a uint32 in every _func")
	out := fs.String("o", "", "output file (required)")
	check := fs.Bool("verify", true, "verify the output before writing it")
	estimate := fs.Bool("estimate", true, "compare with pctab-stats' size estimate")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	workers := fs.Int("j", 0, "verification goroutines (0 = GOMAXPROCS)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rewrite-binary [-mode replace|append] [-variant NAME] [-derived] -o OUT BINARY\n"+
			"       rewrite-binary verify [-orig ORIG] REWRITTEN...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *out == "" {
		fs.Usage()
		return errors.New("need exactly one BINARY and -o OUT")
	}
	in := fs.Arg(0)
	opt := rewrite.Options{Mode: rewrite.Mode(*mode), Variant: *variant, Derived: *derived, Verify: *check, Workers: *workers}
	res, err := rewrite.RewriteFile(in, *out, opt)
	if err != nil {
		return err
	}
	var est *rewrite.Estimate
	if *estimate {
		f, err := objscan.Open(in)
		if err != nil {
			return fmt.Errorf("estimate: %w", err)
		}
		est, err = rewrite.EstimateFor(f, *variant, *derived)
		f.Close()
		if err != nil {
			return err
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		v := rewriteJSON{SchemaVersion: schemaVersion, In: in, Out: *out, Result: res, Estimate: est}
		if est != nil {
			v.Gap = rewrite.Gap(res, est)
		}
		return enc.Encode(v)
	}
	fmt.Fprintf(stdout, "%s -> %s\n", in, *out)
	return rewrite.WriteText(stdout, res, est)
}

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	origPath := fs.String("orig", "", "the binary the rewritten ones were made from (required for replace mode)")
	workers := fs.Int("j", 0, "goroutines (0 = GOMAXPROCS)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rewrite-binary verify [-orig ORIG] REWRITTEN...\n\n"+
			"Checks every linear table of each rewritten binary at every PC of its\n"+
			"function against the original varint table. Exits 1 on any mismatch.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no binary to verify")
	}
	var orig *objscan.File
	var origData []byte
	if *origPath != "" {
		var err error
		if orig, err = objscan.Open(*origPath); err != nil {
			return err
		}
		defer orig.Close()
		if origData, err = os.ReadFile(*origPath); err != nil {
			return err
		}
	}
	failed := 0
	for _, p := range fs.Args() {
		if err := verifyOne(p, orig, origData, *workers, stdout); err != nil {
			fmt.Fprintf(stdout, "%s: FAIL %v\n", p, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("verify failed on %d of %d binaries", failed, fs.NArg())
	}
	return nil
}

// verifyOne checks one rewritten binary and prints its result.
func verifyOne(path string, orig *objscan.File, origData []byte, workers int, stdout io.Writer) error {
	f, err := objscan.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Linear == nil {
		return errors.New("not a rewritten binary (no linear tables)")
	}
	res, err := rewrite.Check(f, orig, workers)
	if err != nil {
		return err
	}
	if f.Linear.Mode == "append" && origData != nil {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := rewrite.SameLoadedImage(origData, data); err != nil {
			return fmt.Errorf("loaded image differs from the original's: %w", err)
		}
	}
	fmt.Fprintf(stdout, "%s: %s mode, variant %s, %s/%s %s: %d tables, %d PCs, %d lookups, %d mismatches\n",
		path, f.Linear.Mode, f.Linear.Variant, f.GOOS, f.GOARCH, f.GoVersion, res.Tables, res.PCs, res.Lookups, res.Mismatches)
	for _, e := range res.Examples {
		fmt.Fprintf(stdout, "\t%s\n", e)
	}
	if !res.OK() {
		return fmt.Errorf("%d mismatches", res.Mismatches)
	}
	return nil
}
