//go:build !unix

package testsuite

import (
	"os"
	"os/exec"
)

// stopGroup makes a stopped cmd get an interrupt (the go command's
// test binaries finish their tests or are killed after cmd.WaitDelay).
func stopGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
}
