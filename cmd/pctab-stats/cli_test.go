package main

import (
	"path/filepath"
	"testing"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/cli/clitest"
	"github.com/pctab/pctab/internal/testbuild"
)

// TestCommandLine checks the command-line convention (package cli): -h and
// help on stdout with exit 0, usage errors on stderr with exit 2, failures
// with exit 1, and the bare form "pctab-stats [flags] BINARY" of the report.
func TestCommandLine(t *testing.T) {
	p := program()
	clitest.FlagNames(t, p)
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	missing := filepath.Join(t.TempDir(), "missing")
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
	}...)
	clitest.Run(t, p, cases)
}
