// Package cli is the command-line convention of pctab's commands, the go
// command's: every action is a named subcommand; "CMD help" lists them and
// "CMD help SUB" describes one, on standard output with exit status 0; a
// usage error (an unknown subcommand or flag, a flag after the arguments, a
// missing argument, a bad flag value) exits 2 with a short usage on
// standard error, and a failure exits 1 with "CMD: message" on standard
// error. "CMD -h" and "CMD SUB -h" print the same help as "CMD help" and
// "CMD help SUB", on standard output with exit status 0, as the flag
// package's programs do (the go command prints a short usage on standard
// error and exits 2 instead).
//
// Flags go before the arguments, as the go command's: a defined flag (or
// -h) after the first argument is a usage error that says so, rather than
// a file or package of that name; "--" ends the flags, after which any
// word is an argument.
//
// A command is a [Program] holding a table of [Command]s; adding a
// subcommand is adding one entry to that table.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit statuses, as the go command's.
const (
	ExitOK      = 0 // success, and -h or help
	ExitFailure = 1 // the command failed
	ExitUsage   = 2 // the command line is wrong
)

// Env is what a running command writes to.
type Env struct {
	Ctx    context.Context
	Stdout io.Writer
	Stderr io.Writer
}

// A RunFunc runs a command on the arguments left after its flags. An error
// made by [Usagef] is a usage error (exit 2), an [ExitError] exits with its
// code, and any other error is a failure (exit 1).
type RunFunc func(env *Env, args []string) error

// A Command is one subcommand of a [Program].
type Command struct {
	Name  string // the word that selects it, such as "verify"
	Args  string // what follows the name in its usage line, such as "[-j N] [-json] BINARY..."
	Short string // a line for the command list, starting in lower case
	Long  string // its description in help, in paragraphs (optional)

	// Flags declares the command's flags on fs and returns the function
	// that runs the command. It is called once per run, and once more by
	// help to list the flags, so it must do nothing else.
	Flags func(fs *flag.FlagSet) RunFunc

	// RawArgs passes every argument to the command unparsed, such as those
	// of a wrapped go command; only a first argument -h, -help or --help
	// prints the command's help. Flags must declare no flag.
	RawArgs bool

	// MovedTo, when not empty, is the command line that now does what this
	// command did. Running the command is a usage error that says so, and
	// help lists it apart, with where it went.
	MovedTo string
}

// A Program is a command made of subcommands.
type Program struct {
	Name     string // the command's name, such as "pctab-stats"
	Doc      string // a paragraph or more for the top of "CMD help"
	Commands []*Command

	// Default, when not empty, names the command that runs when there is
	// no argument or the first argument is a flag or an operand of that
	// command (see Operand), so that "CMD ARGS" is short for "CMD Default ARGS".
	Default string

	// Operand reports whether a first argument that is neither a command
	// nor a flag is an operand of the Default command (such as a file);
	// if not, or if Operand is nil, it is an unknown command.
	Operand func(arg string) bool
}

// A usageError is an error in the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// Usagef returns a usage error: the command exits 2 after printing it and
// the command's usage line. It formats as fmt.Errorf, so %w wraps.
func Usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// IsUsage reports whether err is, or wraps, a usage error from [Usagef].
func IsUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

// An ExitError makes the command exit with status Code without printing
// anything more, as when it ran another program that already reported its
// failure.
type ExitError struct{ Code int }

// Error returns "exit status N".
func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// IsFile is a Program.Operand: arg names an existing file, or a symbolic
// link even if it leads nowhere (opening it says why), or is a path with a
// directory part.
func IsFile(arg string) bool {
	if strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, os.PathSeparator) {
		return true
	}
	_, err := os.Lstat(arg)
	return err == nil
}

// CheckOutput returns a usage error if out, the file that flag (such as
// "-o") names for the command to write, is one of the inputs it reads: the
// same file by any name, such as a hard link or a symbolic link. Writing
// it would destroy the input, or leave a half-read input behind.
func CheckOutput(flag, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	ost, err := os.Stat(out)
	if err != nil {
		return nil // a new file: no input
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(ost, ist) {
			return Usagef("%s %s is the input %s: write the output to another file", flag, out, in)
		}
	}
	return nil
}

// Main runs the program on the process's arguments and exits.
func (p *Program) Main() {
	os.Exit(p.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Lookup returns the command named name, or nil.
func (p *Program) Lookup(name string) *Command {
	for _, c := range p.Commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// Run runs the program on args (without the program's name) and returns
// its exit status.
func (p *Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		if p.Default != "" {
			return p.runCommand(ctx, p.Lookup(p.Default), args, stdout, stderr)
		}
		p.WriteUsage(stderr)
		return ExitUsage
	}
	arg := args[0]
	switch {
	case isHelpFlag(arg):
		p.WriteUsage(stdout)
		return ExitOK
	case arg == "help":
		return p.help(args[1:], stdout, stderr)
	}
	if c := p.Lookup(arg); c != nil {
		return p.runCommand(ctx, c, args[1:], stdout, stderr)
	}
	if p.Default != "" && (strings.HasPrefix(arg, "-") || p.Operand != nil && p.Operand(arg)) {
		return p.runCommand(ctx, p.Lookup(p.Default), args, stdout, stderr)
	}
	if name := flagName(arg); name != "" {
		// As the go command: the program itself has no flags.
		fmt.Fprintf(stderr, "flag provided but not defined: -%s\nusage: %s <command> [arguments]\nRun '%s help' for usage.\n", name, p.Name, p.Name)
		return ExitUsage
	}
	what := ""
	if p.Default != "" && p.Operand != nil {
		what = " (nor a file)"
	}
	fmt.Fprintf(stderr, "%s: unknown command %q%s\nRun '%s help' for usage.\n", p.Name, arg, what, p.Name)
	return ExitUsage
}

// help is "CMD help [COMMAND]".
func (p *Program) help(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		p.WriteUsage(stdout)
		return ExitOK
	case 1:
		c := p.Lookup(args[0])
		if c == nil {
			fmt.Fprintf(stderr, "%s help %s: unknown help topic. Run '%s help'.\n", p.Name, args[0], p.Name)
			return ExitUsage
		}
		p.WriteHelp(stdout, c)
		return ExitOK
	}
	fmt.Fprintf(stderr, "usage: %s help [command]\n\nToo many arguments given.\n", p.Name)
	return ExitUsage
}

// WriteUsage writes the program's help: its doc and its commands.
func (p *Program) WriteUsage(w io.Writer) {
	if p.Doc != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(p.Doc))
	}
	fmt.Fprintf(w, "Usage:\n\n\t%s <command> [arguments]\n", p.Name)
	if d := p.Lookup(p.Default); d != nil {
		fmt.Fprintf(w, "\t%s %s    (%s %s)\n", p.Name, d.Args, p.Name, d.Name)
	}
	fmt.Fprintf(w, "\nThe commands are:\n\n")
	width := 0
	for _, c := range p.Commands {
		width = max(width, len(c.Name))
	}
	for _, c := range p.Commands {
		if c.MovedTo != "" {
			continue
		}
		fmt.Fprintf(w, "\t%-*s  %s\n", width, c.Name, c.Short)
	}
	moved := false
	for _, c := range p.Commands {
		if c.MovedTo == "" {
			continue
		}
		if !moved {
			fmt.Fprintf(w, "\nThese commands have moved:\n\n")
			moved = true
		}
		fmt.Fprintf(w, "\t%-*s  use %s\n", width, c.Name, c.MovedTo)
	}
	fmt.Fprintf(w, "\nUse \"%s help <command>\" for more information about a command.\n", p.Name)
}

// WriteHelp writes command c's help: its usage line, description and flags.
func (p *Program) WriteHelp(w io.Writer, c *Command) {
	if c.MovedTo != "" {
		fmt.Fprintf(w, "%s %s has moved: use %s\n", p.Name, c.Name, c.MovedTo)
		return
	}
	fmt.Fprintf(w, "usage: %s\n\n", p.usageLine(c))
	if c.Long != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(c.Long))
	} else if c.Short != "" {
		fmt.Fprintf(w, "%s %s: %s.\n\n", p.Name, c.Name, strings.TrimSuffix(c.Short, "."))
	}
	if c.Name == p.Default {
		fmt.Fprintf(w, "\"%s %s\" is short for \"%s %s %s\".\n\n", p.Name, c.Args, p.Name, c.Name, c.Args)
	}
	fs := p.flagSet(c, w)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "Flags:\n")
		fs.PrintDefaults()
	}
}

func (p *Program) usageLine(c *Command) string {
	return strings.TrimSpace(p.Name + " " + c.Name + " " + c.Args)
}

// flagSet returns a flag set with c's flags, writing to w.
func (p *Program) flagSet(c *Command, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(p.Name+" "+c.Name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {}
	if c.Flags != nil {
		c.Flags(fs)
	}
	return fs
}

// shortUsage writes c's usage line and where to find more, after a usage
// error.
func (p *Program) shortUsage(w io.Writer, c *Command) {
	fmt.Fprintf(w, "usage: %s\nRun '%s help %s' for details.\n", p.usageLine(c), p.Name, c.Name)
}

func (p *Program) runCommand(ctx context.Context, c *Command, args []string, stdout, stderr io.Writer) int {
	if c.MovedTo != "" {
		fmt.Fprintf(stderr, "%s %s has moved: use %s\n", p.Name, c.Name, c.MovedTo)
		return ExitUsage
	}
	fs := flag.NewFlagSet(p.Name+" "+c.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	var run RunFunc
	if c.Flags != nil {
		run = c.Flags(fs)
	}
	if run == nil {
		panic("cli: command " + c.Name + " has no RunFunc")
	}
	if c.RawArgs {
		if len(args) > 0 && isHelpFlag(args[0]) {
			p.WriteHelp(stdout, c)
			return ExitOK
		}
	} else {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				p.WriteHelp(stdout, c)
				return ExitOK
			}
			// The flag package printed the error.
			p.shortUsage(stderr, c)
			return ExitUsage
		}
		if err := flagAfterArgs(fs, args); err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
			p.shortUsage(stderr, c)
			return ExitUsage
		}
		args = fs.Args()
	}
	err := run(&Env{Ctx: ctx, Stdout: stdout, Stderr: stderr}, args)
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case IsUsage(err):
		fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
		p.shortUsage(stderr, c)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
	return ExitFailure
}

// flagName returns the name of the flag that arg spells (-name, --name,
// -name=value), or "" if arg is no flag.
func flagName(arg string) string {
	if len(arg) < 2 || arg[0] != '-' || arg == "--" {
		return ""
	}
	name := strings.TrimPrefix(arg[1:], "-")
	name, _, _ = strings.Cut(name, "=")
	return name
}

// flagAfterArgs returns an error if an argument that fs left after its
// flags (all of args that fs.Parse did not consume) names one of fs's
// flags or asks for help: the flag package stops at the first argument, so
// such a flag would silently become an argument, such as a file named
// "-json". After "--" every word is an argument.
func flagAfterArgs(fs *flag.FlagSet, args []string) error {
	rest := fs.Args()
	if len(rest) == 0 {
		return nil
	}
	if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
		return nil
	}
	for _, a := range rest {
		name := flagName(a)
		if name == "" {
			continue
		}
		if fs.Lookup(name) != nil || isHelpFlag(a) {
			return fmt.Errorf("flag -%s after the argument %q: flags go before the arguments", name, rest[0])
		}
	}
	return nil
}
