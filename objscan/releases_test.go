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

// TestStrippedOld opens go1.9-1.12 builds stripped of their symbols (-s
// -w): they have no build info and no runtime.buildVersion, so their
// version is unknown. A go1.12 build's inline trees, read first as
// go1.13-1.15's, are read as go1.12's; go1.9-1.11 builds' _func records,
// which end in an int32 nfuncdata, are told from go1.12's by their last
// bytes, and go1.9's, whose fourth word is the frame size, from
// go1.10-1.11's, where it is the funcID (guessRecordRelease). Every
// function's funcID, funcdata and inline tree, and the PCDATA tables'
// names, must equal the unstripped build's, whose version is known.
func TestStrippedOld(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds cmd/gofmt with go1.9.7, go1.10.8, go1.11.13 and go1.12.17, downloading them")
	for _, version := range []string{"go1.9.7", "go1.10.8", "go1.11.13", "go1.12.17"} {
		t.Run(version, func(t *testing.T) {
			cfg := testbuild.Config{Package: "cmd/gofmt", Toolchain: version}
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
			if stripped.GoVersion != "" || full.GoVersion != version {
				t.Fatalf("versions %q and %q, want \"\" and %s", stripped.GoVersion, full.GoVersion, version)
			}
			compareStripped(t, full, stripped)
		})
	}
}

// compareStripped requires a stripped build's functions to equal the
// unstripped build's: names, funcIDs, funcdata, inline trees, and the
// names of the PCDATA tables.
func compareStripped(t *testing.T, full, stripped *File) {
	t.Helper()
	if len(stripped.Funcs) != len(full.Funcs) {
		t.Fatalf("%d functions, the unstripped build has %d", len(stripped.Funcs), len(full.Funcs))
	}
	trees, funcdata := 0, 0
	for i := range full.Funcs {
		a, b := &full.Funcs[i], &stripped.Funcs[i]
		if a.Name != b.Name || a.FuncID != b.FuncID || !slices.Equal(a.FuncData, b.FuncData) || !slices.Equal(a.InlTree, b.InlTree) {
			t.Fatalf("function %d: %s funcID %d, %d funcdata, %d inlined calls; stripped %s funcID %d, %d funcdata, %d inlined calls",
				i, a.Name, a.FuncID, len(a.FuncData), len(a.InlTree), b.Name, b.FuncID, len(b.FuncData), len(b.InlTree))
		}
		if len(a.InlTree) > 0 {
			trees++
		}
		if len(a.FuncData) > 0 {
			funcdata++
		}
	}
	if trees == 0 || funcdata == 0 {
		t.Fatalf("%d inline trees, %d functions with funcdata", trees, funcdata)
	}
	for k := KindPCData; k < KindPCData+3; k++ {
		if got, want := stripped.KindName(k), full.KindName(k); got != want {
			t.Errorf("PCDATA %d is %s, the unstripped build's %s", k-KindPCData, got, want)
		}
	}
	t.Logf("%d functions, %d with funcdata, %d inline trees equal", len(full.Funcs), funcdata, trees)
}
