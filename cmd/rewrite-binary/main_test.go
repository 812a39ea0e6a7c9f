package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/cli/clitest"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/internal/testbuild"
)

func TestRun(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64"})
	dir := t.TempDir()
	// The input is copied: a run that wrote its output over it must not
	// spoil the build cache's binary.
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	in = filepath.Join(dir, "features")
	if err := os.WriteFile(in, data, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	replaced := filepath.Join(dir, "features.replace")
	appended := filepath.Join(dir, "features.append")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  string   // substring of stderr
		wantFile string   // file that must exist afterwards
	}{
		{name: "replace", args: []string{"-o", replaced, in}, wantFile: replaced,
			wantOut: []string{"mode       replace, variant spec", "file size", "estimate", "gap", "verify     ok"}},
		{name: "append", args: []string{"-mode", "append", "-estimate=false", "-o", appended, in}, wantFile: appended,
			wantOut: []string{"mode       append", "verify     ok"}},
		{name: "named rewrite", args: []string{"rewrite", "-mode", "append", "-estimate=false", "-o", appended + "2", in}, wantFile: appended + "2",
			wantOut: []string{"mode       append", "verify     ok"}},
		{name: "verify moved", args: []string{"verify", appended}, wantCode: 2, wantErr: "use pctab-stats verify"},
		{name: "no output", args: []string{in}, wantCode: 2, wantErr: "-o OUT"},
		{name: "bad variant", args: []string{"-variant", "nope", "-o", filepath.Join(dir, "bad"), in}, wantCode: 2, wantErr: `unknown variant "nope"`},
		{name: "bad mode", args: []string{"-mode", "sideways", "-o", filepath.Join(dir, "bad"), in}, wantCode: 2, wantErr: `unknown mode "sideways"`},
		{name: "append -derived", args: []string{"-mode", "append", "-derived", "-o", filepath.Join(dir, "bad"), in}, wantCode: 2, wantErr: "derived function lengths need replace mode"},
		{name: "cfps-varint-pcln without -derived", args: []string{"-variant", "cfps-varint-pcln", "-o", filepath.Join(dir, "bad"), in}, wantCode: 2, wantErr: "needs replace mode with derived lengths"},
		{name: "negative -j", args: []string{"-j", "-1", "-o", filepath.Join(dir, "bad"), in}, wantCode: 2, wantErr: "-j=-1"},
		{name: "-o is the input", args: []string{"-o", in, in}, wantCode: 2, wantErr: "-o " + in + " is the input"},
		{name: "-o is a link to the input", args: []string{"-o", link, in}, wantCode: 2, wantErr: "is the input"},
		{name: "flag after the binary", args: []string{"-o", filepath.Join(dir, "bad"), in, "-json"}, wantCode: 2, wantErr: "flag -json after the argument"},
		{name: "bad input", args: []string{"-o", filepath.Join(dir, "bad"), filepath.Join(dir, "missing")}, wantCode: 1, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
			}
			if tt.wantFile != "" {
				if _, err := os.Stat(tt.wantFile); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !os.IsNotExist(err) {
		t.Errorf("a failed run left an output file: %v", err)
	}
	if got, err := os.ReadFile(in); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the input changed (%v)", err)
	}
}

func TestJSON(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64"})
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "out")
	if code := run([]string{"-json", "-variant", "compact", "-o", out, in}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var v struct {
		Result struct {
			Variant    string `json:"variant"`
			DeltaBytes int64  `json:"delta_bytes"`
			Verify     struct {
				Mismatches int64
				Tables     int
			} `json:"verify"`
		} `json:"result"`
		Estimate struct {
			Bytes int64 `json:"bytes"`
		} `json:"estimate"`
		Gap []struct {
			Bytes int64 `json:"bytes"`
		} `json:"gap"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if err := jsonschema.CheckValue(stdout.Bytes(), rewriteSchema()); err != nil {
		t.Errorf("-json output: %v", err)
	}
	var gap int64
	for _, g := range v.Gap {
		gap += g.Bytes
	}
	if v.Result.Variant != "compact" || v.Result.Verify.Tables == 0 || v.Result.Verify.Mismatches != 0 || gap != v.Result.DeltaBytes-v.Estimate.Bytes {
		t.Errorf("unexpected result: %+v", v)
	}
}

// TestCommandLine checks the command-line convention (package cli): -h and
// help on stdout with exit 0, usage errors on stderr with exit 2.
func TestCommandLine(t *testing.T) {
	p := program()
	clitest.FlagNames(t, p)
	missing := filepath.Join(t.TempDir(), "missing")
	clitest.Run(t, p, append(clitest.Convention(p), []clitest.Case{
		{Name: "help lists the commands", Args: []string{"help"}, Stdout: []string{"rewrite", "rewrite-binary [flags] -o OUT BINARY", "verify   use pctab-stats verify"}, NoStderr: true},
		{Name: "help rewrite", Args: []string{"help", "rewrite"}, Stdout: []string{"-mode", "-variant", "-o file", "short for"}, NoStderr: true},
		{Name: "no arguments", Args: nil, Code: cli.ExitUsage, Stderr: []string{"need exactly one BINARY and -o OUT", "usage: rewrite-binary rewrite"}, NoStdout: true},
		{Name: "two binaries", Args: []string{"-o", missing + ".out", missing, missing}, Code: cli.ExitUsage, Stderr: []string{"need exactly one BINARY"}, NoStdout: true},
		{Name: "missing binary", Args: []string{"-o", missing + ".out", missing}, Code: cli.ExitFailure, Stderr: []string{"no such file"}, NoStdout: true},
	}...))
}

func rewriteSchema() jsonschema.Schema {
	return jsonschema.Of(reflect.TypeFor[rewriteJSON](), schemaVersion)
}

// TestJSONSchema fails when a field of the -json output is added, removed
// or renamed without schemaVersion changing, or is not snake_case.
// PCTAB_UPDATE_GOLDEN=1 rewrites testdata/rewrite.fields after a
// deliberate change (bump the version and update docs/json.md first).
func TestJSONSchema(t *testing.T) {
	jsonschema.Golden(t, filepath.Join("testdata", "rewrite.fields"), rewriteSchema())
}

// TestDocs checks docs/rewrite-binary.md against the command's flags: each
// flag is documented, and each command line the docs show names only
// defined flags.
func TestDocs(t *testing.T) {
	clitest.Docs(t, program(), clitest.DocConfig{Root: "../..", Pages: map[string][]string{
		"rewrite": {"docs/rewrite-binary.md"},
	}})
}
