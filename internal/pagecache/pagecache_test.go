package pagecache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDrop(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 1<<16), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := Drop(p); err != nil && !errors.Is(err, ErrUnsupported) {
		t.Fatal(err)
	}
	if err := Drop(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Drop of a missing file succeeded")
	}
}
