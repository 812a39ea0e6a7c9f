package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CorpusVar names the directory of the optional corpus of real binaries;
// its default is ~/.cache/pctab-corpus (docs/testing.md, "The corpus").
const CorpusVar = "PCTAB_CORPUS"

// CorpusDir returns the corpus directory: $PCTAB_CORPUS, or
// ~/.cache/pctab-corpus.
func CorpusDir() string {
	if d := os.Getenv(CorpusVar); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "pctab-corpus")
}

// CorpusFiles returns the binaries the corpus's MANIFEST.md table names,
// or skips t, saying why, when there is no corpus.
func CorpusFiles(t testing.TB) []string {
	t.Helper()
	dir := CorpusDir()
	data, err := os.ReadFile(filepath.Join(dir, "MANIFEST.md"))
	if err != nil {
		t.Skipf("no corpus at %s (set %s; see docs/testing.md): %v", dir, CorpusVar, err)
	}
	var files []string
	for _, line := range strings.Split(string(data), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 3 || !strings.Contains(cols[1], "/") || strings.Contains(cols[1], "---") {
			continue
		}
		files = append(files, filepath.Join(dir, strings.TrimSpace(cols[1])))
	}
	return files
}
