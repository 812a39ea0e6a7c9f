// Package population builds a population of real, widely used Go programs,
// fetched through the module proxy at pinned versions, with the local Go
// toolchain (stock) and with pctab's patched toolchain and its twin in
// each of a list of table formats, and measures what the linear tables cost
// each of them: the real file change against the stock build, checked at
// every PC against the twin (toolchain.Check), next to pctab-stats'
// estimate (package report) from the stock binary.
//
// Builds and results are cached under a directory outside the repository
// (by default $HOME/.cache/pctab-population). Every file is written under a
// temporary name and renamed, so an interrupted run resumes where it
// stopped: a later run builds only what is missing and measures only what
// has no result file yet.
package population

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// programsFile is the pinned population (programs.txt): one program a line,
// "name module package version [args...]", '#' starts a comment, which on
// a program's line says what the program is.
//
//go:embed programs.txt
var programsFile []byte

// A Program is one program of the population.
type Program struct {
	Name    string   // short name, unique, used in file names ("hugo")
	Module  string   // module path ("github.com/gohugoio/hugo")
	Package string   // main package, relative to the module root ("." or "cmd/caddy")
	Version string   // pinned module version ("v0.150.0")
	Args    []string // arguments of the one run of each binary (default --version)
	Doc     string   // what it is, the line's comment ("static site generator")
}

// ImportPath returns the main package's import path.
func (p Program) ImportPath() string {
	if p.Package == "." || p.Package == "" {
		return p.Module
	}
	return p.Module + "/" + p.Package
}

// ErrSyntax is returned, wrapped with the line, for a malformed programs line.
var ErrSyntax = errors.New("population: malformed programs line")

// ParsePrograms reads a programs file (the format of programs.txt).
func ParsePrograms(r io.Reader) ([]Program, error) {
	var ps []Program
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s, doc, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: %w: want name, module, package, version, got %q", line, ErrSyntax, s)
		}
		p := Program{Name: f[0], Module: f[1], Package: f[2], Version: f[3], Args: f[4:], Doc: strings.TrimSpace(doc)}
		if !validName(p.Name) {
			return nil, fmt.Errorf("line %d: %w: name %q (want letters, digits, '-', '_', '.')", line, ErrSyntax, p.Name)
		}
		if !strings.HasPrefix(p.Version, "v") {
			return nil, fmt.Errorf("line %d: %w: version %q", line, ErrSyntax, p.Version)
		}
		if strings.HasPrefix(p.Package, "/") || strings.Contains(p.Package, "..") {
			return nil, fmt.Errorf("line %d: %w: package %q must be inside the module", line, ErrSyntax, p.Package)
		}
		if prev, ok := seen[p.Name]; ok {
			return nil, fmt.Errorf("line %d: %w: name %q already on line %d", line, ErrSyntax, p.Name, prev)
		}
		seen[p.Name] = line
		if len(p.Args) == 0 {
			p.Args = []string{"--version"}
		}
		ps = append(ps, p)
	}
	return ps, sc.Err()
}

// Programs returns the pinned population.
func Programs() ([]Program, error) { return ParsePrograms(bytes.NewReader(programsFile)) }

func validName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// writeFileAtomic writes data to path under a temporary name and renames it.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
