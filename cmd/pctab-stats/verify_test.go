package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/rewrite"
	"github.com/pctab/pctab/toolchain"
)

// TestVerifyRewritten checks pctab-stats verify on binaries written by
// rewrite-binary (package rewrite): append mode on its own and against the
// original, replace mode against the original, and the failures: replace
// mode without the original, and an append-mode binary whose loaded bytes
// differ from the original's.
func TestVerifyRewritten(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64"})
	dir := t.TempDir()
	appended, replaced, tampered := filepath.Join(dir, "append"), filepath.Join(dir, "replace"), filepath.Join(dir, "tampered")
	if _, err := rewrite.RewriteFile(in, appended, rewrite.Options{Mode: rewrite.Append}); err != nil {
		t.Fatal(err)
	}
	if _, err := rewrite.RewriteFile(in, replaced, rewrite.Options{Mode: rewrite.Replace}); err != nil {
		t.Fatal(err)
	}
	// tampered is appended with one byte of .text changed: its tables
	// still agree, but the loader would map other bytes.
	data, err := os.ReadFile(appended)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(appended)
	if err != nil {
		t.Fatal(err)
	}
	text := ef.Section(".text")
	ef.Close()
	data[text.Offset+text.Size/2] ^= 0xff
	if err := os.WriteFile(tampered, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		wantOut []string
	}{
		{"append", []string{appended}, 0, []string{": ok ", "(linear tables: append mode, variant spec)", " 0 mismatches"}},
		{"append with orig", []string{"-orig", in, appended}, 0, []string{": ok ", " 0 mismatches"}},
		{"replace with orig", []string{"-orig", in, replaced}, 0, []string{": ok ", "(linear tables: replace mode, variant spec)", " 0 mismatches"}},
		{"replace without orig", []string{replaced}, 1, []string{"ERROR", "give the original binary with -orig"}},
		{"tampered alone", []string{tampered}, 0, []string{": ok "}},
		{"tampered with orig", []string{"-orig", in, tampered}, 1, []string{"ERROR", "loaded image differs from the original's"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"verify"}, tc.args...), &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

// TestVerifyTwin checks pctab-stats verify -twin, the check of a binary
// built by the patched toolchain (pctab-toolchain) against its twin:
// gofmt built by both passes, and fails against another program's twin.
func TestVerifyTwin(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds the patched toolchain")
	cache, err := toolchain.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := toolchain.Build(context.Background(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := func(pkg string, twin bool) string {
		out := filepath.Join(dir, filepath.Base(pkg))
		root := tc.GOROOT
		if twin {
			out += ".twin"
			root = tc.TwinGOROOT
		}
		if err := tc.GoBuild(context.Background(), toolchain.BuildOptions{Dir: filepath.Join(root, "src"), Package: pkg, Out: out, Twin: twin, Flags: []string{"-trimpath"}}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	patched, twin, other := build("cmd/gofmt", false), build("cmd/gofmt", true), build("cmd/addr2line", true)
	// The default flavour's table variant: toolchain.Formats lists it last.
	formats := toolchain.Formats()
	variant := formats[len(formats)-1].Name
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		wantOut []string
	}{
		{"twin", []string{"-twin", twin, patched}, 0, []string{": ok ", "(linear tables: replace mode, variant " + variant + ")", " 0 mismatches"}},
		{"no twin", []string{patched}, 1, []string{"ERROR", "the twin with -twin"}},
		{"another program's twin", []string{"-twin", other, patched}, 1, []string{patched + ": "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"verify"}, tc.args...), &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}
