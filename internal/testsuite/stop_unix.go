//go:build unix

package testsuite

import (
	"os/exec"
	"syscall"
)

// stopGroup makes cmd run in its own process group and, when stopped,
// interrupts the whole group: the go command and the test binaries it
// runs, which then end at once instead of finishing their tests.
func stopGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
}
