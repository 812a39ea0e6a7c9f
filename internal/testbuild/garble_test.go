package testbuild

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGarbleConfig checks how a garble build is planned without building
// it: its own cache entry for each set of flags, its name and its
// description, and the configurations refused.
func TestGarbleConfig(t *testing.T) {
	plain, err := newPlan(t.Context(), Config{Archive: "callers"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{plain.out: true}
	for _, flags := range []string{"", "-tiny", "-literals"} {
		cfg := Config{Archive: "callers", Garble: true, GarbleFlags: flags}
		p, err := newPlan(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if seen[p.out] || !strings.HasPrefix(filepath.Base(p.out), "garble-callers-") {
			t.Errorf("%q: cache entry %s, shared or misnamed", flags, p.out)
		}
		seen[p.out] = true
		if s := cfg.String(); !strings.Contains(s, strings.TrimSpace("garble@"+GarbleVersion+" "+flags)) {
			t.Errorf("%q: String() = %q", flags, s)
		}
		if args := p.args("out"); !slices.Equal(args[:len(strings.Fields(flags))], strings.Fields(flags)) || slices.Contains(args, "-trimpath") {
			t.Errorf("%q: garble arguments %q", flags, args)
		}
	}
	for _, cfg := range []Config{
		{Archive: "callers", Garble: true, Toolchain: "go1.25.14"},
		{Package: "cmd/gofmt", Garble: true},
	} {
		if _, err := newPlan(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "a garble build needs an archive and the local toolchain") {
			t.Errorf("%v: error %v", cfg, err)
		}
	}
}

// TestMimicGarbleRefuses checks that MimicGarble takes only an ELF
// binary with a Go 1.20+ pclntab.
func TestMimicGarbleRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"PE", Config{Archive: "callers", GOOS: "windows", GOARCH: "amd64"}, "MimicGarble: "},
		{"the garbled", Config{Archive: "callers"}, "not a Go 1.20+ pclntab"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(Build(t, tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "the garbled" {
				if data, err = MimicGarble(data, 0x6333c187, 0); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := MimicGarble(data, 0x6333c187, 3); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
