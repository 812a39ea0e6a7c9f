//go:build !plan9

package testenv

import (
	"errors"
	"syscall"
)

// ExecRefused reports whether err is the kernel's refusal to execute a
// binary (ENOEXEC), as when a test binary for another architecture runs
// under an emulator (go test -exec) that the kernel does not know of.
func ExecRefused(err error) bool { return errors.Is(err, syscall.ENOEXEC) }
