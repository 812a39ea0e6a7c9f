package objscan

import (
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
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
	testenv.SkipUnlessLong(t, "builds cmd/gofmt with 26 Go releases, downloading them")
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

// TestKindName checks the PCDATA names of old releases against the
// InlTreeIndex id that decodes their inline trees.
func TestKindName(t *testing.T) {
	for _, tc := range []struct {
		version string
		magic   uint32
		want    []string
	}{
		{"go1.8.7", Go12Magic, []string{"pcsp", "pcfile", "pcln", "StackMapIndex", "PCData1"}},
		{"go1.12.17", Go12Magic, []string{"pcsp", "pcfile", "pcln", "StackMapIndex", "InlTreeIndex", "RegMapIndex"}},
		{"go1.15.15", Go12Magic, []string{"pcsp", "pcfile", "pcln", "RegMapIndex", "StackMapIndex", "InlTreeIndex"}},
		{"go1.16.15", Go116Magic, []string{"pcsp", "pcfile", "pcln", "UnsafePoint", "StackMapIndex", "InlTreeIndex", "ArgLiveIndex"}},
	} {
		f := &File{Magic: tc.magic, GoVersion: tc.version}
		for k, want := range tc.want {
			if got := f.KindName(TableKind(k)); got != want {
				t.Errorf("%s: kind %d is %q, want %q", tc.version, k, got, want)
			}
		}
		if idx := f.inlIndex(); idx >= 0 && f.KindName(KindPCData+TableKind(idx)) != "InlTreeIndex" {
			t.Errorf("%s: the inline tree index %d is named %q", tc.version, idx, f.KindName(KindPCData+TableKind(idx)))
		}
	}
}
