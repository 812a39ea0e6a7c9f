package objscan

import (
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

// TestReleases opens cmd/gofmt as built by the last patch release of every
// Go minor version from go1.2.2 to go1.27.4 (linux/amd64, and linux/386 and
// linux/arm64 from go1.5), and cross-checks every function and the file and
// line at every PC against debug/gosym. The version must be the toolchain's,
// from the build info or, before Go 1.13, from runtime.buildVersion. The
// toolchains download through the module proxy on first use; the binaries
// are cached (internal/testbuild). verify's TestReleases checks every table
// at every PC of the same binaries.
func TestReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/gofmt with 26 Go releases; skipped in -short mode")
	}
	for _, tg := range testbuild.Releases() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			cfg := tg.Config
			cfg.Package = "cmd/gofmt"
			f, err := Open(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// go1.2 and go1.3 have neither build info nor a
			// runtime.buildVersion variable (runtime.Version returns a
			// constant), so their version is unknown.
			want := cfg.Toolchain
			if goMinor(want) < 4 {
				want = ""
			}
			if f.GoVersion != want {
				t.Errorf("version %q, want %q", f.GoVersion, want)
			}
			checkGosym(t, f, 1)
			if goMinor(f.GoVersion) >= 9 {
				checkInlTrees(t, f)
			} else {
				for i := range f.Funcs {
					if f.Funcs[i].InlTree != nil {
						t.Fatalf("%s has an inline tree, before go1.9", f.Funcs[i].Name)
					}
				}
			}
		})
	}
}
