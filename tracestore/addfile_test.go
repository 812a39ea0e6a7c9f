package tracestore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestAddFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), dir, Options{}); err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "labels.idx"), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	for _, content := range [][]byte{[]byte("first index"), []byte("a second, longer index")} {
		write(content)
		if err := AddFile(dir, "labels.idx", true); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.File("labels.idx")
		n := 0
		for _, f := range s.Manifest().Files {
			if f.Name == "labels.idx" {
				n++
				if !f.Optional {
					t.Errorf("labels.idx listed as required")
				}
			}
		}
		if err != nil || !bytes.Equal(got, content) || n != 1 {
			t.Errorf("File(labels.idx) = %q, %v, listed %d times; want %q once", got, err, n, content)
		}
		s.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, fileManifest+".tmp")); !os.IsNotExist(err) {
		t.Errorf("the temporary manifest is left behind: %v", err)
	}
	// An optional file that goes away does not stop Open.
	os.Remove(filepath.Join(dir, "labels.idx"))
	if s, err := Open(dir); err != nil {
		t.Errorf("Open without the optional file: %v", err)
	} else {
		s.Close()
	}
	for _, name := range []string{"", ".", "..", "a/b", fileManifest, fileSpans, fileEvents, "missing.idx"} {
		if err := AddFile(dir, name, true); err == nil {
			t.Errorf("AddFile(%q) succeeded", name)
		}
	}
}
