package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/trampoline"
	"github.com/pctab/pctab/trampoline/resolve"
)

// labelsSchemaVersion versions the -json output of pctab-stats labels
// (testdata/labels.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in the README.
const labelsSchemaVersion = 1

// labelsJSON is the JSON form of a labels run: the schema version, the
// binary, its trampolines, the profile written and the counts.
type labelsJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Binary        string `json:"binary"`
	Trampolines   int    `json:"trampolines"`
	Output        string `json:"output"`
	resolve.Stats
}

// runLabels is pctab-stats labels: trampoline labels onto CPU samples.
func runLabels(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("labels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hist := fs.String("history", "", "trampoline history written by trampoline.WriteHistory (required)")
	tracePath := fs.String("trace", "", "execution trace with CPU samples")
	pprofPath := fs.String("pprof", "", "pprof CPU profile")
	out := fs.String("o", "", "write the labelled pprof profile here (required)")
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: pctab-stats labels -history H (-trace T | -pprof P) -o OUT [-json] BINARY")
		fmt.Fprintln(stderr, "Attaches trampoline labels to the CPU samples of a trace or profile of BINARY and writes a labelled pprof profile.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *hist == "" || *out == "" || (*tracePath == "") == (*pprofPath == "") {
		fs.Usage()
		return errors.New("labels: need -history, -o, exactly one of -trace and -pprof, and one binary")
	}
	bin, err := objscan.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer bin.Close()
	tr, err := resolve.Find(bin)
	if err != nil {
		return err
	}
	hf, err := os.Open(*hist)
	if err != nil {
		return err
	}
	h, err := trampoline.ReadHistory(hf)
	hf.Close()
	if err != nil {
		return err
	}
	var p *profile.Profile
	var st resolve.Stats
	if *pprofPath != "" {
		f, err := os.Open(*pprofPath)
		if err != nil {
			return err
		}
		in, err := stackinput.ParsePprof(f) // bounded decompression and decoding
		f.Close()
		if err != nil {
			return fmt.Errorf("labels: %s: %w", *pprofPath, err)
		}
		p, st, err = resolve.Profile(in, tr, h)
		if err != nil {
			return err
		}
	} else {
		f, err := os.Open(*tracePath)
		if err != nil {
			return err
		}
		c, err := stackinput.ReadTrace(f)
		f.Close()
		if err != nil {
			return err
		}
		p, st, err = resolve.Trace(c, tr, h)
		if err != nil {
			return err
		}
	}
	of, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := p.Write(of); err != nil {
		of.Close()
		return fmt.Errorf("labels: writing %s: %w", *out, err)
	}
	if err := of.Close(); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(labelsJSON{labelsSchemaVersion, fs.Arg(0), tr.N, *out, st})
	}
	fmt.Fprintf(stdout, "%s: %d trampolines; %d samples, %d through a trampoline, %d labelled, %d unattributed (trampoline bound more than once in the profile, or not at the sample's time); wrote %s\n",
		fs.Arg(0), tr.N, st.Samples, st.Through, st.Labelled, st.Unattributed, *out)
	return nil
}
