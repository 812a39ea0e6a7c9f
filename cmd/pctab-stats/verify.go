package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/internal/textfmt"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/rewrite"
	"github.com/pctab/pctab/toolchain"
	"github.com/pctab/pctab/verify"
)

// verifySchemaVersion is the schema_version of verify's JSON
// (testdata/verify.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in docs/json.md.
const verifySchemaVersion = 2

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

// verifyCommand is "pctab-stats verify": the one check of every binary's
// tables, stock, rewritten by rewrite-binary or built by pctab-toolchain.
var verifyCommand = &cli.Command{
	Name:  "verify",
	Args:  "[-j N] [-json] [-orig ORIG | -twin TWIN] [BINARY...]",
	Short: "check every table lookup at every PC",
	Long: "Verify checks every distinct PC-value table of every function at every PC:\n" +
		"varint lookup, spec linear lookup, every variant and the decoded runs agree,\n" +
		"and Encode(Decode(t)) reproduces the linker's bytes.\n\n" +
		"For a binary written by rewrite-binary it checks every lookup in its linear\n" +
		"tables against the varint tables: an append-mode binary against its own, and\n" +
		"with -orig also that the loader maps the same bytes as from the original (ELF);\n" +
		"a replace-mode binary against the original given with -orig. For a binary\n" +
		"built by pctab-toolchain it checks its linear tables against -twin, the same\n" +
		"program built with the twin GOROOT's stock linker.\n\n" +
		"Without a BINARY it checks $(go env GOROOT)/bin/go. It exits 1 if any binary\n" +
		"cannot be checked or has a mismatch.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		workers := fs.Int("j", 0, "worker goroutines (0 = GOMAXPROCS)")
		jsonOut := fs.Bool("json", false, "print one JSON object per binary, one per line")
		twinPath := fs.String("twin", "", "for a binary built by pctab-toolchain: its twin `file` (the same program built with the twin GOROOT's stock linker) to check its linear tables against")
		origPath := fs.String("orig", "", "for a binary rewritten by rewrite-binary: the original `file` to check its linear tables against (required for replace mode)")
		return func(env *cli.Env, args []string) error {
			if *twinPath != "" && *origPath != "" {
				return cli.Usagef("give -orig or -twin, not both")
			}
			if *workers < 0 {
				return cli.Usagef("-j=%d: want 0 (GOMAXPROCS) or more", *workers)
			}
			return runVerify(env.Stdout, args, *origPath, *twinPath, *workers, *jsonOut)
		}
	},
}

func runVerify(stdout io.Writer, args []string, origPath, twinPath string, workers int, jsonOut bool) error {
	paths, err := binariesOrDefault(args)
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
			res, err = verifyOne(f, p, origPath, twinPath, workers)
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
		if jsonOut {
			if err := jsonschema.WriteLine(stdout, out); err != nil {
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
		tables := ""
		if f.Linear != nil {
			tables = fmt.Sprintf(" (linear tables: %s mode, variant %s)", f.Linear.Mode, f.Linear.Variant)
			if f.Linear.PCLnVarint {
				tables = fmt.Sprintf(" (linear tables: %s mode, variant %s, pcln varint)", f.Linear.Mode, f.Linear.Variant)
			}
		}
		sampled := ""
		if res.VarintSampled > 0 {
			sampled = fmt.Sprintf(" (varint lookups at run ends only in %d tables too long to walk at every PC)", res.VarintSampled)
		}
		fmt.Fprintf(stdout, "%s: %s %s/%s %s%s: %d tables, %d PCs, %d lookups, %d mismatches%s\n",
			p, status, f.GOOS, f.GOARCH, textfmt.GoVersion(f.GoVersion), tables, res.Tables, res.PCs, res.Lookups, res.Mismatches, sampled)
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
func verifyOne(f *objscan.File, path, origPath, twinPath string, workers int) (*verify.Result, error) {
	if f.Linear == nil {
		if twinPath != "" || origPath != "" {
			return nil, errors.New("no linear tables: -orig and -twin are for binaries written by rewrite-binary or pctab-toolchain")
		}
		return verify.File(f, workers)
	}
	if twinPath != "" {
		twin, err := objscan.Open(twinPath)
		if err != nil {
			return nil, err
		}
		defer twin.Close()
		return toolchain.Check(f, twin)
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
		return nil, fmt.Errorf("its tables are linear only (rewrite-binary replace mode, or pctab-toolchain): give the original binary with -orig, or the twin with -twin")
	}
	res, err := rewrite.Check(f, orig, workers)
	if err != nil || f.Linear.Mode == "replace" {
		return res, err
	}
	if orig != nil && f.Format == "elf" {
		if err := sameLoadedImage(origPath, path); err != nil {
			return nil, err
		}
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

// sameLoadedImage checks that the loader maps the same bytes from the
// append-mode binary at path as from the original binary at origPath.
func sameLoadedImage(origPath, path string) error {
	a, err := objscan.ReadFile(origPath)
	if err != nil {
		return err
	}
	b, err := objscan.ReadFile(path)
	if err != nil {
		return err
	}
	if err := rewrite.SameLoadedImage(a, b); err != nil {
		return fmt.Errorf("loaded image differs from the original's: %w", err)
	}
	return nil
}
