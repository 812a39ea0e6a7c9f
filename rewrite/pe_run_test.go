package rewrite

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
)

// TestPERuns runs the PE files that both modes write under wine, as
// TestAppendLinked runs ELF files on Linux: an append-mode file prints
// what the original prints, byte for byte (callers prints its raw PCs and
// frames, so the stacks the runtime reads from the original tables are
// the same), and a replace-mode file loads, its runtime finding the new
// table through the moduledata and refusing its magic. wine 8 starts the
// programs of Go 1.20 and earlier only (testbuild.Runner), so the builds
// are Go 1.20.14's (the Go 1.20+ layout, the one of Go 1.26) and Go
// 1.18.10's (the Go 1.18-1.19 layout, which replace mode converts).
func TestPERuns(t *testing.T) {
	testenv.SkipUnlessLong(t, "downloads Go 1.20.14 and Go 1.18.10 and runs windows/amd64 programs under wine")
	for _, cfg := range []testbuild.Config{
		{Archive: "callers", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.20.14"},
		{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.20.14"},
		{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.18.10"},
		{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.20.14", Ldflags: "-s -w"},
	} {
		t.Run(cfg.Archive+"-"+cfg.Toolchain+strings.ReplaceAll(cfg.Ldflags, " ", ""), func(t *testing.T) {
			in := testbuild.Build(t, cfg)
			want, runErr, canRun := runBinary(t, cfg, in)
			if !canRun {
				t.Skipf("cannot run %s here: %v", cfg, runErr)
			}
			if runErr != nil || len(want) == 0 {
				t.Fatalf("the original prints %q: %v", want, runErr)
			}
			for _, mode := range []Mode{Append, Replace} {
				out := filepath.Join(t.TempDir(), "rewritten.exe")
				res, err := RewriteFile(in, out, Options{Mode: mode, Verify: true})
				if err != nil {
					t.Fatalf("%v mode: %v", mode, err)
				}
				if res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
					t.Fatalf("%v mode: verification: %+v", mode, res.Verify)
				}
				got, err, _ := runBinary(t, cfg, out)
				switch mode {
				case Append:
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("the appended binary: %v; its output (-original +appended):\n%s", err, cmp.Diff(string(want), string(got)))
					}
				case Replace:
					if err == nil || !strings.Contains(err.Error(), "magic= 0xffffffe1") {
						t.Errorf("the replace-mode binary: %q, %v; want the runtime to refuse the magic", got, err)
					}
				}
			}
		})
	}
}
