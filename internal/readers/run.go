package readers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A VulnSymbol is one symbol the synthetic vulnerability database of
// [WriteVulnDB] marks as affected.
type VulnSymbol struct {
	Package, Symbol string
}

// FeaturesSymbols returns the symbols the readers' checks mark as affected
// for the features program (testdata/features.txtar): three that it calls
// (fmt.Sprintf, fmt.Sprint, strings.ToUpper) and three that it does not.
func FeaturesSymbols() []VulnSymbol {
	return []VulnSymbol{
		{"fmt", "Sprintf"}, {"fmt", "Sprint"}, {"strings", "ToUpper"},
		{"strings", "Repeat"}, {"sort", "Ints"}, {"sort", "Strings"},
	}
}

// VulnID is the ID of WriteVulnDB's one entry.
const VulnID = "GO-0000-0001"

// WriteVulnDB writes into dir a vulnerability database in govulncheck's
// v1 file layout (index/db.json, index/modules.json, index/vulns.json,
// ID/ID.json) with one synthetic entry, VulnID, that marks the standard
// library's syms as affected in every release. It stands in for
// vuln.go.dev, which is not reachable here: govulncheck -db file://DIR
// then reports which of syms it finds in a binary's symbol table (and
// every one of them when it reads no symbol table).
func WriteVulnDB(dir string, syms []VulnSymbol) error {
	const modified = "2026-11-26T00:00:00Z"
	type imp struct {
		Path    string   `json:"path"`
		Symbols []string `json:"symbols"`
	}
	var imps []imp
	for _, s := range syms {
		i := slices.IndexFunc(imps, func(m imp) bool { return m.Path == s.Package })
		if i < 0 {
			imps = append(imps, imp{Path: s.Package})
			i = len(imps) - 1
		}
		imps[i].Symbols = append(imps[i].Symbols, s.Symbol)
	}
	entry := map[string]any{
		"schema_version": "1.3.1",
		"id":             VulnID,
		"modified":       modified,
		"published":      modified,
		"details":        "Synthetic entry of pctab's reader tests: marks standard library symbols as affected so that govulncheck -mode=binary reports which of them it finds in a binary.",
		"affected": []any{map[string]any{
			"package":            map[string]string{"name": "stdlib", "ecosystem": "Go"},
			"ranges":             []any{map[string]any{"type": "SEMVER", "events": []any{map[string]string{"introduced": "0"}}}},
			"ecosystem_specific": map[string]any{"imports": imps},
		}},
		"database_specific": map[string]string{"url": "https://pkg.go.dev/vuln/" + VulnID},
	}
	files := map[string]any{
		"index/db.json":          map[string]string{"modified": modified},
		"index/modules.json":     []any{map[string]any{"path": "stdlib", "vulns": []any{map[string]string{"id": VulnID, "modified": modified}}}},
		"index/vulns.json":       []any{map[string]string{"id": VulnID, "modified": modified}},
		"ID/" + VulnID + ".json": entry,
	}
	for name, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Govulncheck runs the govulncheck command bin with -mode=binary on binary
// against the database in db (a directory, see WriteVulnDB) and returns
// the affected symbols it reports at symbol level ("fmt.Sprintf"), sorted.
func Govulncheck(ctx context.Context, bin, db, binary string) ([]string, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-db", "file://"+filepath.ToSlash(abs), "-mode=binary", "-format", "json", binary)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("readers: govulncheck %s: %w\n%s", binary, err, bytes.TrimSpace(stderr.Bytes()))
	}
	dec := json.NewDecoder(&out)
	var syms []string
	for dec.More() {
		var msg struct {
			Finding *struct {
				Trace []struct {
					Package, Function, Receiver string
				}
			}
		}
		if err := dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("readers: govulncheck %s: %w", binary, err)
		}
		if msg.Finding == nil || len(msg.Finding.Trace) == 0 {
			continue
		}
		t := msg.Finding.Trace[0]
		if t.Function == "" {
			continue // a module or package level finding
		}
		name := t.Package + "." + t.Function
		if t.Receiver != "" {
			name = t.Package + "." + t.Receiver + "." + t.Function
		}
		syms = append(syms, name)
	}
	slices.Sort(syms)
	return slices.Compact(syms), nil
}

// A Frame is one frame of a stack Delve printed.
type Frame struct {
	Func string
	File string // as Delve prints it, e.g. "./main.go"
	Line int
}

// DelveSession is what one non-interactive Delve run printed.
type DelveSession struct {
	Output      string  // everything, without terminal colours
	Breakpoints []Frame // "Breakpoint N set at ADDR for FUNC() FILE:LINE", in order
	Stacks      [][]Frame
}

var (
	ansiRE  = regexp.MustCompile("\x1b\\[[0-9;]*m")
	bpRE    = regexp.MustCompile(`(?m)^Breakpoint \d+ set at 0x[0-9a-f]+ for (\S+)\(\) (\S+):(\d+)$`)
	frameRE = regexp.MustCompile(`^ *(\d+)  0x[0-9a-f]+ in (\S+)$`)
	atRE    = regexp.MustCompile(`^ +at (\S*):(-?\d+)$`)
)

// Delve runs dlv exec on binary non-interactively: it sets a breakpoint on
// each of funcs, and at each stop continues and prints the stack with the
// stack command, up to stops times, then exits.
func Delve(ctx context.Context, dlv, binary string, funcs []string, stops int) (*DelveSession, error) {
	var script strings.Builder
	for _, f := range funcs {
		fmt.Fprintf(&script, "break %s\n", f)
	}
	for range stops {
		script.WriteString("continue\nstack\n")
	}
	script.WriteString("exit\n")
	dir, err := os.MkdirTemp("", "pctab-dlv-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	init := filepath.Join(dir, "init")
	if err := os.WriteFile(init, []byte(script.String()), 0o644); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, dlv, "exec", "--allow-non-terminal-interactive=true", "--init", init, binary)
	cmd.Stdin = strings.NewReader("")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "TERM=dumb")
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("readers: dlv exec %s: %w\n%s", binary, err, bytes.TrimSpace(out.Bytes()))
	}
	return parseDelve(ansiRE.ReplaceAllString(out.String(), "")), nil
}

func parseDelve(text string) *DelveSession {
	s := &DelveSession{Output: text}
	for _, m := range bpRE.FindAllStringSubmatch(text, -1) {
		s.Breakpoints = append(s.Breakpoints, Frame{Func: m[1], File: m[2], Line: mustAtoi(m[3])})
	}
	var cur []Frame
	for _, line := range strings.Split(text, "\n") {
		if m := frameRE.FindStringSubmatch(line); m != nil {
			if m[1] == "0" && cur != nil {
				s.Stacks = append(s.Stacks, cur)
				cur = nil
			}
			cur = append(cur, Frame{Func: m[2]})
			continue
		}
		if m := atRE.FindStringSubmatch(line); m != nil && len(cur) > 0 {
			cur[len(cur)-1].File, cur[len(cur)-1].Line = m[1], mustAtoi(m[2])
		}
	}
	if cur != nil {
		s.Stacks = append(s.Stacks, cur)
	}
	return s
}

// mustAtoi converts the digits a regexp matched.
func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
