package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var noticeOnce sync.Once

// notice writes one line to the standard error of the go command that runs
// this test binary, the first time any test binary of that go command
// skips a long test. go test discards a passing package's output, so the
// line goes to the parent's standard error. A marker file named after the parent's PID and start time
// keeps it to one line per go command. Any failure leaves it unsaid: the
// skip message itself is still in go test -v's output.
func notice() {
	noticeOnce.Do(func() {
		ppid := os.Getppid()
		start, ok := startTime(ppid)
		if !ok || !isGoCommand(ppid) {
			return
		}
		marker := filepath.Join(os.TempDir(), fmt.Sprintf("pctab-long-notice-%d-%s", ppid, start))
		m, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return // another package of this run said it, or no temp dir
		}
		m.Close()
		f := parentStderr(ppid)
		if f == nil {
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "pctab: this run skips the long tests (older toolchains, every Go release, the patched toolchain, real traces, modules from the proxy); %s=1 runs them (see README, Tests)\n", LongVar)
	})
}

// startTime returns field 22 of /proc/PID/stat, the process's start time in
// clock ticks since boot, which tells one go command from a later one
// reusing its PID.
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start after its closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// isGoCommand reports whether process pid runs a go command (go or
// go.exe, any toolchain), so that a test binary started some other way
// (go test -c, -exec, a debugger) writes nowhere.
func isGoCommand(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	return filepath.Base(exe) == "go"
}

// parentStderr returns the go command's standard error, or nil. It
// duplicates the parent's descriptor with pidfd_getfd, so that the line
// shares the go command's file offset and a redirected log keeps both.
// Where that is refused (an old kernel, a ptrace policy), it opens
// /proc/PPID/fd/2 anew, but only for a pipe or a terminal: a new
// description of a regular file would have its own offset, and the go
// command's next write would overwrite the line.
func parentStderr(ppid int) *os.File {
	if pidfd, err := unix.PidfdOpen(ppid, 0); err == nil {
		fd, err := unix.PidfdGetfd(pidfd, 2, 0)
		unix.Close(pidfd)
		if err == nil {
			return os.NewFile(uintptr(fd), "go command stderr")
		}
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", ppid), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().IsRegular() {
		f.Close()
		return nil
	}
	return f
}
