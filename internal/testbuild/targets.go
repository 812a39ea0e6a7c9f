package testbuild

import (
	"fmt"
	"go/version"
	"testing"
)

// Target is a named build configuration, without an archive. Names are
// short, stable and usable as subtest names.
type Target struct {
	// Name identifies the target, such as "linux-amd64" or
	// "go1.15.15-linux-386".
	Name string
	// Config holds the build settings; its Archive is empty.
	Config Config
}

// For returns the target's configuration for the named archive.
func (t Target) For(archive string) Config {
	c := t.Config
	c.Archive = archive
	return c
}

// Build builds the named archive for the target; see the package-level
// Build.
func (t Target) Build(tb testing.TB, archive string) string {
	tb.Helper()
	return Build(tb, t.For(archive))
}

// Targets returns the standard targets tests cover, in a fixed order:
//
//   - the local toolchain for linux/amd64, linux/arm64, linux/386,
//     linux/s390x, darwin/arm64 and windows/amd64;
//   - linux/amd64 stripped (-ldflags="-s -w"), position independent
//     (-buildmode=pie) and externally linked (-linkmode=external, which needs
//     gcc);
//   - older toolchains for linux/amd64, one per pclntab layout: go1.15.15
//     (the go1.2 layout), go1.16.15 (go1.16), go1.18.10 (go1.18) and
//     go1.21.13 (go1.20), plus go1.15.15 for linux/386 and go1.18.10 for
//     linux/arm64.
//
// Building with an older toolchain downloads it on first use; see Build.
func Targets() []Target {
	ts := []Target{
		{Name: "linux-amd64", Config: Config{GOOS: "linux", GOARCH: "amd64"}},
		{Name: "linux-arm64", Config: Config{GOOS: "linux", GOARCH: "arm64"}},
		{Name: "linux-386", Config: Config{GOOS: "linux", GOARCH: "386"}},
		{Name: "linux-s390x", Config: Config{GOOS: "linux", GOARCH: "s390x"}},
		{Name: "darwin-arm64", Config: Config{GOOS: "darwin", GOARCH: "arm64"}},
		{Name: "windows-amd64", Config: Config{GOOS: "windows", GOARCH: "amd64"}},
		{Name: "linux-amd64-stripped", Config: Config{GOOS: "linux", GOARCH: "amd64", Ldflags: "-s -w"}},
		{Name: "linux-amd64-pie", Config: Config{GOOS: "linux", GOARCH: "amd64", BuildMode: "pie"}},
		{Name: "linux-amd64-external", Config: Config{GOOS: "linux", GOARCH: "amd64", LinkMode: "external"}},
	}
	for _, tc := range []struct{ toolchain, goarch string }{
		{"go1.15.15", "amd64"},
		{"go1.16.15", "amd64"},
		{"go1.18.10", "amd64"},
		{"go1.21.13", "amd64"},
		{"go1.15.15", "386"},
		{"go1.18.10", "arm64"},
	} {
		ts = append(ts, Target{
			Name:   fmt.Sprintf("%s-linux-%s", tc.toolchain, tc.goarch),
			Config: Config{Toolchain: tc.toolchain, GOOS: "linux", GOARCH: tc.goarch},
		})
	}
	return ts
}

// LookupTarget returns the standard target called name.
func LookupTarget(name string) (Target, bool) {
	for _, t := range Targets() {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// ReleaseVersions lists the last patch release of every Go minor version
// that GOTOOLCHAIN can fetch, go1.2.2 to go1.27.4, oldest first.
var ReleaseVersions = []string{
	"go1.2.2", "go1.3.3", "go1.4.3", "go1.5.4", "go1.6.4", "go1.7.6", "go1.8.7",
	"go1.9.7", "go1.10.8", "go1.11.13", "go1.12.17", "go1.13.15", "go1.14.15",
	"go1.15.15", "go1.16.15", "go1.17.13", "go1.18.10", "go1.19.13", "go1.20.14",
	"go1.21.13", "go1.22.12", "go1.23.12", "go1.24.13", "go1.25.14", "go1.26.11",
	"go1.27.4",
}

// Releases returns one target per release in ReleaseVersions for
// linux/amd64, and for linux/386 and linux/arm64 from go1.5 on, for
// building a standard command (set Config.Package). Before go1.5 neither
// can be built here: the downloaded go1.2–go1.4 toolchains hold only the
// host's runtime ("linux/386 must be bootstrapped using make.bash"), and
// arm64 had no port.
func Releases() []Target {
	var ts []Target
	for _, v := range ReleaseVersions {
		for _, goarch := range []string{"amd64", "386", "arm64"} {
			if goarch != "amd64" && version.Compare(v, "go1.5") < 0 {
				continue
			}
			ts = append(ts, Target{
				Name:   fmt.Sprintf("%s-linux-%s", v, goarch),
				Config: Config{Toolchain: v, GOOS: "linux", GOARCH: goarch},
			})
		}
	}
	return ts
}
