package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/cli/clitest"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/rewrite"
)

// TestCommandLine checks the command-line convention (package cli): -h and
// help on stdout with exit 0, usage errors on stderr with exit 2, failures
// with exit 1, and the bare form "pctab-stats [flags] BINARY" of the report.
func TestCommandLine(t *testing.T) {
	p := program()
	clitest.FlagNames(t, p)
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("not JSON"), 0o666); err != nil {
		t.Fatal(err)
	}
	// This test binary has trampolines: labels reads its history.
	labelled, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	linear := filepath.Join(dir, "linear")
	if _, err := rewrite.RewriteFile(bin, linear, rewrite.Options{Mode: rewrite.Replace}); err != nil {
		t.Fatal(err)
	}
	cases := append(clitest.Convention(p), []clitest.Case{
		{Name: "help lists the commands", Args: []string{"help"},
			Stdout: []string{"report", "verify", "stacks", "replay", "labels", "pctab-stats [flags] [BINARY...]"}, NoStderr: true},
		{Name: "help report", Args: []string{"help", "report"},
			Stdout: []string{"usage: pctab-stats report [flags] [BINARY...]", "-variants", "short for"}, NoStderr: true},
		{Name: "bare binary", Args: []string{"-variants=false", bin}, Stdout: []string{bin, "table kind", "pcsp"}, NoStderr: true},
		{Name: "named report", Args: []string{"report", "-variants=false", bin}, Stdout: []string{bin, "table kind"}, NoStderr: true},
		{Name: "bare missing file", Args: []string{missing}, Code: cli.ExitFailure, Stderr: []string{"no such file"}, NoStdout: true},
		{Name: "a word that is no command and no file", Args: []string{"verfy", bin}, Code: cli.ExitUsage,
			Stderr: []string{`unknown command "verfy"`}, NoStdout: true},
		{Name: "bad report flag value", Args: []string{"-format=xml", bin}, Code: cli.ExitUsage,
			Stderr: []string{"-format=xml", "usage: pctab-stats report"}, NoStdout: true},
		{Name: "old flag spelling", Args: []string{"replay", "-min-depth", "3", "-synthetic", "9", bin}, Code: cli.ExitUsage,
			Stderr: []string{"flag provided but not defined: -min-depth"}, NoStdout: true},
		{Name: "verify -orig and -twin", Args: []string{"verify", "-orig", bin, "-twin", bin, bin}, Code: cli.ExitUsage,
			Stderr: []string{"not both"}, NoStdout: true},
		{Name: "verify -orig on a stock binary", Args: []string{"verify", "-orig", bin, bin}, Code: cli.ExitFailure,
			Stdout: []string{"no linear tables"}, Stderr: []string{"verify failed on 1 of 1"}},
		{Name: "verify a missing file", Args: []string{"verify", missing}, Code: cli.ExitFailure,
			Stdout: []string{"ERROR"}, Stderr: []string{"verify failed on 1 of 1"}},
		{Name: "stacks without input", Args: []string{"stacks", bin}, Code: cli.ExitUsage,
			Stderr: []string{"exactly one of -trace and -pprof", "pctab-stats help stacks"}, NoStdout: true},
		{Name: "labels without flags", Args: []string{"labels", bin}, Code: cli.ExitUsage,
			Stderr: []string{"need -history", "usage: pctab-stats labels"}, NoStdout: true},
		{Name: "replay unreadable trace", Args: []string{"replay", "-trace", missing, bin}, Code: cli.ExitFailure,
			Stderr: []string{"no such file"}},
		{Name: "-svg onto a file", Args: []string{"-variants=false", "-svg", bin, bin}, Code: cli.ExitFailure, Stderr: []string{"pctab-stats: -svg " + bin + ": "}},
		{Name: "-pairs into a missing directory stops at once", Args: []string{"-bench", "-benchtime", "1x", "-pairs", missing + "/p", bin, bin}, Code: cli.ExitFailure,
			Stderr: []string{"-pairs " + missing + "/p: "}, NoStdout: true},
		{Name: "report negative -j", Args: []string{"-j=-2", bin}, Code: cli.ExitUsage, Stderr: []string{"-j=-2: want 0"}, NoStdout: true},
		{Name: "verify negative -j", Args: []string{"verify", "-j", "-1", bin}, Code: cli.ExitUsage, Stderr: []string{"-j=-1: want 0"}, NoStdout: true},
		{Name: "verify flag after the binary", Args: []string{"verify", bin, "-json"}, Code: cli.ExitUsage,
			Stderr: []string{"pctab-stats verify: flag -json after the argument", "usage: pctab-stats verify"}, NoStdout: true},
		{Name: "report flag after the binary", Args: []string{bin, "-variants=false"}, Code: cli.ExitUsage,
			Stderr: []string{"flag -variants after the argument"}, NoStdout: true},
		{Name: "verify without a binary is the local go", Args: []string{"help", "verify"}, Stdout: []string{"[BINARY...]", "Without a BINARY it checks"}, NoStderr: true},
		// The stacks and replay flags are checked before the input is read:
		// the missing trace would be a failure (exit 1).
		{Name: "stacks negative -maxthreads", Args: []string{"stacks", "-trace", missing, "-maxthreads", "-1"}, Code: cli.ExitUsage, Stderr: []string{"-maxthreads=-1"}, NoStdout: true},
		{Name: "stacks negative -budget", Args: []string{"stacks", "-trace", missing, "-budget", "-5"}, Code: cli.ExitUsage, Stderr: []string{"-budget=-5"}, NoStdout: true},
		{Name: "stacks bad -filelayout", Args: []string{"stacks", "-trace", missing, "-filelayout", "pc/nope"}, Code: cli.ExitUsage, Stderr: []string{"-filelayout: ", "pc/nope"}, NoStdout: true},
		{Name: "stacks -o is the trace", Args: []string{"stacks", "-trace", bin, "-o", bin}, Code: cli.ExitUsage, Stderr: []string{"-o " + bin + " is the input"}, NoStdout: true},
		{Name: "replay of a binary with linear tables only", Args: []string{"replay", "-synthetic", "5", linear}, Code: cli.ExitFailure,
			Stderr: []string{"its tables are linear only", "replay the original"}},
		{Name: "replay two binaries", Args: []string{"replay", "-synthetic", "5", bin, missing}, Code: cli.ExitUsage, Stderr: []string{"want one BINARY, got [", strconv.Quote(missing)}, NoStdout: true},
		{Name: "stacks two binaries", Args: []string{"stacks", "-trace", missing, bin, missing}, Code: cli.ExitUsage, Stderr: []string{"at most one BINARY, got ["}, NoStdout: true},
		{Name: "replay negative -synthetic", Args: []string{"replay", "-synthetic", "-3", bin}, Code: cli.ExitUsage, Stderr: []string{"-synthetic=-3"}, NoStdout: true},
		{Name: "replay too many synthetic frames", Args: []string{"replay", "-synthetic", "100000000000", bin}, Code: cli.ExitUsage, Stderr: []string{"-synthetic=100000000000 -maxdepth=40: at most"}, NoStdout: true},
		{Name: "replay reversed depths", Args: []string{"replay", "-synthetic", "10", "-mindepth", "50", "-maxdepth", "10", bin}, Code: cli.ExitUsage, Stderr: []string{"-mindepth=50 -maxdepth=10"}, NoStdout: true},
		{Name: "replay -maxdepth too deep", Args: []string{"replay", "-synthetic", "10", "-maxdepth", "100000", bin}, Code: cli.ExitUsage, Stderr: []string{"-maxdepth=100000"}, NoStdout: true},
		{Name: "replay negative -frames", Args: []string{"replay", "-trace", missing, "-frames", "-1", bin}, Code: cli.ExitUsage, Stderr: []string{"-frames=-1"}, NoStdout: true},
		{Name: "replay negative -mismatches", Args: []string{"replay", "-trace", missing, "-mismatches", "-1", bin}, Code: cli.ExitUsage, Stderr: []string{"-mismatches=-1"}, NoStdout: true},
		{Name: "labels -o is the binary", Args: []string{"labels", "-history", missing, "-pprof", missing, "-o", bin, bin}, Code: cli.ExitUsage, Stderr: []string{"-o " + bin + " is the input"}, NoStdout: true},
		{Name: "labels bad history", Args: []string{"labels", "-history", garbage, "-pprof", missing, "-o", missing, labelled}, Code: cli.ExitFailure, Stderr: []string{"pctab-stats: labels: -history " + garbage + ": "}, NoStdout: true},
		{Name: "a directory", Args: []string{dir}, Code: cli.ExitFailure,
			Stderr: []string{"not a regular file (a directory)", "1 of 1 binaries could not be read"}, NoStdout: true},
	}...)
	// Each command gets a named pipe of its own, with no writer: opening one
	// to read blocked every command until a writer came (the test starts
	// one per pipe, so that a command that blocks fails instead of hanging).
	for _, c := range []struct {
		name string
		args []string
		out  bool // the error is on stdout (verify's report)
	}{
		{"report", nil, false},
		{"json", []string{"-json"}, false},
		{"verify", []string{"verify"}, true},
		{"replay", []string{"replay", "-synthetic", "5"}, false},
	} {
		fifo := filepath.Join(dir, c.name+".fifo")
		if err := testenv.Mkfifo(t, fifo); err != nil {
			t.Logf("no named pipes: %v", err)
			break
		}
		tc := clitest.Case{Name: c.name + " of a named pipe", Args: append(c.args, fifo), Code: cli.ExitFailure}
		if c.out {
			tc.Stdout = []string{"not a regular file (a named pipe)"}
		} else {
			tc.Stderr = []string{"not a regular file (a named pipe)"}
		}
		cases = append(cases, tc)
	}
	clitest.Run(t, p, cases)
}

// TestDocs checks the pages of docs/ against the commands' flags: each
// flag is documented, and each command line they show names only
// defined flags.
func TestDocs(t *testing.T) {
	clitest.Docs(t, program(), clitest.DocConfig{Root: "../..", Pages: map[string][]string{
		"report": {"docs/pctab-stats.md", "docs/lookup-speed.md"},
		"verify": {"docs/verify.md"},
		"stacks": {"docs/stacks.md"},
		"replay": {"docs/replay.md"},
		"labels": {"docs/labels.md"},
	}})
}
