package objscan

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOpenNotRegular checks that Open refuses what is not a regular file,
// naming its kind, without reading from it: a named pipe with no writer
// (which blocked Open in open(2) before), /dev/zero (which has no size),
// /dev/null, a directory and a symbolic link to one. A symbolic link loop
// and an empty regular file get their own errors.
func TestOpenNotRegular(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name, path, want string
		notRegular       bool
	}
	cases := []tc{
		{"directory", sub, "a directory", true},
		{"symlink to a directory", link, "a directory", true},
		{"symlink loop", loop, "too many levels", false},
		{"empty file", empty, "empty file", false},
	}
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
		cases = append(cases, tc{"/dev/zero", "/dev/zero", "a character device", true}, tc{"/dev/null", "/dev/null", "a character device", true})
	}
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(t, fifo); err == nil {
		cases = append(cases, tc{"named pipe", fifo, "a named pipe", true})
	} else {
		t.Logf("no named pipe: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(c.path)
			if err == nil {
				f.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrNotRegular) != c.notRegular {
				t.Errorf("error %q: want one containing %q, wrapping ErrNotRegular: %v", err, c.want, c.notRegular)
			}
		})
	}
}
