package cli_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/cli/clitest"
)

// testProgram has a default command taking files, a command that fails, a
// command with raw arguments and a moved command.
func testProgram() *cli.Program {
	return &cli.Program{
		Name: "prog",
		Doc:  "Prog is a test program.",
		Commands: []*cli.Command{
			{Name: "show", Args: "[-n N] FILE...", Short: "show files", Long: "Show shows files.",
				Flags: func(fs *flag.FlagSet) cli.RunFunc {
					n := fs.Int("n", 1, "show `N` times")
					return func(env *cli.Env, args []string) error {
						if len(args) == 0 {
							return cli.Usagef("no FILE")
						}
						if *n < 0 {
							return cli.Usagef("-n=%d: %w", *n, errors.New("negative"))
						}
						for _, a := range args {
							if _, err := os.Stat(a); err != nil {
								return err
							}
							fmt.Fprintf(env.Stdout, "shown %s %d\n", a, *n)
						}
						return nil
					}
				}},
			{Name: "exit", Args: "CODE", Short: "exit with CODE",
				Flags: func(fs *flag.FlagSet) cli.RunFunc {
					return func(env *cli.Env, args []string) error {
						var code int
						fmt.Sscan(args[0], &code)
						return &cli.ExitError{Code: code}
					}
				}},
			{Name: "echo", Args: "ARGS...", Short: "print the arguments", RawArgs: true,
				Flags: func(fs *flag.FlagSet) cli.RunFunc {
					return func(env *cli.Env, args []string) error {
						fmt.Fprintln(env.Stdout, args)
						return nil
					}
				}},
			{Name: "old", MovedTo: "prog show FILE"},
		},
		Default: "show",
		Operand: cli.IsFile,
	}
}

func TestProgram(t *testing.T) {
	p := testProgram()
	clitest.FlagNames(t, p)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	cases := append(clitest.Convention(p), []clitest.Case{
		{Name: "help lists", Args: []string{"help"}, Stdout: []string{"Prog is a test program.", "\tshow  show files", "\techo  print the arguments", "prog [-n N] FILE...    (prog show)", "These commands have moved:\n\n\told   use prog show FILE\n"}, NoStderr: true},
		{Name: "help show", Args: []string{"help", "show"}, Stdout: []string{"usage: prog show [-n N] FILE...", "Show shows files.", `"prog [-n N] FILE..." is short for`, "-n N"}, NoStderr: true},
		{Name: "help exit", Args: []string{"help", "exit"}, Stdout: []string{"prog exit: exit with CODE."}, NoStderr: true},
		{Name: "named", Args: []string{"show", "-n", "2", file}, Stdout: []string{"shown " + file + " 2"}, NoStderr: true},
		{Name: "bare flag", Args: []string{"-n", "3", file}, Stdout: []string{"shown " + file + " 3"}, NoStderr: true},
		{Name: "bare file", Args: []string{"f"}, Stdout: []string{"shown f 1"}, NoStderr: true},
		{Name: "bare symlink loop", Args: []string{"loop"}, Code: cli.ExitFailure, Stderr: []string{"prog: stat loop: too many levels of symbolic links"}, NoStdout: true},
		{Name: "bare path", Args: []string{"./missing"}, Code: cli.ExitFailure, Stderr: []string{"prog: stat ./missing: no such file"}, NoStdout: true},
		{Name: "no arguments", Args: nil, Code: cli.ExitUsage, Stderr: []string{"prog show: no FILE", "usage: prog show [-n N] FILE...", "Run 'prog help show'"}, NoStdout: true},
		{Name: "usage error wraps", Args: []string{"show", "-n=-1", file}, Code: cli.ExitUsage, Stderr: []string{"-n=-1: negative"}, NoStdout: true},
		{Name: "bad flag value", Args: []string{"show", "-n=x", file}, Code: cli.ExitUsage, Stderr: []string{"invalid value", "usage: prog show"}, NoStdout: true},
		{Name: "exit code", Args: []string{"exit", "7"}, Code: 7, NoStdout: true, NoStderr: true},
		{Name: "raw args", Args: []string{"echo", "-x", "-h"}, Stdout: []string{"[-x -h]"}, NoStderr: true},
		{Name: "raw args help", Args: []string{"echo", "-h"}, Stdout: []string{"usage: prog echo ARGS..."}, NoStderr: true},
		{Name: "flag after the arguments", Args: []string{"show", file, "-n", "2"}, Code: cli.ExitUsage,
			Stderr: []string{"prog show: flag -n after the argument " + strconv.Quote(file) + ": flags go before the arguments", "usage: prog show"}, NoStdout: true},
		{Name: "flag=value after the arguments", Args: []string{file, "--n=2"}, Code: cli.ExitUsage,
			Stderr: []string{"flag -n after the argument"}, NoStdout: true},
		{Name: "-h after the arguments", Args: []string{"show", file, "-h"}, Code: cli.ExitUsage,
			Stderr: []string{"flag -h after the argument"}, NoStdout: true},
		{Name: "undefined flag after the arguments is an argument", Args: []string{"show", file, "-x"}, Code: cli.ExitFailure,
			Stdout: []string{"shown " + file}, Stderr: []string{"prog: stat -x: no such file"}},
		{Name: "flag after --", Args: []string{"show", "--", file, "-n"}, Code: cli.ExitFailure,
			Stdout: []string{"shown " + file + " 1"}, Stderr: []string{"prog: stat -n: no such file"}},
	}...)
	clitest.Run(t, p, cases)
}

func TestNoDefault(t *testing.T) {
	p := testProgram()
	p.Default = ""
	clitest.Run(t, p, []clitest.Case{
		{Name: "no arguments", Args: nil, Code: cli.ExitUsage, Stderr: []string{"Usage:", "The commands are:"}, NoStdout: true},
		{Name: "flag", Args: []string{"-n", "1"}, Code: cli.ExitUsage, Stderr: []string{"flag provided but not defined: -n", "usage: prog <command> [arguments]", "Run 'prog help'"}, NoStdout: true},
		{Name: "double-dash flag", Args: []string{"--n=1"}, Code: cli.ExitUsage, Stderr: []string{"flag provided but not defined: -n\n"}, NoStdout: true},
		{Name: "double dash alone", Args: []string{"--", "show"}, Code: cli.ExitUsage, Stderr: []string{`unknown command "--"`}, NoStdout: true},
	})
}

func TestIsUsage(t *testing.T) {
	err := fmt.Errorf("outer: %w", cli.Usagef("inner %d", 1))
	if !cli.IsUsage(err) || err.Error() != "outer: inner 1" {
		t.Errorf("IsUsage(%v) = false", err)
	}
	if cli.IsUsage(errors.New("x")) {
		t.Error("IsUsage of a plain error")
	}
}

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	hard, sym := filepath.Join(dir, "hard"), filepath.Join(dir, "sym")
	if err := os.Link(in, hard); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(in, sym); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		out   string
		usage bool
	}{
		{in, true},
		{filepath.Join(dir, ".", "in"), true},
		{hard, true},
		{sym, true},
		{other, false},
		{filepath.Join(dir, "new"), false},
		{"", false},
	} {
		err := cli.CheckOutput("-o", tc.out, "", filepath.Join(dir, "missing"), in)
		if (err != nil) != tc.usage || err != nil && !cli.IsUsage(err) {
			t.Errorf("CheckOutput(-o %s): %v, want a usage error: %v", tc.out, err, tc.usage)
		}
	}
}
