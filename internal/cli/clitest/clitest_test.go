package clitest

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/cli"
)

// docProgram has a default command with flags -n and -json and a command
// taking raw arguments.
func docProgram(args string) *cli.Program {
	run := func(*cli.Env, []string) error { return nil }
	return &cli.Program{
		Name: "prog",
		Commands: []*cli.Command{
			{Name: "show", Args: args, Short: "show", Flags: func(fs *flag.FlagSet) cli.RunFunc {
				fs.Int("n", 1, "count")
				fs.Bool("json", false, "JSON")
				return run
			}},
			{Name: "raw", Args: "ARGS...", Short: "raw", RawArgs: true, Flags: func(fs *flag.FlagSet) cli.RunFunc { return run }},
		},
		Default: "show",
	}
}

func TestFlagNameProblems(t *testing.T) {
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"[-n N] [-json] FILE...", nil},
		{"(-n N | --json=true) [-json] FILE", nil},
		{"[-o DIR] [-n N] FILE", []string{`names -o, which the command does not define`}},
		{"[-interleave=false] FILE", []string{`names -interleave`}},
	} {
		got := flagNameProblems(docProgram(tc.args))
		if !matchAll(got, tc.want) {
			t.Errorf("Args %q: problems %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestDocProblems(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "docs"), 0o777); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "Run `prog -n 3 FILE` or `prog show -json FILE`; prose prog -bogus is not code.\n")
	write("docs/show.md", "# show\n\n```\nprog [-n N] FILE        # prog -nope in a comment\ngo run ./cmd/prog -count 3 x | grep -v y\nprog raw -anything\nprog help show\nprog show -json FILE > out\n```\n\n`-n` and `-json=false`; `prog-other -x`; `prog show --verbose=1`.\n")
	got, err := docProblems(docProgram("[-n N] FILE"), DocConfig{Root: root, Pages: map[string][]string{"show": {"docs/show.md"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docs/show.md:4: prog show -nope: the command has no such flag", // commands in comments are checked too
		"docs/show.md:5: prog show -count: the command has no such flag",
		"docs/show.md:11: prog show -verbose: the command has no such flag",
	}
	if !matchAll(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	write("docs/show.md", "# show\n\nOnly -n.\n")
	got, err = docProblems(docProgram("[-n N] FILE"), DocConfig{Root: root, Pages: map[string][]string{"show": {"docs/show.md"}, "nope": nil}})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{`names no command "nope"`, "prog show: flag -json is not documented in docs/show.md"}
	if !matchAll(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// matchAll reports whether got has as many problems as want and the i-th
// contains want[i].
func matchAll(got, want []string) bool {
	return len(got) == len(want) && !slices.ContainsFunc(got, func(g string) bool {
		i := slices.Index(got, g)
		return !strings.Contains(g, want[i])
	})
}
