// Package testenv decides which of pctab's tests a run includes.
//
// A default `go test ./...` runs what a fresh machine can finish within go
// test's default timeouts: the local toolchain's builds, the codecs, the
// readers and the checks. The long tests (older toolchains that GOTOOLCHAIN
// downloads, the sweep over every Go release, the patched toolchain, real
// trace recordings, third-party modules from the module proxy) run only
// when the environment sets PCTAB_LONG=1, as CI does.
//
// -short skips the long tests even with PCTAB_LONG=1. Tests that can check
// a sample instead of everything (every PC of the go binary, every trial
// of a mutation test) ask Full.
//
// A default run that skips long tests says so in one line on the go
// command's standard error (on Linux, where a test binary can reach it),
// once per go command, since go test shows nothing else of a passing
// package.
package testenv

import (
	"errors"
	"os"
	"testing"
)

// LongVar is the environment variable that turns the long tests on.
const LongVar = "PCTAB_LONG"

// Long reports whether this run includes the long tests: PCTAB_LONG=1.
func Long() bool { return os.Getenv(LongVar) == "1" }

// Full reports whether tests check exhaustively (every PC of the go
// binary, every trial): the long tests are on and the run is not -short.
// Otherwise tests that can check a sample do.
func Full() bool { return Long() && !testing.Short() }

// SkipUnlessLong skips t unless the long tests are on and the run is not
// -short. what says what the test needs, for example "downloads
// go1.15.15", and ends up in the skip message.
func SkipUnlessLong(t testing.TB, what string) {
	t.Helper()
	skipUnlessLong(t, what, notice)
}

// skipUnlessLong is SkipUnlessLong with the notice as a parameter, so that
// this package's own tests say nothing on the go command's stderr.
func skipUnlessLong(t testing.TB, what string, notice func()) {
	t.Helper()
	if Full() {
		return
	}
	if testing.Short() {
		t.Skipf("long test (%s): skipped under -short", what)
	}
	notice()
	t.Skipf("long test (%s): set %s=1 to run it", what, LongVar)
}

// SkipUnsupported skips t if err wraps errors.ErrUnsupported: what the
// test exercises does not exist on this platform (for example
// trampoline.New outside unix).
func SkipUnsupported(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
}
