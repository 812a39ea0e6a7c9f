package main

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/cli/clitest"
)

// TestCommandLine checks the command-line convention (package cli): -h and
// help on stdout with exit 0, usage errors on stderr with exit 2 and
// failures with exit 1, none of which builds the toolchain.
func TestCommandLine(t *testing.T) {
	p := program()
	clitest.FlagNames(t, p)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	// results is bench's output for one benchmark in two flavours.
	var results strings.Builder
	results.WriteString("goos: linux\ngoarch: amd64\n")
	for round := range 6 {
		for _, fl := range []struct {
			name string
			ns   int
		}{{"stock", 100}, {"linear", 50}} {
			results.WriteString("toolchain: " + fl.name + "\nBenchmarkX-2 \t1000\t" + strconv.Itoa(fl.ns+round) + " ns/op\n")
		}
	}
	resultsFile := filepath.Join(dir, "results.txt")
	if err := os.WriteFile(resultsFile, []byte(results.String()), 0o666); err != nil {
		t.Fatal(err)
	}
	noSection := filepath.Join(dir, "doc.md")
	if err := os.WriteFile(noSection, []byte("# a document without the generated section\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	clitest.Run(t, p, append(clitest.Convention(p), []clitest.Case{
		{Name: "no arguments", Args: nil, Code: cli.ExitUsage, Stderr: []string{"The commands are:"}, NoStdout: true},
		{Name: "help lists the commands", Args: []string{"help"},
			Stdout: []string{"build", "go", "twin", "sizes", "bench", "summary", "compare", "testsuite"}, NoStderr: true},
		{Name: "go -h", Args: []string{"go", "-h"}, Stdout: []string{"usage: pctab-toolchain go ARGS..."}, NoStderr: true},
		{Name: "go -twin", Args: []string{"go", "-twin", "build"}, Code: cli.ExitUsage, Stderr: []string{"pctab-toolchain twin ARGS..."}, NoStdout: true},
		{Name: "check moved", Args: []string{"check", "a", "b"}, Code: cli.ExitUsage, Stderr: []string{"use pctab-stats verify -twin TWIN PATCHED"}, NoStdout: true},
		{Name: "build with arguments", Args: []string{"build", "x"}, Code: cli.ExitUsage, Stderr: []string{"no arguments wanted", "usage: pctab-toolchain build"}, NoStdout: true},
		{Name: "bench two packages", Args: []string{"bench", "a", "b"}, Code: cli.ExitUsage, Stderr: []string{"at most one package"}, NoStdout: true},
		{Name: "bench -count=0", Args: []string{"bench", "-count=0"}, Code: cli.ExitUsage, Stderr: []string{"-count=0"}, NoStdout: true},
		{Name: "compare with arguments", Args: []string{"compare", "x"}, Code: cli.ExitUsage, Stderr: []string{"no arguments wanted"}, NoStdout: true},
		{Name: "compare -o", Args: []string{"compare", "-o", dir}, Code: cli.ExitUsage, Stderr: []string{"not defined: -o"}, NoStdout: true},
		{Name: "summary without files", Args: []string{"summary"}, Code: cli.ExitUsage, Stderr: []string{"no result FILE"}, NoStdout: true},
		{Name: "summary of a missing file", Args: []string{"summary", missing}, Code: cli.ExitFailure, Stderr: []string{"pctab-toolchain: ", "no such file"}, NoStdout: true},
		{Name: "testsuite without -o", Args: []string{"testsuite"}, Code: cli.ExitUsage, Stderr: []string{"-o DIR is required"}, NoStdout: true},
		{Name: "testsuite -batch=0", Args: []string{"testsuite", "-o", dir, "-batch=0"}, Code: cli.ExitUsage, Stderr: []string{"-batch=0"}, NoStdout: true},
		{Name: "testsuite unknown flavour", Args: []string{"testsuite", "-o", dir, "-flavours", "default,nope"}, Code: cli.ExitUsage, Stderr: []string{`unknown flavour "nope"`}, NoStdout: true},
		{Name: "testsuite stock as a flavour", Args: []string{"testsuite", "-o", dir, "-flavours", "stock"}, Code: cli.ExitUsage, Stderr: []string{`unknown flavour "stock"`}, NoStdout: true},
		{Name: "summary", Args: []string{"summary", resultsFile}, Stdout: []string{"stock", "linear", "paired ×stock [95%]"}, NoStderr: true},
		{Name: "population -formats", Args: []string{"population", "-formats", "compact-fast,nope"}, Code: cli.ExitUsage, Stderr: []string{`unknown format "nope"`, "compact-fast"}, NoStdout: true},
		{Name: "population unknown program", Args: []string{"population", "gojq", "nope"}, Code: cli.ExitUsage, Stderr: []string{`no program "nope"`}, NoStdout: true},
		{Name: "population -md without the section", Args: []string{"population", "-md", noSection}, Code: cli.ExitFailure, Stderr: []string{"-md " + noSection, "no generated section"}, NoStdout: true},
		{Name: "a flag of the program", Args: []string{"-x", "build"}, Code: cli.ExitUsage, Stderr: []string{"flag provided but not defined: -x", "Run 'pctab-toolchain help'"}, NoStdout: true},
		{Name: "bench unknown flavour", Args: []string{"bench", "-flavours", "default,nope"}, Code: cli.ExitUsage, Stderr: []string{`-flavours: unknown flavour "nope"`, "usage: pctab-toolchain bench"}, NoStdout: true},
		{Name: "bench bad -benchtime", Args: []string{"bench", "-benchtime", "fast"}, Code: cli.ExitUsage, Stderr: []string{"-benchtime: ", `"fast"`}, NoStdout: true},
		{Name: "bench flag after the package", Args: []string{"bench", "runtime", "-count", "3"}, Code: cli.ExitUsage, Stderr: []string{`flag -count after the argument "runtime"`}, NoStdout: true},
		{Name: "instr unknown flavour", Args: []string{"instr", "-flavours", "nope"}, Code: cli.ExitUsage, Stderr: []string{`unknown flavour "nope"`}, NoStdout: true},
		{Name: "instr negative -target", Args: []string{"instr", "-target=-1s"}, Code: cli.ExitUsage, Stderr: []string{"-target=-1s"}, NoStdout: true},
		{Name: "compare bad -benchtime", Args: []string{"compare", "-benchtime", "0s"}, Code: cli.ExitUsage, Stderr: []string{"-benchtime: "}, NoStdout: true},
		{Name: "libbench unknown library", Args: []string{"libbench", "-libs", "zap,nope"}, Code: cli.ExitUsage, Stderr: []string{`-libs: libbench: no library "nope"`, "usage: pctab-toolchain libbench"}, NoStdout: true},
		{Name: "libbench unknown flavour", Args: []string{"libbench", "-flavours", "nope"}, Code: cli.ExitUsage, Stderr: []string{`-flavours: libbench: no flavour "nope"`}, NoStdout: true},
		{Name: "libbench bad -benchtime", Args: []string{"libbench", "-benchtime", "10"}, Code: cli.ExitUsage, Stderr: []string{"-benchtime: "}, NoStdout: true},
		{Name: "testsuite bad -timeout", Args: []string{"testsuite", "-o", dir, "-timeout", "forever"}, Code: cli.ExitUsage, Stderr: []string{"-timeout=forever"}, NoStdout: true},
		{Name: "summary of no results", Args: []string{"summary", noSection}, Code: cli.ExitFailure, Stderr: []string{"pctab-toolchain: " + noSection + ": "}, NoStdout: true},
		{Name: "population missing programs file", Args: []string{"population", "-programs", missing}, Code: cli.ExitFailure, Stderr: []string{"no such file"}, NoStdout: true},
	}...))
}

// TestPopulationCommandLine checks the command line the Markdown quotes.
func TestPopulationCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "pctab-toolchain population"},
		{[]string{"-o", "docs/plots", "-md", "docs/population.md", "-note", "2-core VM, shared"},
			"pctab-toolchain population -md docs/population.md -note '2-core VM, shared' -o docs/plots"},
		{[]string{"-cached", "-formats=compact-fast,small", "gojq", "it's"}, "pctab-toolchain population -cached -formats compact-fast,small gojq 'it'\\''s'"},
	} {
		fs := flag.NewFlagSet("population", flag.ContinueOnError)
		populationCommand.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := commandLine(fs, fs.Args()); got != tc.want {
			t.Errorf("%q: got\n%s\nwant\n%s", tc.args, got, tc.want)
		}
	}
}

// TestGoRelease checks the leading -go RELEASE: it needs a value, and it
// passes the rest of the command line to the subcommands.
func TestGoRelease(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"-go"}, cli.ExitUsage, "", "-go needs a RELEASE"},
		{[]string{"-go="}, cli.ExitUsage, "", "-go needs a RELEASE"},
		{[]string{"-go", "go1.27.3", "help", "instr"}, cli.ExitOK, "usage: pctab-toolchain instr", ""},
		{[]string{"-go=go1.27.3", "build", "x"}, cli.ExitUsage, "", "no arguments wanted"},
		{[]string{"--go", "go1.27.3", "help", "instr"}, cli.ExitOK, "usage: pctab-toolchain instr", ""},
		{[]string{"--go=go1.27.3", "build", "x"}, cli.ExitUsage, "", "no arguments wanted"},
		{[]string{"--go="}, cli.ExitUsage, "", "-go needs a RELEASE"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestDocs checks the toolchain's pages of docs/ against the commands'
// flags: each flag is documented, and each command line the docs show
// names only defined flags.
func TestDocs(t *testing.T) {
	main := []string{"docs/pctab-toolchain.md", "docs/toolchain-runtime.md"}
	clitest.Docs(t, program(), clitest.DocConfig{Root: "../..", ProgramFlags: []string{"go"}, Pages: map[string][]string{
		"build": main, "sizes": main, "bench": main, "summary": main, "instr": main, "compare": main,
		"libbench":   {"docs/toolchain-libbench.md"},
		"testsuite":  {"docs/toolchain-testsuite.md"},
		"population": {"docs/population.md"},
		"readers":    {"docs/toolchain-readers.md"},
	}})
}
