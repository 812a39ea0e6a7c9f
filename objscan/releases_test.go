package objscan

import (
	"slices"
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

// TestStrippedGo112 opens a go1.12 build stripped of its symbols (-s -w):
// it has no build info and no runtime.buildVersion, so its version is
// unknown, and its inline trees, read first as go1.13-1.15's, are read as
// go1.12's. Every function's inline tree must equal the unstripped
// build's, whose version is known.
func TestStrippedGo112(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds cmd/gofmt with go1.12.17, downloading it")
	cfg := testbuild.Config{Package: "cmd/gofmt", Toolchain: "go1.12.17"}
	full, err := Open(testbuild.Build(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	cfg.Ldflags = "-s -w"
	stripped, err := Open(testbuild.Build(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer stripped.Close()
	if stripped.GoVersion != "" || full.GoVersion != "go1.12.17" {
		t.Fatalf("versions %q and %q, want \"\" and go1.12.17", stripped.GoVersion, full.GoVersion)
	}
	if len(stripped.Funcs) != len(full.Funcs) {
		t.Fatalf("%d functions, the unstripped build has %d", len(stripped.Funcs), len(full.Funcs))
	}
	trees := 0
	for i := range full.Funcs {
		a, b := &full.Funcs[i], &stripped.Funcs[i]
		if a.Name != b.Name || !slices.Equal(a.InlTree, b.InlTree) {
			t.Fatalf("function %d: %s with %d inlined calls, stripped %s with %d", i, a.Name, len(a.InlTree), b.Name, len(b.InlTree))
		}
		if len(a.InlTree) > 0 {
			trees++
		}
	}
	if trees == 0 {
		t.Fatal("no inline tree")
	}
	if got, want := stripped.KindName(KindPCData+1), full.KindName(KindPCData+1); got != want {
		t.Errorf("PCDATA 1 is %s, the unstripped build's %s", got, want)
	}
	t.Logf("%d functions, %d inline trees equal", len(full.Funcs), trees)
}
