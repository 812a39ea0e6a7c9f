package rewrite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
)

// allocatedBy returns the bytes fn allocates (runtime.MemStats.TotalAlloc),
// which counts every allocation, collected or not. The tests that use it
// do not run in parallel.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostileCeiling is what a rewrite of n bytes may allocate: objscan's
// ceiling for reading it, the tables (a few times the pclntab, at most
// the file), the output and a verification.
func hostileCeiling(n int) uint64 { return 64*uint64(n) + 64<<20 }

// hostileTargets are the builds the hostile tests mutate: one of each
// container format.
var hostileTargets = []testbuild.Config{
	{Archive: "features", GOOS: "linux", GOARCH: "amd64"},
	{Archive: "features", GOOS: "darwin", GOARCH: "arm64"},
	{Archive: "features", GOOS: "windows", GOARCH: "amd64"},
}

// rewriteBounded runs both modes on data, with verification, and fails
// the test if either panics or allocates more than hostileCeiling. It
// returns the two errors.
func rewriteBounded(t *testing.T, what string, data []byte) (errs [2]error) {
	t.Helper()
	for i, mode := range []Mode{Append, Replace} {
		var out []byte
		var err error
		alloc := allocatedBy(func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
					t.Errorf("%s, %s mode: panic: %v", what, mode, p)
				}
			}()
			out, _, err = Rewrite(data, Options{Mode: mode, Verify: true, Workers: 1})
		})
		if limit := hostileCeiling(len(data)); alloc > limit {
			t.Errorf("%s, %s mode: rewriting %d bytes allocated %d bytes (output %d bytes), more than the ceiling %d", what, mode, len(data), alloc, len(out), limit)
		}
		if err == nil && uint64(len(out)) > 4*uint64(len(data))+16<<20 {
			t.Errorf("%s, %s mode: a %d-byte input made a %d-byte output", what, mode, len(data), len(out))
		}
		errs[i] = err
	}
	return errs
}

// TestTruncated rewrites real binaries cut short at many points (issue
// 26, item 14: they failed with a bare "ELF: EOF" or "Mach-O: EOF"): every
// one must fail, and a failure caused by reading past the end must wrap
// objscan.ErrTruncated and say where.
func TestTruncated(t *testing.T) {
	for _, cfg := range hostileTargets {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			n := len(data)
			cuts := []int{0, 1, 3, 4, 16, 63, 64, 100, 0x200, 0x1000, n / 8, n / 4, n / 2, 3 * n / 4, n - 4096, n - 1}
			for _, cut := range cuts {
				errs := rewriteBounded(t, fmt.Sprintf("cut at %d of %d", cut, n), data[:cut])
				for i, err := range errs {
					if err == nil {
						t.Errorf("cut at %d of %d: mode %d accepted it", cut, n, i)
						continue
					}
					eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
					if eof && !errors.Is(err, objscan.ErrTruncated) {
						t.Errorf("cut at %d of %d: %v: an end-of-file error that does not wrap objscan.ErrTruncated", cut, n, err)
					}
					if strings.HasSuffix(err.Error(), ": EOF") {
						t.Errorf("cut at %d of %d: %v: says EOF without where", cut, n, err)
					}
					if i == 0 {
						t.Logf("cut at %d: %v", cut, err)
					}
				}
			}
		})
	}
}
