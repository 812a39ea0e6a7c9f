package population

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// decodeLines decodes JSON lines as population -o writes them.
func decodeLines(t *testing.T, jsonl string) []Line {
	t.Helper()
	var lines []Line
	dec := json.NewDecoder(strings.NewReader(jsonl))
	dec.DisallowUnknownFields()
	for dec.More() {
		var l Line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	return lines
}

// Three programs' lines: a, built and checked, above Outlier; b, built,
// its check failed and its run differs; c, whose build failed.
const testJSONL = `{"schema_version":1,"program":"a","module":"example.com/a","package":"cmd/a","version":"v1.0.0","go_version":"go1.26.8","build_flags":["-trimpath"],"stock":{"bytes":10000000,"functions":100,"pctab_bytes":1200000,"pclntab_bytes":3000000,"estimates":[{"variant":"compact-fast","tables_file_delta_percent":1.1,"file_delta_percent":1.5}],"run":{"args":["--version"],"exit_code":0,"timed_out":false,"output_bytes":5,"output_sha256":"x"}},"formats":[{"format":"compact-fast","tags":[],"bytes":10125000,"file_delta_bytes":125000,"file_delta_percent":1.25,"twin_bytes":10000500,"twin_delta_percent":1.245,"pctab_bytes":1325000,"twin_pctab_bytes":1200000,"estimate_variant":"compact-fast","estimate_file_delta_percent":1.1,"check":{"ok":true,"tables":10,"pcs":1000,"mismatches":0},"run":{"args":["--version"],"exit_code":0,"timed_out":false,"output_bytes":5,"output_sha256":"x"},"same_run":true}]}
{"schema_version":1,"program":"b","module":"example.com/b","package":".","version":"v2.0.0","go_version":"go1.26.8","build_flags":["-trimpath"],"stock":{"bytes":2000000,"functions":10,"pctab_bytes":200000,"pclntab_bytes":500000,"estimates":[],"run":{"args":["-h"],"exit_code":2,"timed_out":false,"output_bytes":5,"output_sha256":"y"}},"formats":[{"format":"compact-fast","tags":[],"bytes":2008000,"file_delta_bytes":8000,"file_delta_percent":0.4,"twin_bytes":2000100,"twin_delta_percent":0.39,"pctab_bytes":208000,"twin_pctab_bytes":200000,"check":{"ok":false,"tables":5,"pcs":500,"mismatches":3},"run":{"args":["-h"],"exit_code":1,"timed_out":false,"output_bytes":5,"output_sha256":"z"},"same_run":false}]}
{"schema_version":1,"program":"c","module":"example.com/c","package":".","version":"v3.0.0","go_version":"go1.26.8","build_flags":["-trimpath"],"formats":[],"error":"building example.com/c@v3.0.0 stock (stock): exit status 1 | x\nmore"}
`

func TestWriteMarkdown(t *testing.T) {
	lines := decodeLines(t, testJSONL)
	progs := []Program{
		{Name: "a", Module: "example.com/a", Package: "cmd/a", Version: "v1.0.0", Doc: "a tool"},
		{Name: "b", Module: "example.com/b", Package: ".", Version: "v2.0.0", Doc: "a | server"},
		{Name: "c", Module: "example.com/c", Package: ".", Version: "v3.0.0"},
		{Name: "d", Module: "example.com/d", Package: ".", Version: "v4.0.0", Doc: "never built"},
	}
	opts := MarkdownOptions{Programs: progs, Command: "pctab-toolchain population -md x.md", Machine: "a 2-core VM", Date: "2026-11-26"}
	for _, tc := range []struct {
		name  string
		lines []Line
		opts  MarkdownOptions
		want  []string // lines of the output, each must be there
		not   []string // substrings that must not be
	}{
		{
			name: "population", lines: lines, opts: opts,
			want: []string{
				"Made by `pctab-toolchain population -md x.md` on a 2-core VM, 2026-11-26. 2 of the 4 programs built, checked and run; 1 failed; 1 not built.",
				"| program | domain | module @ version | stock (bytes) | pctab/file | compact-fast | estimate | tables | check | run |",
				"| a | a tool | `example.com/a/cmd/a` v1.0.0 | 10,000,000 | 12.0% | **+1.25%** | +1.10% | 1.104× | ok | `--version`: exit 0 |",
				"| b | a \\| server | `example.com/b` v2.0.0 | 2,000,000 | 10.0% | **+0.40%** | - | 1.040× | FAIL: 3 mismatches | `-h`: exit 1, differs from stock |",
				"| c |  | `example.com/c` v3.0.0 | | | | | | failed: building example.com/c@v3.0.0 stock (stock): exit status 1 \\| x | |",
				"| d | never built | `example.com/d` v4.0.0 | | | | | | not built | |",
				"- **check**: 1 of 2 patched builds matched their twins at every PC (1,000 (table, PC) pairs).",
				"- **run**: 1 of 2 patched builds exited as their stock builds did, with the same output.",
				"| compact-fast | 2 | +0.82% | +1.25% | +1.25% (a) | 1 | a +1.25% |",
			},
			not: []string{"more"},
		},
		{
			name: "lines alone", lines: lines[:2], opts: MarkdownOptions{Command: "cmd"},
			want: []string{
				"Made by `cmd`. 2 of the 2 programs built, checked and run.",
				"| a |  | `example.com/a/cmd/a` v1.0.0 | 10,000,000 | 12.0% | **+1.25%** | +1.10% | 1.104× | ok | `--version`: exit 0 |",
				"| compact-fast | 2 | +0.82% | +1.25% | +1.25% (a) | 1 | a +1.25% |",
			},
			not: []string{"not built", "failed"},
		},
		{
			name: "two formats", lines: twoFormats(lines[:2]), opts: MarkdownOptions{Command: "cmd"},
			want: []string{
				"| program | domain | module @ version | stock (bytes) | pctab/file | compact-fast | estimate | tables | small | estimate | tables | check | run |",
				"| a |  | `example.com/a/cmd/a` v1.0.0 | 10,000,000 | 12.0% | **+1.25%** | +1.10% | 1.104× | **+0.30%** | - | 1.104× | compact-fast: ok; small: ok | compact-fast: `--version`: exit 0; small: `--version`: exit 0 |",
				"| compact-fast | 2 | +0.82% | +1.25% | +1.25% (a) | 1 | a +1.25% |",
				"| small | 2 | +0.20% | +0.30% | +0.30% (a) | 0 | none |",
				"- **check**: 3 of 4 patched builds matched their twins at every PC (2,500 (table, PC) pairs).",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteMarkdown(&buf, tc.lines, tc.opts); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			got := strings.Split(out, "\n")
			for _, w := range tc.want {
				if !contains(got, w) {
					t.Errorf("no line\n%s\nin\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("%q in\n%s", n, out)
				}
			}
			checkTables(t, out)
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// twoFormats adds a second format, "small", to each line: half the change
// of the first, checked.
func twoFormats(lines []Line) []Line {
	var out []Line
	for _, l := range lines {
		r := l.Formats[0]
		r.Format, r.FileDeltaPercent, r.EstimateFileDeltaPercent = "small", r.FileDeltaPercent/2, nil
		if l.Program == "a" {
			r.FileDeltaPercent = 0.3
		} else {
			r.FileDeltaPercent = 0.1
		}
		r.Check.OK, r.Check.Mismatches = true, 0
		l.Formats = append(append([]Result{}, l.Formats...), r)
		out = append(out, l)
	}
	return out
}

// checkTables checks that every row of each Markdown table has as many
// cells as its header.
func checkTables(t *testing.T, md string) {
	t.Helper()
	cells := func(row string) int { return strings.Count(strings.ReplaceAll(row, `\|`, ""), "|") }
	want := -1
	for _, row := range strings.Split(md, "\n") {
		if !strings.HasPrefix(row, "|") {
			want = -1
			continue
		}
		if want < 0 {
			want = cells(row)
			continue
		}
		if n := cells(row); n != want {
			t.Errorf("row with %d cells, header %d: %s", n-1, want-1, row)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "# title\n\nprose\n\n" + BeginMarker + "\nold table\nold\n" + EndMarker + "\n\nmore prose\n"
	for _, tc := range []struct {
		name, doc, section, want string
		err                      bool
	}{
		{name: "replace", doc: doc, section: "new\n", want: "# title\n\nprose\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\n\nmore prose\n"},
		{name: "no newline", doc: doc, section: "new", want: "# title\n\nprose\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\n\nmore prose\n"},
		{name: "empty section", doc: BeginMarker + "\n" + EndMarker + "\n", section: "", want: BeginMarker + "\n" + EndMarker + "\n"},
		{name: "no markers", doc: "# title\n", section: "x", err: true},
		{name: "no end", doc: BeginMarker + "\nx\n", section: "x", err: true},
		{name: "end first", doc: EndMarker + "\n" + BeginMarker + "\n", section: "x", err: true},
		{name: "twice", doc: doc + doc, section: "x", err: true},
		{name: "end inside a line", doc: BeginMarker + "\nx" + EndMarker + "\n", section: "x", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReplaceSection([]byte(tc.doc), []byte(tc.section))
			if tc.err {
				if !errors.Is(err, ErrNoSection) {
					t.Errorf("error %v, want ErrNoSection", err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}
