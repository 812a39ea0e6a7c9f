package testbuild

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testenv"
)

// runTimeout bounds one run of a test program, including emulation.
const runTimeout = 2 * time.Minute

// ErrCannotRun is returned (wrapped) by Runner when binaries of a target
// cannot run on this machine.
var ErrCannotRun = errors.New("cannot run binaries of this target here")

// Runner returns the command prefix that runs binaries built by cfg on this
// machine: nothing for the machine's own target (and for linux/386 on
// linux/amd64: Exec returns an error wrapping ErrCannotRun where the
// kernel refuses it), the qemu user-mode emulator for another Linux
// architecture when it is installed, such as qemu-aarch64 for linux/arm64,
// or wine for windows/amd64 on linux/amd64 when wine64 is installed
// (Exec returns an error wrapping ErrCannotRun for the Go releases wine
// cannot start), or Node.js for js/wasm built by the local toolchain.
// It returns an error wrapping ErrCannotRun otherwise.
func Runner(cfg Config) ([]string, error) {
	goos, goarch := cfg.target()
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		return nil, nil
	}
	if goos == "windows" && goarch == "amd64" && runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		return wine()
	}
	if goos == "js" && goarch == "wasm" {
		return node(cfg)
	}
	if goos != "linux" || runtime.GOOS != "linux" {
		return nil, fmt.Errorf("testbuild: %w: %s/%s on %s/%s", ErrCannotRun, goos, goarch, runtime.GOOS, runtime.GOARCH)
	}
	if goarch == "386" && runtime.GOARCH == "amd64" {
		return nil, nil
	}
	return qemu(goarch)
}

// qemuArch maps a GOARCH to the name of its qemu user-mode emulator.
var qemuArch = map[string]string{
	"386": "i386", "amd64": "x86_64", "arm": "arm", "arm64": "aarch64",
	"loong64": "loongarch64", "mips": "mips", "mipsle": "mipsel",
	"mips64": "mips64", "mips64le": "mips64el", "ppc64": "ppc64",
	"ppc64le": "ppc64le", "riscv64": "riscv64", "s390x": "s390x",
}

// qemu returns the command prefix that runs linux/goarch binaries under
// qemu's user-mode emulator, or an error wrapping ErrCannotRun.
func qemu(goarch string) ([]string, error) {
	qarch := qemuArch[goarch]
	if qarch == "" {
		return nil, fmt.Errorf("testbuild: %w: no emulator known for linux/%s", ErrCannotRun, goarch)
	}
	path, err := exec.LookPath("qemu-" + qarch)
	if err != nil {
		return nil, fmt.Errorf("testbuild: %w: linux/%s needs qemu-%s (apt-get install qemu-user): %v", ErrCannotRun, goarch, qarch, err)
	}
	return []string{path}, nil
}

// winePaths are where wine64 may be: Debian's wine64 package installs it
// outside PATH unless the wine package is installed too.
var winePaths = []string{"wine64", "/usr/lib/wine/wine64", "/usr/lib64/wine/wine64", "wine"}

// wine returns the command prefix that runs windows/amd64 binaries under
// wine, quiet (WINEDEBUG=-all), or an error wrapping ErrCannotRun. Its
// first run creates wine's prefix in $HOME (WINEPREFIX), which takes
// half a minute.
func wine() ([]string, error) {
	for _, name := range winePaths {
		if path, err := exec.LookPath(name); err == nil {
			return []string{"env", "WINEDEBUG=-all", path}, nil
		}
	}
	return nil, fmt.Errorf("testbuild: %w: windows/amd64 needs wine (apt-get install wine64)", ErrCannotRun)
}

// node returns the command prefix that runs js/wasm binaries built by
// the local toolchain under Node.js, with the toolchain's own JavaScript
// support (lib/wasm/wasm_exec_node.js, as its go_js_wasm_exec runs them),
// or an error wrapping ErrCannotRun. The support must match the release
// that built the binary: other toolchains' builds are not run.
func node(cfg Config) ([]string, error) {
	if cfg.Toolchain != "" {
		return nil, fmt.Errorf("testbuild: %w: js/wasm built by %s (only the local toolchain's JavaScript support is at hand)", ErrCannotRun, cfg.Toolchain)
	}
	path, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("testbuild: %w: js/wasm needs Node.js: %v", ErrCannotRun, err)
	}
	support := filepath.Join(filepath.Dir(filepath.Dir(GoBinary())), "lib", "wasm", "wasm_exec_node.js")
	if _, err := os.Stat(support); err != nil {
		return nil, fmt.Errorf("testbuild: %w: js/wasm: %v", ErrCannotRun, err)
	}
	return []string{path, "--stack-size=8192", support}, nil
}

// wineRefusal is what a Go program of Go 1.21 or later prints under a
// wine without ProcessPrng (wine 8, Debian 12's): the runtime needs it
// from bcryptprimitives.dll.
const wineRefusal = "bcryptprimitives.dll not found"

// Exec runs the binary bin, built by cfg, with args, through Runner, and
// returns its standard output. The error of a failed run includes the
// standard error. When the kernel refuses a binary that Runner would run
// directly, as it does when the caller itself runs under qemu-user without
// binfmt_misc, Exec runs it through the emulator for the architecture its
// ELF header names.
func Exec(ctx context.Context, cfg Config, bin string, args ...string) ([]byte, error) {
	prefix, err := Runner(cfg)
	if err != nil {
		return nil, err
	}
	argv := append(append(prefix, bin), args...)
	out, err := execArgv(ctx, argv)
	if len(prefix) == 0 && testenv.ExecRefused(err) {
		return execRefused(ctx, argv, err)
	}
	if goos, _ := cfg.target(); goos == "windows" && err != nil && strings.Contains(err.Error(), wineRefusal) {
		return nil, fmt.Errorf("testbuild: %w: this wine cannot start %s (%s: the runtimes of recent Go releases, 1.21.13 and 1.26 among them, call ProcessPrng from it)", ErrCannotRun, cfg, wineRefusal)
	}
	return out, err
}

// execRefused runs argv, which the kernel refused to execute, through the
// emulator for the architecture named in the binary's ELF header. That is
// what running a test binary under qemu-user without binfmt_misc needs:
// qemu passes a child's execve to the host kernel, which cannot run the
// target's binaries itself. linux/386 on a linux/amd64 kernel without
// 32-bit support (ia32_emulation=false) is not retried: Go's 386 programs
// crash under qemu-user 7.2.
func execRefused(ctx context.Context, argv []string, refused error) ([]byte, error) {
	goarch, err := elfArch(argv[0])
	if err != nil {
		return nil, fmt.Errorf("testbuild: %w: the kernel refused %s (%v), and its architecture is unknown: %v", ErrCannotRun, argv[0], refused, err)
	}
	if goarch == "386" {
		return nil, fmt.Errorf("testbuild: %w: this kernel does not run linux/386 binaries (no 32-bit support): %v", ErrCannotRun, refused)
	}
	prefix, err := qemu(goarch)
	if err != nil {
		return nil, fmt.Errorf("%w (the kernel refused %s: %v)", err, argv[0], refused)
	}
	return execArgv(ctx, append(prefix, argv...))
}

// elfArch returns the GOARCH of the ELF binary at path, for the
// architectures qemuArch knows.
func elfArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	goarch := map[elf.Machine]string{
		elf.EM_386: "386", elf.EM_X86_64: "amd64", elf.EM_ARM: "arm", elf.EM_AARCH64: "arm64",
		elf.EM_LOONGARCH: "loong64", elf.EM_RISCV: "riscv64", elf.EM_S390: "s390x",
		elf.EM_PPC64: "ppc64", elf.EM_MIPS: "mips",
	}[f.Machine]
	if f.Machine == elf.EM_MIPS && f.Class == elf.ELFCLASS64 {
		goarch = "mips64"
	}
	if (f.Machine == elf.EM_PPC64 || f.Machine == elf.EM_MIPS) && f.ByteOrder == binary.LittleEndian {
		goarch += "le"
	}
	if goarch == "" {
		return "", fmt.Errorf("ELF machine %v", f.Machine)
	}
	return goarch, nil
}

// execArgv runs argv within runTimeout and returns its standard output;
// the error of a failed run includes the standard error.
func execArgv(ctx context.Context, argv []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("testbuild: running %s: %w\nstderr:\n%s", strings.Join(argv, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// Run runs bin, a binary built by cfg, and returns its standard output. It
// skips the test when binaries of cfg's target cannot run here, and fails
// it when the program fails.
func Run(t testing.TB, cfg Config, bin string, args ...string) []byte {
	t.Helper()
	out, err := Exec(t.Context(), cfg, bin, args...)
	if errors.Is(err, ErrCannotRun) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RunCallers builds cfg (with Archive "callers" when it is empty), runs the
// program and parses its output. It skips and fails like Build and Run.
func RunCallers(t testing.TB, cfg Config) *Callers {
	t.Helper()
	if cfg.Archive == "" {
		cfg.Archive = "callers"
	}
	bin := Build(t, cfg)
	out := Run(t, cfg, bin)
	c, err := ParseCallers(out)
	if err != nil {
		t.Fatalf("testbuild: output of %v: %v", cfg, err)
	}
	return c
}

// GoBinary returns the path of the local toolchain's go command
// ($(go env GOROOT)/bin/go), the real binary many tests measure.
func GoBinary() string {
	root := ""
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	if root == "" {
		root = runtime.GOROOT()
	}
	return filepath.Join(root, "bin", "go")
}
