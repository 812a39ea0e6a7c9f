package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/trampoline"
	"github.com/pctab/pctab/trampoline/resolve"
)

// labelsSchemaVersion versions the -json output of pctab-stats labels
// (testdata/labels.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in docs/json.md.
// Version 2 added truncated; version 3 truncated.partial_events and
// truncated.framing, and truncated.generations counts only whole
// generations.
const labelsSchemaVersion = 3

// labelsJSON is the JSON form of a labels run: the schema version, the
// binary, its trampolines, the profile written and the counts, and what
// was dropped of a cut trace.
type labelsJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Binary        string `json:"binary"`
	Trampolines   int    `json:"trampolines"`
	Output        string `json:"output"`
	resolve.Stats
	// Truncated, if set, says that the trace (-trace) was cut or turned
	// unreadable: the profile holds the samples of its whole
	// generations, as pctab-trace build keeps their events.
	Truncated *tracestore.Truncation `json:"truncated,omitempty"`
}

// labelsCommand is "pctab-stats labels": trampoline labels onto CPU samples.
var labelsCommand = &cli.Command{
	Name:  "labels",
	Args:  "-history FILE (-trace FILE | -pprof FILE) -o FILE [-json] BINARY",
	Short: "label CPU samples by trampoline",
	Long: "Labels attaches trampoline labels to the CPU samples of a trace or profile of\n" +
		"BINARY and writes a labelled pprof profile. Of a trace that is cut or turns\n" +
		"unreadable part way, it labels the samples of the whole generations, as\n" +
		"pctab-trace build keeps their events, and says where the trace was cut.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		lf := &labelsFlags{
			hist:      fs.String("history", "", "trampoline history `file` written by trampoline.WriteHistory (required)"),
			tracePath: fs.String("trace", "", "execution trace `file` with CPU samples"),
			pprofPath: fs.String("pprof", "", "pprof CPU profile `file`"),
			out:       fs.String("o", "", "write the labelled pprof profile to `file` (required)"),
			asJSON:    fs.Bool("json", false, "print the counts as JSON"),
		}
		return func(env *cli.Env, args []string) error { return runLabels(lf, args, env.Stdout, env.Stderr) }
	},
}

// labelsFlags holds the flag values of pctab-stats labels.
type labelsFlags struct {
	hist, tracePath, pprofPath, out *string
	asJSON                          *bool
}

// runLabels runs pctab-stats labels with flags lf on the arguments args.
func runLabels(lf *labelsFlags, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || *lf.hist == "" || *lf.out == "" || (*lf.tracePath == "") == (*lf.pprofPath == "") {
		return cli.Usagef("need -history, -o, exactly one of -trace and -pprof, and one binary")
	}
	if err := cli.CheckOutput("-o", *lf.out, args[0], *lf.hist, *lf.tracePath, *lf.pprofPath); err != nil {
		return err
	}
	bin, err := objscan.Open(args[0])
	if err != nil {
		return err
	}
	defer bin.Close()
	tr, err := resolve.Find(bin)
	if err != nil {
		return err
	}
	hf, err := os.Open(*lf.hist)
	if err != nil {
		return err
	}
	h, err := trampoline.ReadHistory(hf)
	hf.Close()
	if err != nil {
		return fmt.Errorf("labels: -history %s: %w", *lf.hist, err)
	}
	var p *profile.Profile
	var st resolve.Stats
	var cut *tracestore.Truncation
	if *lf.pprofPath != "" {
		f, err := os.Open(*lf.pprofPath)
		if err != nil {
			return err
		}
		in, err := stackinput.ParsePprof(f) // bounded decompression and decoding
		f.Close()
		if err != nil {
			return fmt.Errorf("labels: %s: %w", *lf.pprofPath, err)
		}
		p, st, err = resolve.Profile(in, tr, h)
		if err != nil {
			return err
		}
	} else {
		var c *stackinput.Corpus
		if c, cut, err = readTrace(*lf.tracePath); err != nil {
			return err
		}
		p, st, err = resolve.Trace(c, tr, h)
		if err != nil {
			return err
		}
	}
	of, err := os.Create(*lf.out)
	if err != nil {
		return err
	}
	if err := p.Write(of); err != nil {
		of.Close()
		return fmt.Errorf("labels: writing %s: %w", *lf.out, err)
	}
	if err := of.Close(); err != nil {
		return err
	}
	warnCut(stderr, *lf.tracePath, cut)
	if *lf.asJSON {
		return jsonschema.Write(stdout, labelsJSON{labelsSchemaVersion, args[0], tr.N, *lf.out, st, cut})
	}
	fmt.Fprintf(stdout, "%s: %d trampolines; %d samples, %d through a trampoline, %d labelled, %d unattributed (trampoline bound more than once in the profile, or not at the sample's time); wrote %s\n",
		args[0], tr.N, st.Samples, st.Through, st.Labelled, st.Unattributed, *lf.out)
	if cut != nil {
		fmt.Fprintln(stdout, cutLine(cut))
	}
	return nil
}

// readTrace reads the stacks of the execution trace at path: of a cut
// trace, those of its whole generations, and what was dropped.
func readTrace(path string) (*stackinput.Corpus, *tracestore.Truncation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	c, cut, err := readTraceStacks(f)
	if err != nil {
		return nil, nil, fmt.Errorf("labels: %s: %w", path, err)
	}
	return c, cut, nil
}
