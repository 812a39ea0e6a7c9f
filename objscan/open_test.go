package objscan

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
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
	if err := testenv.Mkfifo(t, fifo); err == nil {
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

// TestELFGOOS checks how the GOOS of an ELF binary is told when neither
// its build info (Go 1.17 and earlier record no GOOS) nor its OSABI byte
// (set for FreeBSD, NetBSD and OpenBSD only) says: go1.9.7's solaris/amd64
// and go1.10.8's dragonfly/amd64 builds were reported as linux/amd64.
func TestELFGOOS(t *testing.T) {
	for _, tc := range []struct {
		table, interp, want string
	}{
		{"\x00runtime/os_dragonfly.go\x00runtime/proc.go\x00", "", "dragonfly"},
		{"runtime/rt0_dragonfly_amd64.s\x00", "", "dragonfly"},
		{"/usr/local/go/src/runtime/os_solaris.go\x00", "", "solaris"},
		{"/usr/local/go/src/runtime/rt0_solaris_amd64.s\x00", "", "solaris"},
		{"runtime/os_solaris.go\x00runtime/os_illumos.go\x00", "/lib/amd64/ld.so.1", "illumos"},
		{"runtime/os_solaris.go\x00runtime/rt0_illumos_amd64.s\x00", "", "illumos"}, // go1.13
		{"C:/go/src/runtime/os_solaris.c\x00", "", "solaris"},                       // Go 1.3 and 1.4: the runtime in C
		{"runtime/os_linux.go\x00runtime/rt0_android_arm64.s\x00", "", "android"},
		{"runtime/os_linux.go\x00", "/lib/amd64/ld.so.1", "solaris"},
		{"runtime/os_linux.go\x00", "/system/bin/linker64", "android"},
		{"runtime/os_linux.go\x00", "/lib64/ld-linux-x86-64.so.2", "linux"},
		{"runtime/os_linux.go\x00runtime/rt0_linux_amd64.s\x00", "", "linux"},
		{"myruntime/os_dragonfly.go\x00", "", "linux"}, // not the runtime's file
		{"runtime/os_dragonflyx.go\x00", "", "linux"},
		{"", "", "linux"},
	} {
		if got := elfGOOS([]byte(tc.table), tc.interp); got != tc.want {
			t.Errorf("elfGOOS(%q, %q) = %q, want %q", tc.table, tc.interp, got, tc.want)
		}
	}
}
