package pctab_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines is the longest README.md may be: the README is the first
// screen a newcomer reads, and everything longer belongs in docs/.
const maxReadmeLines = 200

// docFiles returns README.md and every Markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(files, more...)
}

// mdLine is one line of a Markdown file outside fenced code blocks.
type mdLine struct {
	num  int
	text string
}

// proseLines returns the lines of a Markdown file that are not inside
// fenced code blocks, with their line numbers.
func proseLines(path string) ([]mdLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []mdLine
	var fence string // the open fence's marker, or ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		lines = append(lines, mdLine{n, line})
	}
	return lines, sc.Err()
}

var (
	codeSpan   = regexp.MustCompile("`[^`]*`")
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)\)`)
)

// anchors returns the heading anchors of a Markdown file as GitHub
// computes them: the heading's text, lower-cased, without its markup and
// punctuation, spaces turned into hyphens, and -1, -2, ... appended to
// repeats.
func anchors(path string) (map[string]bool, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool)
	seen := make(map[string]int)
	for _, l := range lines {
		if !strings.HasPrefix(l.text, "#") {
			continue
		}
		h := strings.TrimLeft(l.text, "#")
		if h == "" || h[0] != ' ' {
			continue // not a heading: "#" must be followed by a space
		}
		a := anchor(h)
		if n := seen[a]; n > 0 {
			set[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set, nil
}

// anchor is GitHub's anchor for a heading's text.
func anchor(heading string) string {
	h := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(heading), "#"))
	h = inlineLink.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{" Results", "results"},
		{" Against the #61984 reference decoder", "against-the-61984-reference-decoder"},
		{" Go 1.2–1.17 layouts", "go-12117-layouts"},
		{" pctab-stats verify: every codec at every PC", "pctab-stats-verify-every-codec-at-every-pc"},
		{" Time and memory against the #61984 reference tool", "time-and-memory-against-the-61984-reference-tool"},
		{" The `go` command ##", "the-go-command"},
		{" [Link](x.md) text", "link-text"},
	} {
		if got := anchor(tc.heading); got != tc.want {
			t.Errorf("anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestDocLinks checks that every relative link in README.md and docs/*.md
// points to a file or directory of the repository and, when it names a
// heading (#anchor) of a Markdown file, to a heading that exists.
func TestDocLinks(t *testing.T) {
	anchorCache := make(map[string]map[string]bool)
	for _, file := range docFiles(t) {
		lines, err := proseLines(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			text := codeSpan.ReplaceAllStringFunc(l.text, func(s string) string {
				return strings.Repeat("x", len(s)) // keep "[`x`](y)" a link
			})
			for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
				target := m[2]
				if target == "" {
					t.Errorf("%s:%d: empty link target in %q", file, l.num, m[0])
					continue
				}
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: no such file %s", file, l.num, target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %q: anchor into a file that is not Markdown", file, l.num, target)
					continue
				}
				set, ok := anchorCache[dest]
				if !ok {
					if set, err = anchors(dest); err != nil {
						t.Fatal(err)
					}
					anchorCache[dest] = set
				}
				if !set[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, l.num, target, dest, frag)
				}
			}
		}
	}
}

// TestReadmeLength keeps README.md to the first screens a newcomer reads.
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/", n, maxReadmeLines)
	}
}
