package testbuild

import (
	"os/exec"
	"runtime"
	"strings"
)

// gccArch maps the machine of gcc -dumpmachine ("x86_64-linux-gnu") to a
// GOARCH.
var gccArch = map[string]string{
	"x86_64": "amd64", "i386": "386", "i586": "386", "i686": "386",
	"aarch64": "arm64", "s390x": "s390x", "powerpc64le": "ppc64le",
	"riscv64": "riscv64",
}

// CgoAvailable reports whether a build for the running process's GOOS and
// GOARCH can turn cgo on: gcc is on PATH and targets them. A test built
// for another GOARCH and run under qemu finds the host's gcc, which
// targets the host.
func CgoAvailable() bool {
	out, err := exec.Command("gcc", "-dumpmachine").Output()
	if err != nil {
		return false
	}
	machine, rest, _ := strings.Cut(strings.TrimSpace(string(out)), "-")
	return gccArch[machine] == runtime.GOARCH && strings.Contains(rest, runtime.GOOS)
}
