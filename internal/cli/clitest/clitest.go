// Package clitest tests that a command follows the convention of package
// cli: exit statuses, and which text goes to standard output and which to
// standard error.
package clitest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/cli"
)

// A Case is one command line and what it must do.
type Case struct {
	Name   string
	Args   []string
	Code   int      // exit status
	Stdout []string // substrings of standard output
	Stderr []string // substrings of standard error
	// NoStdout and NoStderr require the stream to be empty.
	NoStdout, NoStderr bool
}

// Run runs each case through p.Run and checks its exit status and output.
func Run(t *testing.T, p *cli.Program, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		name := tc.Name
		if name == "" {
			name = strings.Join(tc.Args, " ")
		}
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := p.Run(context.Background(), tc.Args, &stdout, &stderr)
			if code != tc.Code {
				t.Errorf("%s %q: exit status %d, want %d", p.Name, tc.Args, code, tc.Code)
			}
			check(t, "stdout", stdout.String(), tc.Stdout, tc.NoStdout)
			check(t, "stderr", stderr.String(), tc.Stderr, tc.NoStderr)
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
		})
	}
}

func check(t *testing.T, stream, got string, want []string, empty bool) {
	t.Helper()
	if empty && got != "" {
		t.Errorf("%s is not empty", stream)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q", stream, w)
		}
	}
}

// Convention returns the cases every program must pass: -h, help and help
// COMMAND for each command, COMMAND -h, an unknown flag of each command,
// an unknown command and an unknown help topic. Commands that have moved
// must name where to.
func Convention(p *cli.Program) []Case {
	usage := "Use \"" + p.Name + " help <command>\""
	cases := []Case{
		{Name: "-h", Args: []string{"-h"}, Stdout: []string{usage}, NoStderr: true},
		{Name: "-help", Args: []string{"-help"}, Stdout: []string{usage}, NoStderr: true},
		{Name: "help", Args: []string{"help"}, Stdout: []string{usage}, NoStderr: true},
		{Name: "unknown help topic", Args: []string{"help", "no-such-command"}, Code: cli.ExitUsage,
			Stderr: []string{"unknown help topic"}, NoStdout: true},
		{Name: "help with two topics", Args: []string{"help", "a", "b"}, Code: cli.ExitUsage, NoStdout: true},
		{Name: "unknown command", Args: []string{"no-such-command"}, Code: cli.ExitUsage,
			Stderr: []string{`unknown command "no-such-command"`, p.Name + " help"}, NoStdout: true},
	}
	for _, c := range p.Commands {
		if c.MovedTo != "" {
			cases = append(cases,
				Case{Name: c.Name + " moved", Args: []string{c.Name}, Code: cli.ExitUsage,
					Stderr: []string{"use " + c.MovedTo}, NoStdout: true},
				Case{Name: "help " + c.Name + " moved", Args: []string{"help", c.Name},
					Stdout: []string{"use " + c.MovedTo}, NoStderr: true})
			continue
		}
		line := "usage: " + p.Name + " " + c.Name
		cases = append(cases,
			Case{Name: "help " + c.Name, Args: []string{"help", c.Name}, Stdout: []string{line}, NoStderr: true},
			Case{Name: c.Name + " -h", Args: []string{c.Name, "-h"}, Stdout: []string{line}, NoStderr: true},
			Case{Name: c.Name + " -help", Args: []string{c.Name, "-help"}, Stdout: []string{line}, NoStderr: true})
		if !c.RawArgs {
			cases = append(cases, Case{Name: c.Name + " unknown flag", Args: []string{c.Name, "-no-such-flag"}, Code: cli.ExitUsage,
				Stderr: []string{"flag provided but not defined: -no-such-flag", line, p.Name + " help " + c.Name}, NoStdout: true})
		}
	}
	return cases
}

// FlagNames fails if a flag of any command of p is spelled with a hyphen or
// an upper-case letter (flags are one lower-case word, as the go
// command's), or if a command's usage line (Command.Args) names a flag the
// command does not define.
func FlagNames(t *testing.T, p *cli.Program) {
	t.Helper()
	for _, pr := range flagNameProblems(p) {
		t.Error(pr)
	}
}

// flagNameProblems returns what FlagNames finds wrong.
func flagNameProblems(p *cli.Program) []string {
	var problems []string
	for _, c := range p.Commands {
		fs := flagSet(c)
		fs.VisitAll(func(f *flag.Flag) {
			if strings.ContainsAny(f.Name, "-_") || strings.ToLower(f.Name) != f.Name {
				problems = append(problems, fmt.Sprintf("%s %s: flag -%s: spell it as one lower-case word, as the go command's flags", p.Name, c.Name, f.Name))
			}
		})
		if c.RawArgs {
			continue
		}
		for _, name := range flagsIn(c.Args) {
			if fs.Lookup(name) == nil {
				problems = append(problems, fmt.Sprintf("%s %s: the usage line %q names -%s, which the command does not define", p.Name, c.Name, c.Args, name))
			}
		}
	}
	return problems
}

// flagSet returns a flag set with command c's flags.
func flagSet(c *cli.Command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	if c.Flags != nil {
		c.Flags(fs)
	}
	return fs
}

// flagWord matches a word of a command line that is a flag, such as -j,
// [-json], (-trace, --mode=append or -interleave=false].
var flagWord = regexp.MustCompile(`^[\[(]*--?([a-z][a-z0-9]*)(?:[=\])]|$)`)

// flagsIn returns the names of the flags that the command line line names.
func flagsIn(line string) []string {
	var names []string
	for _, w := range strings.Fields(line) {
		if m := flagWord.FindStringSubmatch(w); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}
