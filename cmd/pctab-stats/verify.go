package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/rewrite"
	"github.com/pctab/pctab/verify"
)

// verifySchemaVersion is the schema_version of verify's JSON
// (testdata/verify.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in the README.
const verifySchemaVersion = 1

// verifyJSON is the JSON form of one binary's verification.
type verifyJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Path          string `json:"path"`
	GOOS          string `json:"goos,omitempty"`
	GOARCH        string `json:"goarch,omitempty"`
	GoVersion     string `json:"go_version,omitempty"`
	OK            bool   `json:"ok"`              // no error and no mismatch
	Error         string `json:"error,omitempty"` // why the binary could not be checked
	*verify.Result
}

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("j", 0, "worker goroutines (0 = GOMAXPROCS)")
	jsonOut := fs.Bool("json", false, "print one JSON object per binary, one per line")
	origPath := fs.String("orig", "", "for a binary rewritten by rewrite-binary in replace mode: the original binary to check its linear tables against")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pctab-stats verify [-j N] [-json] BINARY...\n\n"+
			"Checks every distinct PC-value table of every function at every PC:\n"+
			"varint lookup, spec linear lookup, every variant and the decoded runs agree,\n"+
			"and Encode(Decode(t)) reproduces the linker's bytes. For a binary written by\n"+
			"rewrite-binary it checks every lookup in its linear tables against the varint\n"+
			"tables (append mode: the same file; replace mode: -orig). Exits 1 on any mismatch.\n\n")
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
		out := verifyJSON{SchemaVersion: verifySchemaVersion, Path: p}
		f, err := objscan.Open(p)
		var res *verify.Result
		if err == nil {
			out.GOOS, out.GOARCH, out.GoVersion = f.GOOS, f.GOARCH, f.GoVersion
			res, err = verifyOne(f, *origPath, *workers)
			f.Close()
		}
		if err != nil {
			out.Error = err.Error()
		} else {
			out.Result, out.OK = res, res.OK()
		}
		if !out.OK {
			failed++
		}
		if *jsonOut {
			b, err := json.Marshal(out)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		if out.Error != "" {
			fmt.Fprintf(stdout, "%s: ERROR %s\n", p, out.Error)
			continue
		}
		status := "ok"
		if !out.OK {
			status = "FAIL"
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

// verifyOne verifies one binary: its varint tables through every codec, and
// for a rewritten binary its linear tables against the original varint ones.
func verifyOne(f *objscan.File, origPath string, workers int) (*verify.Result, error) {
	if f.Linear == nil {
		return verify.File(f, workers)
	}
	var orig *objscan.File
	if origPath != "" {
		o, err := objscan.Open(origPath)
		if err != nil {
			return nil, err
		}
		defer o.Close()
		orig = o
	} else if f.Linear.Mode == "replace" {
		return nil, fmt.Errorf("rewritten in replace mode: its varint tables are gone; give the original binary with -orig")
	}
	res, err := rewrite.Check(f, orig, workers)
	if err != nil || f.Linear.Mode == "replace" {
		return res, err
	}
	// Append mode keeps the varint tables: check those through every codec too.
	vres, err := verify.File(f, workers)
	if err != nil {
		return nil, err
	}
	res.Tables += vres.Tables
	res.PCs += vres.PCs
	res.Lookups += vres.Lookups
	res.Mismatches += vres.Mismatches
	res.Examples = append(res.Examples, vres.Examples...)
	return res, nil
}
