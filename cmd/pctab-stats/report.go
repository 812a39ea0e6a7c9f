package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
)

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pctab-stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per binary (schema in README.md)")
	variants := fs.Bool("variants", true, "also size every linearpc variant and the hybrid encoding")
	workers := fs.Int("j", 0, "worker goroutines (0 = GOMAXPROCS)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pctab-stats [flags] [BINARY...]\n"+
			"       pctab-stats verify BINARY...\n"+
			"       pctab-stats stacks [flags] [BINARY]\n\n"+
			"Reports the size of each binary's PC-value tables in Go's varint format and\n"+
			"in the linear-index format of golang/go#61984. Without a BINARY it reads\n"+
			"$(go env GOROOT)/bin/go.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	paths, err := binariesOrDefault(fs.Args())
	if err != nil {
		return err
	}
	var reports []*report.Report
	failed := 0
	for _, p := range paths {
		r, err := reportFile(p, report.Options{Variants: *variants, Workers: *workers})
		if err != nil {
			fmt.Fprintf(stderr, "pctab-stats: %v\n", err)
			failed++
			continue
		}
		reports = append(reports, r)
		if *jsonOut {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", b)
			continue
		}
		if len(reports) > 1 {
			fmt.Fprintln(stdout)
		}
		if err := report.WriteText(stdout, r); err != nil {
			return err
		}
	}
	if !*jsonOut && len(reports) > 1 {
		fmt.Fprintln(stdout)
		if err := report.WriteComparison(stdout, reports); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d binaries could not be read", failed, len(paths))
	}
	return nil
}

func reportFile(path string, opt report.Options) (*report.Report, error) {
	f, err := objscan.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := report.Compute(f, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
