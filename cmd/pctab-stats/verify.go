package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/verify"
)

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("j", 0, "worker goroutines (0 = GOMAXPROCS)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pctab-stats verify [-j N] BINARY...\n\n"+
			"Checks every distinct PC-value table of every function at every PC:\n"+
			"varint lookup, spec linear lookup, every variant and the decoded runs agree,\n"+
			"and Encode(Decode(t)) reproduces the linker's bytes. Exits 1 on any mismatch.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	paths, err := binariesOrDefault(fs.Args())
	if err != nil {
		return err
	}
	failed := 0
	for _, p := range paths {
		f, err := objscan.Open(p)
		if err != nil {
			fmt.Fprintf(stdout, "%s: ERROR %v\n", p, err)
			failed++
			continue
		}
		res, err := verify.File(f, *workers)
		f.Close()
		if err != nil {
			fmt.Fprintf(stdout, "%s: ERROR %v\n", p, err)
			failed++
			continue
		}
		status := "ok"
		if !res.OK() {
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(stdout, "%s: %s %s/%s %s: %d tables, %d PCs, %d lookups, %d mismatches\n",
			p, status, f.GOOS, f.GOARCH, f.GoVersion, res.Tables, res.PCs, res.Lookups, res.Mismatches)
		for _, e := range res.Examples {
			fmt.Fprintf(stdout, "\t%s\n", e)
		}
	}
	if failed > 0 {
		return fmt.Errorf("verify failed on %d of %d binaries", failed, len(paths))
	}
	return nil
}
