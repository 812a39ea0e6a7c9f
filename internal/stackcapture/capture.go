// Package stackcapture produces real Go stacks to measure: it builds the
// test binary of a standard-library package, runs it with an execution
// trace and a CPU profile, and caches all three files outside the
// repository, under os.UserCacheDir()/pctab-testbuild.
//
// The capture is the same as these commands:
//
//	go test -c -o DIR/x.test compress/flate
//	cd $(go list -f '{{.Dir}}' compress/flate)
//	DIR/x.test -test.run=. -test.short -test.trace=DIR/t.out -test.cpuprofile=DIR/c.pprof
package stackcapture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Files are the paths of a capture.
type Files struct {
	Binary  string // the test binary
	Trace   string // its execution trace
	Profile string // its CPU profile
}

// ErrCrossBuild reports that the capture cannot run here because the
// running program targets another platform than the go command's host
// (as under GOARCH=s390x go test -exec qemu-s390x).
var ErrCrossBuild = errors.New("stackcapture: cannot run a test binary for another platform")

// Std captures package pkg of the standard library, reusing an earlier
// capture by the same toolchain if one exists. extra arguments are passed
// to the test binary after -test.run=. -test.short.
func Std(ctx context.Context, pkg string, extra ...string) (f Files, err error) {
	gocmd, err := goCommand()
	if err != nil {
		return Files{}, err
	}
	env, err := goEnv(ctx, gocmd, "GOVERSION", "GOHOSTOS", "GOHOSTARCH")
	if err != nil {
		return Files{}, err
	}
	if env[1] != runtime.GOOS || env[2] != runtime.GOARCH {
		return Files{}, fmt.Errorf("%w: running as %s/%s, go command host is %s/%s", ErrCrossBuild, runtime.GOOS, runtime.GOARCH, env[1], env[2])
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return Files{}, fmt.Errorf("stackcapture: %w", err)
	}
	key := strings.NewReplacer("/", "_", " ", "_").Replace(pkg + "-" + strings.Join(extra, "_"))
	dir := filepath.Join(cache, "pctab-testbuild", env[0]+"-"+env[1]+"-"+env[2], key)
	f = Files{
		Binary:  filepath.Join(dir, "x.test"),
		Trace:   filepath.Join(dir, "t.out"),
		Profile: filepath.Join(dir, "c.pprof"),
	}
	if exists(f.Binary) && exists(f.Trace) && exists(f.Profile) {
		return f, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("stackcapture: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(dir) // only if empty: never an earlier capture
		}
	}()
	// Work in a private directory and rename into place, so that
	// concurrent captures never see partial files.
	tmp, err := os.MkdirTemp(dir, "tmp")
	if err != nil {
		return Files{}, fmt.Errorf("stackcapture: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "x.test")
	build := exec.CommandContext(ctx, gocmd, "test", "-c", "-o", bin, pkg)
	if out, err := build.CombinedOutput(); err != nil {
		return Files{}, fmt.Errorf("stackcapture: go test -c %s: %w\n%s", pkg, err, out)
	}
	tr, pr := filepath.Join(tmp, "t.out"), filepath.Join(tmp, "c.pprof")
	args := append([]string{"-test.run=.", "-test.short", "-test.trace=" + tr, "-test.cpuprofile=" + pr}, extra...)
	// Tests read their testdata relative to the package directory.
	pkgDir, err := exec.CommandContext(ctx, gocmd, "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		return Files{}, fmt.Errorf("stackcapture: go list %s: %w", pkg, err)
	}
	run := exec.CommandContext(ctx, bin, args...)
	run.Dir = strings.TrimSpace(string(pkgDir))
	if out, err := run.CombinedOutput(); err != nil {
		return Files{}, fmt.Errorf("stackcapture: running the %s tests: %w\n%s", pkg, err, tail(out))
	}
	for _, p := range [][2]string{{tr, f.Trace}, {pr, f.Profile}, {bin, f.Binary}} {
		if err := os.Rename(p[0], p[1]); err != nil {
			return Files{}, fmt.Errorf("stackcapture: %w", err)
		}
	}
	return f, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}

// goCommand finds the go command: on PATH, or in the running toolchain's
// GOROOT.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if exists(p) {
		return p, nil
	}
	return "", errors.New("stackcapture: the go command is not on PATH or in GOROOT")
}

func goEnv(ctx context.Context, gocmd string, vars ...string) ([]string, error) {
	out, err := exec.CommandContext(ctx, gocmd, append([]string{"env"}, vars...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("stackcapture: go env: %w", err)
	}
	lines := strings.Split(string(bytes.TrimSpace(out)), "\n")
	if len(lines) != len(vars) {
		return nil, fmt.Errorf("stackcapture: go env printed %d lines for %d variables", len(lines), len(vars))
	}
	return lines, nil
}
