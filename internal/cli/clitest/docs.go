package clitest

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/cli"
)

// DocConfig says where a program is documented, for [Docs].
type DocConfig struct {
	// Root is the repository's root, relative to the test's directory
	// (such as "../.."): Docs reads Root/README.md and Root/docs/*.md.
	Root string
	// Pages maps each command's name to the pages, relative to Root, that
	// must mention each of its flags. A command that is not listed, that
	// has moved or takes its arguments raw is not checked.
	Pages map[string][]string
	// ProgramFlags are flags of the program itself that take a value and
	// may come before the command (pctab-toolchain's -go RELEASE).
	ProgramFlags []string
}

// Docs checks p's documentation against its flags: every flag of every
// command in cfg.Pages is mentioned, as -name, on one of the command's
// pages; and every command line of p that README.md or a page of docs/
// shows in code (a code span or a fenced block) names only flags that its
// command defines.
func Docs(t *testing.T, p *cli.Program, cfg DocConfig) {
	t.Helper()
	problems, err := docProblems(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Error(pr)
	}
}

// docProblems returns what Docs finds wrong.
func docProblems(p *cli.Program, cfg DocConfig) ([]string, error) {
	var problems []string
	names := make([]string, 0, len(cfg.Pages))
	for name := range cfg.Pages {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		pages := cfg.Pages[name]
		c := p.Lookup(name)
		if c == nil {
			problems = append(problems, fmt.Sprintf("%s: DocConfig.Pages names no command %q", p.Name, name))
			continue
		}
		var text strings.Builder
		for _, page := range pages {
			b, err := os.ReadFile(filepath.Join(cfg.Root, page))
			if err != nil {
				return nil, err
			}
			text.Write(b)
		}
		flagSet(c).VisitAll(func(f *flag.Flag) {
			if !mentions(text.String(), f.Name) {
				problems = append(problems, fmt.Sprintf("%s %s: flag -%s is not documented in %s", p.Name, name, f.Name, strings.Join(pages, " or ")))
			}
		})
	}
	files, err := filepath.Glob(filepath.Join(cfg.Root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, file := range append([]string{filepath.Join(cfg.Root, "README.md")}, files...) {
		lines, err := codeLines(file)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			for _, cl := range commandLines(l.text, p.Name) {
				problems = append(problems, commandLineProblems(p, cfg, cl, file, l.num)...)
			}
		}
	}
	return problems, nil
}

// mentions reports whether text mentions the flag name as -name, not as
// part of a longer word (-json is not mentioned by -jsonl).
func mentions(text, name string) bool {
	re := regexp.MustCompile(`(^|[^\w-])--?` + regexp.QuoteMeta(name) + `($|[^\w-])`)
	return re.MatchString(text)
}

// A docLine is a line of code in a Markdown file: a line of a fenced block,
// or the text of one code span.
type docLine struct {
	num  int
	text string
}

var codeSpan = regexp.MustCompile("`[^`]+`")

// codeLines returns the lines of fenced code blocks in the Markdown file
// path and the code spans of its other lines.
func codeLines(path string) ([]docLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []docLine
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			out = append(out, docLine{n, line})
			continue
		}
		for _, span := range codeSpan.FindAllString(line, -1) {
			out = append(out, docLine{n, strings.Trim(span, "`")})
		}
	}
	return out, sc.Err()
}

// commandLines returns the command lines of program name in the code
// line: from the name (as a word of its own, or after a path such as
// ./cmd/) to the end of the command: a comment, a pipe, a redirection or
// another command.
func commandLines(line, name string) [][]string {
	var out [][]string
	re := regexp.MustCompile(`(^|[\s/$(])` + regexp.QuoteMeta(name) + `(\s|$)`)
	for _, loc := range re.FindAllStringIndex(line, -1) {
		rest := line[loc[1]:]
		if i := commandEnd.FindStringIndex(rest); i != nil {
			rest = rest[:i[0]]
		}
		out = append(out, strings.Fields(rest))
	}
	return out
}

// commandEnd matches where a command line ends.
var commandEnd = regexp.MustCompile(`\s#|\s\|\s|;|&&|\s>|\s2>`)

// commandLineProblems returns the flags of one command line of p, the
// words after the program's name, that its command does not define.
func commandLineProblems(p *cli.Program, cfg DocConfig, words []string, file string, num int) []string {
	for len(words) > 1 && slices.Contains(cfg.ProgramFlags, strings.TrimLeft(words[0], "-")) {
		words = words[2:]
	}
	name := p.Default
	if len(words) > 0 {
		if words[0] == "help" {
			return nil
		}
		if p.Lookup(words[0]) != nil {
			name, words = words[0], words[1:]
		}
	}
	c := p.Lookup(name)
	if c == nil || c.RawArgs || c.MovedTo != "" {
		return nil
	}
	fs := flagSet(c)
	var problems []string
	for _, f := range flagsIn(strings.Join(words, " ")) {
		if fs.Lookup(f) == nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s %s -%s: the command has no such flag", file, num, p.Name, c.Name, f))
		}
	}
	return problems
}
