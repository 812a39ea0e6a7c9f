package rewrite

import (
	"bytes"
	"context"
	"debug/elf"
	"debug/gosym"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
)

// targets are the builds of testdata/features.txtar the tests rewrite:
// both byte orders, both pointer sizes, and PC quanta 1, 2 and 4.
var targets = []struct {
	name string
	cfg  testbuild.Config
}{
	{"linux-amd64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64"}},
	{"linux-arm64", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "arm64"}},
	{"linux-386", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "386"}},
	{"linux-s390x", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "s390x"}},
	// The Go 1.18-1.19 pclntab layout, whose _func records replace mode
	// converts to Go 1.20's.
	{"linux-amd64-go1.18", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.18.10"}},
	{"linux-arm64-go1.18", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "arm64", Toolchain: "go1.18.10"}},
	// The Go 1.16-1.17 and Go 1.2-1.15 layouts, with absolute entry PCs
	// and funcdata pointers, which replace mode converts (convert.go).
	{"linux-amd64-go1.17", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.17.13"}},
	{"linux-amd64-go1.16", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.16.15"}},
	{"linux-amd64-go1.15", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.15.15"}},
	{"linux-386-go1.15", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "386", Toolchain: "go1.15.15"}},
	{"linux-arm64-go1.15", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "arm64", Toolchain: "go1.15.15"}},
	{"linux-s390x-go1.16", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "s390x", Toolchain: "go1.16.15"}},
	{"linux-ppc64-go1.15", testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "ppc64", Toolchain: "go1.15.15"}},
}

// runBinary runs bin, built for cfg, and returns its output and error;
// ok is false when binaries of the target cannot run here.
func runBinary(t *testing.T, cfg testbuild.Config, bin string, args ...string) (out []byte, err error, ok bool) {
	t.Helper()
	if _, err := testbuild.Runner(cfg); err != nil {
		return nil, err, false
	}
	out, err = testbuild.Exec(context.Background(), cfg, bin, args...)
	if errors.Is(err, testbuild.ErrCannotRun) {
		// Runner could not tell: the kernel refused the binary.
		return nil, err, false
	}
	return out, err, true
}

// readelfClean runs readelf -a -W on path, if readelf is installed, and
// fails the test on any warning or error it prints.
func readelfClean(t *testing.T, path string) {
	t.Helper()
	re, err := exec.LookPath("readelf")
	if err != nil {
		return
	}
	var stderr bytes.Buffer
	cmd := exec.Command(re, "-a", "-W", path)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("readelf -a %s: %v\n%s", path, err, stderr.String())
	}
}

func TestRewriteTargets(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			in := testbuild.Build(t, tg.cfg)
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			wantOut, runErr, canRun := runBinary(t, tg.cfg, in)
			if canRun && runErr != nil {
				t.Fatalf("the original binary fails: %v", runErr)
			}
			dir := t.TempDir()
			for _, mode := range []Mode{Replace, Append} {
				t.Run(string(mode), func(t *testing.T) {
					out := filepath.Join(dir, "features."+string(mode))
					res, err := RewriteFile(in, out, Options{Mode: mode, Verify: true})
					if err != nil {
						t.Fatal(err)
					}
					if res.Verify == nil || !res.Verify.OK() || res.Verify.Tables == 0 {
						t.Fatalf("verification: %+v", res.Verify)
					}
					st, err := os.Stat(out)
					if err != nil {
						t.Fatal(err)
					}
					if st.Size() != res.OutBytes || res.InBytes != int64(len(data)) {
						t.Errorf("sizes: result says %d -> %d, files are %d -> %d", res.InBytes, res.OutBytes, len(data), st.Size())
					}
					ef, err := elf.Open(out)
					if err != nil {
						t.Fatalf("debug/elf: %v", err)
					}
					ef.Close()
					readelfClean(t, out)

					// objscan reads it, and Check agrees with the verification.
					f, err := objscan.Open(out)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					if f.Linear == nil || f.Linear.Mode != string(mode) || f.Linear.Variant != "spec" {
						t.Fatalf("objscan: linear tables %+v", f.Linear)
					}
					checkSizes(t, res, orig)

					switch mode {
					case Append:
						if f.Magic != orig.Magic || !bytes.Equal(f.Pclntab(), orig.Pclntab()) {
							t.Errorf("append mode changed the pclntab")
						}
						outData, _ := os.ReadFile(out)
						if err := SameLoadedImage(data, outData); err != nil {
							t.Errorf("append mode changed the loaded image: %v", err)
						}
						if canRun {
							got, err, _ := runBinary(t, tg.cfg, out)
							if err != nil || !bytes.Equal(got, wantOut) {
								t.Errorf("the append-mode binary prints %q (%v), the original %q", got, err, wantOut)
							}
						}
					case Replace:
						if f.Magic != objscan.LinearMagic || f.Tabs != nil {
							t.Errorf("replace mode: magic %#x, %d varint tables", f.Magic, len(f.Tabs))
						}
						if res.NewPclntab != int64(len(f.Pclntab())) {
							t.Errorf("new pclntab: result says %d bytes, objscan reads %d", res.NewPclntab, len(f.Pclntab()))
						}
						// A stock runtime must refuse the table (before Go
						// 1.18 it prints the header's first bytes).
						if canRun {
							got, err, _ := runBinary(t, tg.cfg, out)
							if err == nil || !strings.Contains(err.Error(), "0xffffffe1") || !strings.Contains(err.Error(), "invalid function symbol table") {
								t.Errorf("the replace-mode binary ran: %q, %v", got, err)
							}
						}
						if orig.Magic == objscan.Go12Magic || orig.Magic == objscan.Go116Magic {
							checkConvertedFile(t, f, orig)
						}
					}
				})
			}
		})
	}
}

// checkConvertedFile checks what a replace-mode conversion of a Go 1.2-1.17
// pclntab must give besides what Check compares: the release's version and
// PCDATA names, the text start in the pcHeader's textStart word, funcdata
// offsets from it, and inline trees in the release's format.
func checkConvertedFile(t *testing.T, f, orig *objscan.File) {
	t.Helper()
	text, ok := orig.ModuleText()
	if !ok || f.TextStart != text || f.TextSource != "moduledata.text" || f.GoFuncAddr != text {
		t.Errorf("text %#x (%s), funcdata base %#x; the original's moduledata.text is %#x (%v)", f.TextStart, f.TextSource, f.GoFuncAddr, text, ok)
	}
	if f.GoVersion != orig.GoVersion || f.Version != "go1.20-linear" {
		t.Errorf("version %s, layout %s; the original is %s", f.GoVersion, f.Version, orig.GoVersion)
	}
	for k := objscan.KindPCData; k < objscan.NumNamedKinds; k++ {
		if f.KindName(k) != orig.KindName(k) {
			t.Errorf("PCDATA kind %d is %s, the original's %s", k, f.KindName(k), orig.KindName(k))
		}
	}
	ps := f.PtrSize
	hdrText := uint64(f.ByteOrder.Uint32(f.Pclntab()[8+2*ps:]))
	if ps == 8 {
		hdrText = f.ByteOrder.Uint64(f.Pclntab()[8+2*ps:])
	}
	if hdrText != text {
		t.Errorf("pcHeader textStart %#x, want %#x", hdrText, text)
	}
	trees, absent := 0, 0
	for i := range orig.Funcs {
		a, b := &f.Funcs[i], &orig.Funcs[i]
		for j, p := range b.FuncData {
			if p == 0 {
				absent++
				if a.FuncData[j] != objscan.NoFuncData {
					t.Fatalf("%s: nil funcdata %d is %#x, want NoFuncData", a.Name, j, a.FuncData[j])
				}
			}
		}
		if b.InlTree != nil {
			tree, err := f.InlineTree(a, len(b.InlTree))
			if err != nil || !sameInlTree(tree, b.InlTree) {
				t.Fatalf("%s: inline tree %+v (%v), the original's %+v", a.Name, tree, err, b.InlTree)
			}
			trees++
		}
	}
	if trees == 0 || absent == 0 {
		t.Errorf("%d inline trees and %d nil funcdata compared: the test binary no longer has both", trees, absent)
	}
}

// checkSizes checks the size account of res.
func checkSizes(t *testing.T, res *Result, orig *objscan.File) {
	t.Helper()
	var sum int64
	for _, p := range res.Parts {
		sum += p.Delta()
	}
	if sum != res.DeltaBytes || res.OutBytes-res.InBytes != res.DeltaBytes {
		t.Errorf("parts add up to %d, delta %d, sizes %d -> %d", sum, res.DeltaBytes, res.InBytes, res.OutBytes)
	}
	est, err := EstimateFor(orig, res.Variant, res.Derived)
	if err != nil {
		t.Fatal(err)
	}
	var gap int64
	for _, g := range Gap(res, est) {
		gap += g.Bytes
	}
	if gap != res.DeltaBytes-est.Bytes {
		t.Errorf("gap items add up to %d, want %d", gap, res.DeltaBytes-est.Bytes)
	}
	if est.VarintBytes != res.VarintBytes || est.LinearBytes != res.LinearBytes || est.OutOfBandBytes != 4*int64(res.Funcs) {
		t.Errorf("estimate %+v disagrees with the rewrite's table sizes (varint %d, linear %d)", est, res.VarintBytes, res.LinearBytes)
	}
	if err := WriteText(&bytes.Buffer{}, res, est); err != nil {
		t.Error(err)
	}
}

func TestVariants(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features"})
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"spec-128", "spec-512", "spec-pool", "compact"} {
		for _, mode := range []Mode{Replace, Append} {
			t.Run(v+"/"+string(mode), func(t *testing.T) {
				out, res, err := Rewrite(data, Options{Mode: mode, Variant: v, Verify: true})
				if err != nil {
					t.Fatal(err)
				}
				f, err := objscan.NewFile(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				if f.Linear.Variant != v || res.Variant != v {
					t.Errorf("variant %q (result %q), want %q", f.Linear.Variant, res.Variant, v)
				}
				checkSizes(t, res, orig)
			})
		}
	}
}

// TestCheckDetects corrupts rewritten binaries and expects Check (or
// objscan) to notice.
func TestCheckDetects(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features"})
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{Replace, Append} {
		out, _, err := Rewrite(data, Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		f, err := objscan.NewFile(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		// Flip a byte in the middle of the linear tables.
		l := f.Linear
		mid := len(l.Data) / 2
		at := bytes.Index(out, l.Data[mid:mid+64]) // Data aliases a copy: find it in out
		if at < 0 {
			t.Fatalf("%s: linear data not found in the output", mode)
		}
		bad := bytes.Clone(out)
		bad[at] ^= 0x5a
		bf, err := objscan.NewFile(bytes.NewReader(bad))
		if err != nil {
			continue // rejected outright: fine
		}
		vr, err := Check(bf, orig, 0)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if vr.OK() {
			t.Errorf("%s: a corrupted linear table passed Check", mode)
		}
		// Replace mode cannot be checked without the original.
		if mode == Replace {
			if _, err := Check(f, nil, 0); err == nil {
				t.Errorf("replace-mode Check without the original succeeded")
			}
		}
	}
}

// TestMalformed feeds bad input to Rewrite and RewriteFile: every case must
// fail with a clear error and leave no output file.
func TestMalformed(t *testing.T) {
	good, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features"}))
	if err != nil {
		t.Fatal(err)
	}
	appended, _, err := Rewrite(good, Options{Mode: Append})
	if err != nil {
		t.Fatal(err)
	}
	replaced, _, err := Rewrite(good, Options{Mode: Replace})
	if err != nil {
		t.Fatal(err)
	}
	staleSection := bytes.Clone(appended)
	if i := bytes.Index(staleSection, []byte(objscan.LinearSectionMagic)); i >= 0 {
		staleSection[i+32]++ // nfunc
	}
	truncatedSection := appended[:len(appended)-1]
	// A magic that is none of Go's is read when the rest of the header is
	// Go's (garble writes its own: TestGarbled); with a pad byte set too,
	// it is not.
	badMagic := bytes.Clone(good)
	if ef, err := elf.NewFile(bytes.NewReader(good)); err == nil {
		badMagic[ef.Section(".gopclntab").Offset] ^= 0x40
		badMagic[ef.Section(".gopclntab").Offset+4] = 1
	}
	tests := []struct {
		name string
		data []byte
		opt  Options
		want string
	}{
		{"empty", nil, Options{}, "empty file (0 bytes)"},
		{"not a binary", []byte("#!/bin/sh\necho hello\n"), Options{}, "a script, not a binary"},
		{"truncated ELF", good[:100], Options{}, "ELF"},
		{"truncated file", good[:len(good)/2], Options{}, "ELF: file is truncated: a 24-byte read at offset"},
		{"bad pclntab magic", badMagic, Options{}, "unknown pcHeader magic"},
		{"unknown mode", good, Options{Mode: "sideways"}, `unknown mode "sideways"`},
		{"unknown variant", good, Options{Variant: "fast"}, `unknown variant "fast"`},
		{"already appended", appended, Options{Mode: Append}, "already rewritten"},
		{"already replaced", replaced, Options{Mode: Replace}, "already rewritten"},
		{"stale linear section", staleSection, Options{Mode: Append}, "stale section"},
		{"truncated linear section", truncatedSection, Options{Mode: Append}, "lies outside the"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, "in")
			if err := os.WriteFile(in, tt.data, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			_, err := RewriteFile(in, out, tt.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			t.Log(err)
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "in" {
					t.Errorf("a failed run left %s behind", e.Name())
				}
			}
		})
	}
}

// TestRewriteFileNotRegular checks that RewriteFile refuses what is not a
// regular file, leaving no output: a named pipe with no writer, which
// os.ReadFile waited on, and a directory. (/dev/zero, which os.ReadFile
// read until memory ran out, is refused the same way; objscan's
// TestOpenNotRegular opens it.)
func TestRewriteFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	paths := []string{dir}
	fifo := filepath.Join(dir, "fifo")
	if err := testenv.Mkfifo(t, fifo); err == nil {
		paths = append(paths, fifo)
	} else {
		t.Logf("no named pipe: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, in := range paths {
		_, err := RewriteFile(in, out, Options{})
		if !errors.Is(err, objscan.ErrNotRegular) {
			t.Errorf("%s: error %v, want objscan.ErrNotRegular", in, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a failed run wrote %s", in, out)
		}
	}
}

// TestFormatsRefused checks that an aix/ppc64 build (XCOFF), a
// plan9/amd64 build (Plan 9 a.out) and a js/wasm build (WebAssembly),
// which objscan reads, are refused in
// both modes with an error naming their format (rewrite dereferenced a nil
// ELF file for XCOFF).
func TestFormatsRefused(t *testing.T) {
	for _, tc := range []struct{ goos, goarch, want string }{
		{"aix", "ppc64", "aix/ppc64: XCOFF files are not supported"},
		{"plan9", "amd64", "plan9/amd64: Plan 9 a.out files are not supported"},
		{"js", "wasm", "js/wasm: WebAssembly files are not supported"},
	} {
		data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: tc.goos, GOARCH: tc.goarch}))
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []Mode{Replace, Append} {
			_, _, err := Rewrite(data, Options{Mode: mode})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s/%s, %s mode: error %v, want %q", tc.goos, tc.goarch, mode, err, tc.want)
			}
		}
	}
}

// TestUnsupported checks the clear errors for binaries replace mode cannot
// handle.
func TestUnsupported(t *testing.T) {
	tests := []struct {
		name string
		cfg  testbuild.Config
		mode Mode
		want string
	}{
		{"go1.16 layout, PE", testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.16.15"}, Replace, "a base relocation (type 10) at RVA"},
		{"go1.15 layout, Mach-O", testbuild.Config{Archive: "features", GOOS: "darwin", GOARCH: "amd64", Toolchain: "go1.15.15"}, Replace, "section __gosymtab follows __gopclntab in segment __TEXT"},
		{"go1.16 layout, Mach-O arm64", testbuild.Config{Archive: "features", GOOS: "darwin", GOARCH: "arm64", Toolchain: "go1.16.15"}, Replace, "segment __DATA_CONST"},
		{"go1.4, no moduledata", testbuild.Config{Package: "cmd/gofmt", Toolchain: "go1.4.3"}, Replace, "no moduledata points at the go1.2 pclntab"},
		{"go1.10, stripped", testbuild.Config{Package: "cmd/gofmt", Toolchain: "go1.10.8", Ldflags: "-s -w"}, Replace, "the release that wrote the go1.2 pclntab is unknown"},
		{"go1.16 PIE", testbuild.Config{Archive: "features", Toolchain: "go1.16.15", BuildMode: "pie"}, Replace, "the pclntab is in .data.rel.ro.gopclntab, where Go linkers before 1.18 put it in PIE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = Rewrite(data, Options{Mode: tt.mode})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	// Append mode works on the PIE.
	pie := testbuild.Build(t, testbuild.Config{Archive: "features", BuildMode: "pie"})
	if _, err := RewriteFile(pie, filepath.Join(t.TempDir(), "pie.append"), Options{Mode: Append, Verify: true}); err != nil {
		t.Errorf("append mode on a PIE: %v", err)
	}
}

// TestGoBinary rewrites the local toolchain's go command both ways and
// runs `go version` with the append-mode result.
func TestGoBinary(t *testing.T) {
	testenv.SkipUnlessLong(t, "rewrites and verifies the whole go binary")
	if runtime.GOOS != "linux" {
		t.Skip("needs an ELF go binary")
	}
	goroot := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	in := filepath.Join(goroot, "bin", "go")
	if _, err := os.Stat(in); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	for _, mode := range []Mode{Replace, Append} {
		out := filepath.Join(dir, "go."+string(mode))
		res, err := RewriteFile(in, out, Options{Mode: mode, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d -> %d bytes (%+d, %+.3f%%), %s", mode, res.InBytes, res.OutBytes, res.DeltaBytes, res.DeltaPercent, res.Verify.Examples)
		readelfClean(t, out)
		if mode == Append {
			cmd := exec.Command(out, "version")
			cmd.Env = append(os.Environ(), "GOROOT="+goroot)
			got, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(got), "go version go1.") {
				t.Errorf("%s version: %q, %v", out, got, err)
			}
		}
	}
}

// TestAtomicWrite checks that RewriteFile replaces an existing output only
// when it succeeds.
func TestAtomicWrite(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features"})
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RewriteFile(in, out, Options{Variant: "bogus"}); err == nil {
		t.Fatal("no error for a bogus variant")
	}
	if b, _ := os.ReadFile(out); string(b) != "previous" {
		t.Errorf("a failed run changed the existing output")
	}
	if _, err := RewriteFile(in, out, Options{}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("output %v, %v: want an executable file", st, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in the output directory, want 1", len(ents))
	}
	if _, err := RewriteFile(filepath.Join(dir, "missing"), out, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing input: %v, want ErrNotExist", err)
	}
}

// TestCheckCorrupt corrupts the linear tables and lengths of append-mode
// binaries in every variant, many times over, and requires Check to report
// mismatches (or objscan to reject the file) without panicking, in time and
// memory proportional to the binary.
func TestCheckCorrupt(t *testing.T) {
	data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features"}))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	trials := 60
	if !testenv.Full() {
		trials = 8
	}
	for _, v := range []string{"spec", "compact", "compact-fast", "spec-pool", "cf-palette-short"} {
		t.Run(v, func(t *testing.T) {
			out, _, err := Rewrite(data, Options{Mode: Append, Variant: v})
			if err != nil {
				t.Fatal(err)
			}
			sec := bytes.Index(out, []byte(objscan.LinearSectionMagic))
			if sec < 0 {
				t.Fatal("no linear section in the output")
			}
			f, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			bo := f.ByteOrder
			dataAt := sec + int(bo.Uint32(out[sec+48:]))
			dataLen := int(bo.Uint32(out[sec+52:]))
			lenAt := sec + int(bo.Uint32(out[sec+40:]))
			rng := uint64(1)
			next := func(n int) int { // xorshift: the same corruptions every run
				rng ^= rng << 13
				rng ^= rng >> 7
				rng ^= rng << 17
				return int(rng % uint64(n))
			}
			for trial := range trials {
				bad := bytes.Clone(out)
				switch trial % 3 {
				case 0: // bytes of the encodings: chunk indexes, counts, widths
					for range 1 + next(16) {
						bad[dataAt+1+next(dataLen-1)] = byte(next(256))
					}
				case 1: // 0xff runs: the widest index forms, the largest counts
					at := dataAt + 1 + next(dataLen-9)
					copy(bad[at:], bytes.Repeat([]byte{0xff}, 8))
				case 2: // a function length of 2^32-1 units
					bo.PutUint32(bad[lenAt+4*next(len(f.Funcs)):], 0xffffffff)
				}
				bf, err := objscan.NewFile(bytes.NewReader(bad))
				if err != nil {
					continue // rejected outright: fine
				}
				vr, err := Check(bf, orig, 0)
				if err != nil {
					t.Fatalf("trial %d: %v", trial, err)
				}
				if vr.OK() && !bytes.Equal(bad, out) {
					// A corruption can land in a byte no lookup reads (a
					// pad byte): then the bytes still differ from the
					// encoder's output, which Check must report.
					t.Errorf("trial %d: a corrupted binary passed Check", trial)
				}
			}
		})
	}
}

// TestAppendLinked appends the linear tables to the binaries people ship:
// PIE (internally and externally linked), externally linked with cgo,
// stripped, and a cgo program that links net with cgo on. Each result
// verifies, loads exactly the image the original loads, and runs with the
// original's output. Replace mode works on all of them too: the result
// verifies, readelf reads it without complaint, and readelf's decoding of
// the moved unwind tables (.eh_frame) gives every FDE the same PC range as
// in the original.
func TestAppendLinked(t *testing.T) {
	testenv.SkipUnlessLong(t, "links externally with gcc")
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc for external linking")
	}
	for _, tc := range []struct {
		name string
		cfg  testbuild.Config
	}{
		{"pie-internal", testbuild.Config{Archive: "features", BuildMode: "pie", LinkMode: "internal"}},
		{"pie-external", testbuild.Config{Archive: "features", BuildMode: "pie", LinkMode: "external"}},
		{"external", testbuild.Config{Archive: "features", LinkMode: "external"}},
		{"external-stripped", testbuild.Config{Archive: "features", LinkMode: "external", Ldflags: "-s -w"}},
		{"stripped", testbuild.Config{Archive: "features", Ldflags: "-s -w"}},
		{"cgo", testbuild.Config{Archive: "features", CGO: true}},
		{"pie-arm64", testbuild.Config{Archive: "features", GOARCH: "arm64", BuildMode: "pie"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, data := compiled(t, tc.cfg)
			out := filepath.Join(t.TempDir(), "appended")
			res, err := RewriteFile(in, out, Options{Mode: Append, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verify == nil || !res.Verify.OK() || res.Verify.Tables == 0 {
				t.Fatalf("verification: %+v", res.Verify)
			}
			outData, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := SameLoadedImage(data, outData); err != nil {
				t.Errorf("append mode changed the loaded image: %v", err)
			}
			readelfClean(t, out)
			want, runErr, canRun := runBinary(t, tc.cfg, in)
			if canRun && runErr != nil && tc.cfg.GOARCH != "" && strings.Contains(runErr.Error(), "Could not open") {
				// A cross-built PIE needs the target's dynamic loader.
				t.Logf("cannot run %s here: %v", tc.cfg, runErr)
				canRun = false
			}
			if canRun {
				if runErr != nil {
					t.Fatalf("the original fails: %v", runErr)
				}
				got, err, _ := runBinary(t, tc.cfg, out)
				if err != nil || !bytes.Equal(got, want) || len(got) == 0 {
					t.Errorf("the appended binary prints %q (%v), the original %q", got, err, want)
				}
			} else {
				t.Logf("cannot run %s here: %v", tc.cfg, runErr)
			}
			// Replace mode: the output verifies, readelf reads it without
			// complaint, the unwind tables cover the same PCs, and it loads:
			// the runtime finds the new table through the moduledata (and,
			// in a PIE, the relocations that initialise it) and refuses its
			// magic.
			rep := filepath.Join(t.TempDir(), "replaced")
			res, err = RewriteFile(in, rep, Options{Mode: Replace, Verify: true})
			if err != nil {
				t.Fatalf("replace mode: %v", err)
			}
			if res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
				t.Fatalf("replace mode: verification: %+v", res.Verify)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			checkSizes(t, res, orig)
			readelfClean(t, rep)
			if a, b := fdeRanges(t, in), fdeRanges(t, rep); a != b {
				t.Errorf("replace mode: the unwind tables' FDE ranges changed:\n%s\nnow\n%s", a, b)
			} else if a != "" {
				t.Logf("%d FDE ranges unchanged", strings.Count(a, "\n"))
			}
			if canRun {
				got, err, _ := runBinary(t, tc.cfg, rep)
				if err == nil || !strings.Contains(err.Error()+string(got), "magic= 0xffffffe1") {
					t.Errorf("the replace-mode binary: %q, %v; want the runtime to refuse the magic", got, err)
				}
			}
		})
	}
}

// fdeRanges returns the PC ranges of the FDEs of path's .eh_frame as
// readelf decodes them, one per line ("" if readelf is missing or the
// file has none).
func fdeRanges(t *testing.T, path string) string {
	t.Helper()
	re, err := exec.LookPath("readelf")
	if err != nil {
		return ""
	}
	out, err := exec.Command(re, "--debug-dump=frames", path).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf --debug-dump=frames %s: %v\n%s", path, err, out)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "pc="); i >= 0 {
			b.WriteString(line[i:])
			b.WriteByte('\n')
		}
		if strings.Contains(strings.ToLower(line), "warning") {
			t.Errorf("readelf --debug-dump=frames %s: %s", path, line)
		}
	}
	return b.String()
}

// machoPETargets are the Mach-O and PE builds the append and replace tests
// rewrite.
var machoPETargets = []testbuild.Config{
	{Archive: "features", GOOS: "darwin", GOARCH: "arm64"},
	{Archive: "features", GOOS: "darwin", GOARCH: "amd64"},
	{Archive: "features", GOOS: "windows", GOARCH: "amd64"},
	{Archive: "features", GOOS: "windows", GOARCH: "arm64"},
	{Archive: "features", GOOS: "windows", GOARCH: "386"},
}

// TestAppendMachOPE rewrites Mach-O and PE builds in append mode and checks
// the results with debug/macho and debug/pe (through objscan and the
// checks below), against the original tables at every PC, and, for
// darwin/arm64, the ad-hoc code signature's page hashes before and after.
func TestAppendMachOPE(t *testing.T) {
	for _, cfg := range machoPETargets {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GOOS == "darwin" {
				// The signature check is independent of the rewrite: it
				// must accept the linker's own signature.
				if err := CheckCodeSignature(data); err != nil {
					t.Fatalf("the original's signature: %v", err)
				}
			}
			out, res, err := Rewrite(data, Options{Mode: Append, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
				t.Fatalf("verify: %+v", res.Verify)
			}
			f, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"darwin": "section " + objscan.LinearSegmentMachO + "," + objscan.LinearSectionMachO, "windows": "section " + objscan.LinearSectionPE}[cfg.GOOS]
			if f.Linear == nil || f.Linear.Mode != "append" || f.Linear.Source != want {
				t.Fatalf("objscan reads %+v, want append-mode tables in %s", f.Linear, want)
			}
			if cfg.GOOS == "darwin" {
				if err := CheckCodeSignature(out); err != nil {
					t.Errorf("the output's signature: %v", err)
				}
				if err := sameMachOSections(data, out); err != nil {
					t.Error(err)
				}
			} else if err := samePESections(data, out); err != nil {
				t.Error(err)
			}
			if res.DeltaBytes != int64(len(out)-len(data)) {
				t.Errorf("delta %d, the file grew by %d", res.DeltaBytes, len(out)-len(data))
			}
			// A second append is refused, not stacked.
			if _, _, err := Rewrite(out, Options{Mode: Append}); err == nil || !strings.Contains(err.Error(), "already rewritten") {
				t.Errorf("appending twice: %v", err)
			}
			// Go signs darwin/arm64 binaries (ad hoc) and not amd64 ones.
			// A corrupted page is caught by the signature check.
			if _, _, _, _, _, signed, err := codeDirectory(out); cfg.GOOS == "darwin" && (err != nil || signed != (cfg.GOARCH == "arm64")) {
				t.Errorf("code signature found: %v (%v), want %v", signed, err, cfg.GOARCH == "arm64")
			}
			if cfg.GOOS == "darwin" && cfg.GOARCH == "arm64" {
				bad := bytes.Clone(out)
				bad[0x2000] ^= 1
				if err := CheckCodeSignature(bad); err == nil {
					t.Error("CheckCodeSignature accepts a changed page")
				}
			}
		})
	}
}

// llvmReadobjClean runs llvm-readobj on path, if it is installed, and
// fails the test on any warning or error it prints.
func llvmReadobjClean(t *testing.T, path string) {
	t.Helper()
	ro, err := exec.LookPath("llvm-readobj")
	if err != nil {
		return
	}
	var stderr bytes.Buffer
	cmd := exec.Command(ro, "--file-headers", "--sections", "--symbols", "--program-headers", path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 || bytes.Contains(bytes.ToLower(out), []byte("warning")) {
		t.Errorf("llvm-readobj %s: %v\n%s", path, err, stderr.String())
	}
}

// TestReplaceMachOPE rewrites Mach-O and PE builds in replace mode. The
// output must verify against the original at every PC, parse with
// debug/macho or debug/pe and llvm-readobj, keep the moduledata's view of
// the text and funcdata (Check), hold the new table in the new segment or
// section, and, for darwin/arm64, carry a valid ad-hoc signature.
func TestReplaceMachOPE(t *testing.T) {
	for _, cfg := range append(slices.Clone(machoPETargets),
		testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Ldflags: "-s -w"},
		testbuild.Config{Archive: "features", GOOS: "darwin", GOARCH: "arm64", Ldflags: "-s -w"},
		// The Go 1.16 layout, converted.
		testbuild.Config{Archive: "features", GOOS: "darwin", GOARCH: "amd64", Toolchain: "go1.16.15"},
	) {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH+map[bool]string{true: "-stripped"}[cfg.Ldflags != ""]+map[bool]string{true: "-" + cfg.Toolchain}[cfg.Toolchain != ""], func(t *testing.T) {
			t.Parallel()
			in := testbuild.Build(t, cfg)
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			out, res, err := Rewrite(data, Options{Mode: Replace, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
				t.Fatalf("verify: %+v", res.Verify)
			}
			checkSizes(t, res, orig)
			f, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if f.Linear == nil || f.Linear.Mode != "replace" || f.Magic != objscan.LinearMagic {
				t.Fatalf("objscan reads %+v (magic %#x), want replace-mode tables", f.Linear, f.Magic)
			}
			if res.NewPclntab != int64(len(f.Pclntab())) {
				t.Errorf("new pclntab: result says %d bytes, objscan reads %d", res.NewPclntab, len(f.Pclntab()))
			}
			if orig.Magic == objscan.Go12Magic || orig.Magic == objscan.Go116Magic {
				checkConvertedFile(t, f, orig)
			}
			// The old table is gone: the file shrank by at least its size
			// before the new one was added.
			if res.DeltaBytes > res.NewPclntab-res.OldPclntab+64<<10 {
				t.Errorf("the file grew by %d bytes, the pclntab by %d: old bytes left behind?", res.DeltaBytes, res.NewPclntab-res.OldPclntab)
			}
			if n := bytes.Count(out, orig.Pclntab()[:64]); n != 0 {
				t.Errorf("the old pcHeader is still in the file (%d times)", n)
			}
			switch cfg.GOOS {
			case "darwin":
				mf, err := macho.NewFile(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				s := mf.Section("__gopclntab")
				if s == nil || s.Seg != MachOPclntabSegment || s.Addr != f.PclntabAddr || mf.Segment(MachOPclntabSegment) == nil {
					t.Errorf("__gopclntab: %+v, objscan reads the table at %#x", s, f.PclntabAddr)
				}
				if err := CheckCodeSignature(out); err != nil {
					t.Error(err)
				}
				if _, _, _, _, _, signed, err := codeDirectory(out); err != nil || signed != (cfg.GOARCH == "arm64") {
					t.Errorf("code signature found: %v (%v), want %v", signed, err, cfg.GOARCH == "arm64")
				}
			case "windows":
				pf, err := pe.NewFile(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				s := pf.Section(PEPclntabSection)
				if s == nil || s != pf.Sections[len(pf.Sections)-1] {
					t.Fatalf("no %s section last", PEPclntabSection)
				}
				var base uint64
				switch oh := pf.OptionalHeader.(type) {
				case *pe.OptionalHeader64:
					base = oh.ImageBase
				case *pe.OptionalHeader32:
					base = uint64(oh.ImageBase)
				}
				if base+uint64(s.VirtualAddress) != f.PclntabAddr {
					t.Errorf("objscan reads the table at %#x, %s is at %#x", f.PclntabAddr, PEPclntabSection, base+uint64(s.VirtualAddress))
				}
				// The COFF string table moved with the file's tail: Go
				// 1.26 writes an empty one under -s, whose pointer pointed
				// into the new table before 2026-12-07.
				if a, b := coffStrings(t, data), coffStrings(t, out); !bytes.Equal(a, b) {
					t.Errorf("the COFF string table: %d bytes %q..., the original's %d bytes %q...", len(b), b[:min(len(b), 16)], len(a), a[:min(len(a), 16)])
				}
				// Sections stay adjacent in memory.
				for i := 1; i < len(pf.Sections); i++ {
					p, c := pf.Sections[i-1], pf.Sections[i]
					if p.VirtualAddress+max(p.VirtualSize, p.Size) > c.VirtualAddress || c.VirtualAddress-p.VirtualAddress-max(p.VirtualSize, p.Size) >= 0x1000 {
						t.Errorf("sections %s and %s are not adjacent: %#x+%#x, %#x", p.Name, c.Name, p.VirtualAddress, p.VirtualSize, c.VirtualAddress)
					}
				}
			}
			path := filepath.Join(t.TempDir(), "out")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			llvmReadobjClean(t, path)
			// A second rewrite is refused.
			if _, _, err := Rewrite(out, Options{Mode: Replace}); err == nil || !strings.Contains(err.Error(), "already rewritten") {
				t.Errorf("rewriting twice: %v", err)
			}
		})
	}
}

// coffStrings returns the COFF string table of the PE file b, which
// follows its symbols (nil if it has no symbol table).
func coffStrings(t *testing.T, b []byte) []byte {
	t.Helper()
	le := binary.LittleEndian
	coff := uint64(le.Uint32(b[0x3c:])) + 4
	ptr, nsyms := uint64(le.Uint32(b[coff+8:])), uint64(le.Uint32(b[coff+12:]))
	if ptr == 0 {
		return nil
	}
	at := ptr + 18*nsyms
	if at+4 > uint64(len(b)) {
		t.Fatalf("the COFF string table at %#x is past the %d-byte file", at, len(b))
	}
	n := uint64(le.Uint32(b[at:]))
	if n < 4 || at+n > uint64(len(b)) {
		t.Fatalf("the COFF string table at %#x: %d bytes, in a %d-byte file", at, n, len(b))
	}
	return b[at : at+n]
}

// TestDerived rewrites every target in replace mode with function lengths
// derived from the functab, in the spec, compact-fast and cf-palette-short
// variants: the
// output has objscan.LinearDerivedMagic, no length field, tables covering
// each function up to the next entry, and verifies; append mode refuses
// the option.
func TestDerived(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, tg.cfg))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"spec", "compact-fast", "cf-palette-short"} {
				out, res, err := Rewrite(data, Options{Mode: Replace, Variant: v, Derived: true, Verify: true})
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				if !res.Derived || res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
					t.Fatalf("%s: result %+v", v, res.Verify)
				}
				f, err := objscan.NewFile(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				if f.Magic != objscan.LinearDerivedMagic || !f.Linear.Derived || f.Linear.Variant != v {
					t.Errorf("%s: magic %#x, linear %+v", v, f.Magic, f.Linear)
				}
				q := uint64(f.PCQuantum)
				for i := range f.Funcs {
					if fn := &f.Funcs[i]; uint64(f.Linear.Funcs[i].Len) != (fn.End-fn.Entry)/q {
						t.Fatalf("%s: %s covers %d units, its extent is %d bytes", v, fn.Name, f.Linear.Funcs[i].Len, fn.End-fn.Entry)
					}
				}
				// The field costs bytes the derived lengths do not.
				_, field, err := Rewrite(data, Options{Mode: Replace, Variant: v})
				if err != nil {
					t.Fatal(err)
				}
				if res.NewPclntab >= field.NewPclntab {
					t.Errorf("%s: derived pclntab %d bytes, with the field %d", v, res.NewPclntab, field.NewPclntab)
				}
			}
			if _, _, err := Rewrite(data, Options{Mode: Append, Derived: true}); err == nil {
				t.Error("append mode accepts derived lengths")
			}
		})
	}
}

// TestReplaceHostileHeaders corrupts the headers (the first 4 KiB: load
// commands, PE and ELF header tables) of real Mach-O, PE and PIE builds
// and requires replace mode to fail with an error or to write a file its
// format's reader accepts, never to panic.
func TestReplaceHostileHeaders(t *testing.T) {
	trials := 60
	if !testenv.Full() {
		trials = 12
	}
	for _, cfg := range []testbuild.Config{
		{Archive: "features", GOOS: "darwin", GOARCH: "arm64"},
		{Archive: "features", GOOS: "windows", GOARCH: "amd64"},
		{Archive: "features", BuildMode: "pie"},
	} {
		t.Run(cfg.GOOS+"-"+cfg.GOARCH+cfg.BuildMode, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			rng := uint64(7)
			next := func(n int) int { // xorshift: the same corruptions every run
				rng ^= rng << 13
				rng ^= rng >> 7
				rng ^= rng << 17
				return int(rng % uint64(n))
			}
			failed := 0
			for trial := range trials {
				bad := bytes.Clone(data)
				for range 1 + next(4) {
					bad[next(min(len(bad), 0x1000))] = byte(next(256))
				}
				out, _, err := Rewrite(bad, Options{Mode: Replace, Workers: 1})
				if err != nil {
					failed++
					continue
				}
				if _, err := objscan.NewFile(bytes.NewReader(out)); err != nil {
					t.Errorf("trial %d: replace mode wrote a file objscan rejects: %v", trial, err)
				}
			}
			t.Logf("%d of %d corrupted inputs refused", failed, trials)
		})
	}
}

// TestReplaceRefusals edits the headers of real Mach-O and PE builds into
// layouts replace mode cannot rewrite, and checks that each error says why.
func TestReplaceRefusals(t *testing.T) {
	le := binary.LittleEndian
	darwin := testbuild.Config{Archive: "features", GOOS: "darwin", GOARCH: "arm64"}
	windows := testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64"}
	// machoCmd returns the offset of the first load command of type cmd.
	machoCmd := func(t *testing.T, data []byte, cmd uint32) int {
		at := machoHeaderSize64
		for range le.Uint32(data[16:]) {
			if le.Uint32(data[at:]) == cmd {
				return at
			}
			at += int(le.Uint32(data[at+4:]))
		}
		t.Fatalf("no load command %#x", cmd)
		return 0
	}
	peDir := func(data []byte, d int) int { // offset of data directory d (PE32+)
		return int(le.Uint32(data[0x3c:])) + 24 + 112 + 8*d
	}
	tests := []struct {
		name string
		cfg  testbuild.Config
		edit func(t *testing.T, data []byte)
		want string
	}{
		{"macho chained fixups", darwin, func(t *testing.T, d []byte) {
			le.PutUint32(d[machoCmd(t, d, lcUUID):], lcChainedFixups)
		}, "LC_DYLD_CHAINED_FIXUPS"},
		{"macho unknown command", darwin, func(t *testing.T, d []byte) {
			le.PutUint32(d[machoCmd(t, d, lcUUID):], 0x99)
		}, "load command 0x99 is not known to hold no file offsets"},
		{"macho no __LINKEDIT", darwin, func(t *testing.T, d []byte) {
			i := bytes.Index(d[:0x1000], []byte("__LINKEDIT"))
			copy(d[i:], "__LINKEDIX")
		}, "the last segment is __LINKEDIX, not __LINKEDIT"},
		{"pe signed", windows, func(t *testing.T, d []byte) {
			le.PutUint32(d[peDir(d, 4)+4:], 8)
		}, "the signature would have to be made again"},
		{"pe debug directory", windows, func(t *testing.T, d []byte) {
			le.PutUint32(d[peDir(d, 6)+4:], 28)
		}, "debug directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, data := compiled(t, tt.cfg)
			tt.edit(t, data)
			_, _, err := Rewrite(data, Options{Mode: Replace})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
			t.Log(err)
		})
	}
}

// TestMachOResign rebuilds the ad-hoc code signature of a darwin/arm64
// build for its own, unchanged contents: the result must be byte for byte
// the signature Go's linker wrote.
func TestMachOResign(t *testing.T) {
	data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "darwin", GOARCH: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := macho.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var sigOff, sigSize uint64
	for _, l := range mf.Loads {
		if raw := l.Raw(); binary.LittleEndian.Uint32(raw) == lcCodeSignature {
			sigOff, sigSize = uint64(binary.LittleEndian.Uint32(raw[8:])), uint64(binary.LittleEndian.Uint32(raw[12:]))
		}
	}
	text := mf.Segment("__TEXT")
	if sigSize == 0 || text == nil {
		t.Fatal("no code signature or no __TEXT")
	}
	sig := data[sigOff : sigOff+sigSize]
	got, err := machoResign(sig, data, sigOff, text.Offset, text.Offset+text.Filesz)
	if err != nil {
		t.Fatal(err)
	}
	// The linker pads the blob; the rebuilt one has no padding.
	if !bytes.Equal(got, sig[:len(got)]) || !allZero(sig[len(got):]) {
		t.Errorf("rebuilt signature (%d bytes) differs from the linker's (%d bytes)", len(got), len(sig))
	}
}

// TestReplaceGosym symbolizes replace-mode outputs through their linear
// tables alone (pcln and pcfile looked up with linearpc's checked decoder,
// file names through the copied CU and file tables) and compares every PC
// of every function with debug/gosym on the original binary, a parser
// independent of this repository.
func TestReplaceGosym(t *testing.T) {
	cfgs := []testbuild.Config{
		{Archive: "features", GOOS: "darwin", GOARCH: "arm64"},
		{Archive: "features", GOOS: "windows", GOARCH: "386"},
		{Archive: "features", BuildMode: "pie"},
		{Archive: "features", GOARCH: "arm64"},
		// Converted layouts: Go 1.2-1.15 (one synthesized compilation
		// unit) and Go 1.16-1.17 (copied CU and file tables).
		{Archive: "features", Toolchain: "go1.15.15"},
		{Archive: "features", Toolchain: "go1.16.15"},
		// Go 1.18-1.25 tables with a relocated pcHeader.textStart: a PIE
		// (.data.rel.ro.gopclntab) and a PE file with base relocations.
		{Archive: "features", Toolchain: "go1.25.14", BuildMode: "pie"},
		{Archive: "features", GOOS: "windows", GOARCH: "amd64", Toolchain: "go1.25.14"},
	}
	if _, err := exec.LookPath("gcc"); err == nil && testenv.Full() {
		cfgs = append(cfgs, testbuild.Config{Archive: "features", LinkMode: "external"})
	}
	for _, cfg := range cfgs {
		t.Run(cfg.String(), func(t *testing.T) {
			_, data := compiled(t, cfg)
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := Rewrite(data, Options{Mode: Replace})
			if err != nil {
				t.Fatal(err)
			}
			rf, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			tab, err := gosym.NewTable(nil, gosym.NewLineTable(orig.Pclntab(), orig.TextStart))
			if err != nil {
				t.Fatal(err)
			}
			if len(tab.Funcs) != len(rf.Funcs) {
				t.Fatalf("gosym finds %d functions in the original, objscan %d in the output", len(tab.Funcs), len(rf.Funcs))
			}
			q := uint64(rf.PCQuantum)
			pcs, bad := 0, 0
			for i := range rf.Funcs {
				fn, lf, g := &rf.Funcs[i], &rf.Linear.Funcs[i], &tab.Funcs[i]
				if fn.Entry != g.Entry || fn.Name != g.Name {
					t.Fatalf("function %d: %s at %#x, gosym %s at %#x", i, fn.Name, fn.Entry, g.Name, g.Entry)
				}
				if lf.PCLn == 0 || lf.PCFile == 0 {
					continue
				}
				for u := uint32(0); u < lf.Len && uint64(u)*q < g.End-g.Entry; u++ {
					line, err1 := linearpc.LookupChecked(rf.Linear.Data[lf.PCLn:], lf.Len, u)
					fi, err2 := linearpc.LookupChecked(rf.Linear.Data[lf.PCFile:], lf.Len, u)
					if err1 != nil || err2 != nil {
						t.Fatalf("%s+%#x: %v %v", fn.Name, uint64(u)*q, err1, err2)
					}
					file, err := rf.FileName(fn, fi)
					gfile, gline, _ := tab.PCToLine(fn.Entry + uint64(u)*q)
					pcs++
					if err != nil || file != gfile || int(line) != gline {
						if bad++; bad <= 5 {
							t.Errorf("%s+%#x: linear %s:%d (%v), gosym on the original %s:%d", fn.Name, uint64(u)*q, file, line, err, gfile, gline)
						}
					}
				}
			}
			if pcs == 0 || bad > 0 {
				t.Errorf("%d of %d PCs differ", bad, pcs)
			}
			t.Logf("%d PCs of %d functions agree with debug/gosym", pcs, len(rf.Funcs))
		})
	}
}

// compiled builds cfg and returns the binary's path and bytes; it skips the
// test when the target cannot be built here (no C toolchain, say).
func compiled(t *testing.T, cfg testbuild.Config) (string, []byte) {
	t.Helper()
	in, err := testbuild.Compile(context.Background(), cfg)
	if err != nil {
		t.Skipf("cannot build: %v", err)
	}
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	return in, data
}

// TestReportRefusesLinear checks that pctab-stats' report says why it
// cannot size a replace-mode binary, rather than failing on a table lookup.
func TestReportRefusesLinear(t *testing.T) {
	data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "features"}))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Rewrite(data, Options{Mode: Replace, Derived: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := objscan.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := report.Compute(f, report.Options{}); err == nil || !strings.Contains(err.Error(), "already in the linear format") {
		t.Errorf("report.Compute on a replace-mode binary: %v", err)
	}
}

// TestConvertDetects corrupts what replace mode converts or rewrites in a
// Go 1.2-1.15 and a Go 1.16-1.17 binary (an inline tree's name offset, a
// funcdata offset, a cutab entry, the moduledata's text and pclntab words)
// and expects Check, or objscan, to notice each.
func TestConvertDetects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  testbuild.Config
	}{
		{"go1.15", testbuild.Config{Archive: "features", Toolchain: "go1.15.15"}},
		{"go1.16", testbuild.Config{Archive: "features", Toolchain: "go1.16.15"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := Rewrite(data, Options{Mode: Replace, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			f, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			ef, err := elf.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			off := fileOffset(t, ef)
			o := f.ByteOrder
			h := pclnHeaderOf(f)
			pcln := off(f.PclntabAddr)
			mdAddr, _, ok := f.Moduledata()
			if !ok {
				t.Fatal("no moduledata in the output")
			}
			ps := uint64(f.PtrSize)
			textWord := 22 * ps
			if orig.Magic == objscan.Go12Magic {
				textWord = 12 * ps
			}
			// A function with an inline tree of two or more entries and
			// funcdata.
			var fn *objscan.Func
			var ofn *objscan.Func
			for i := range orig.Funcs {
				if len(orig.Funcs[i].InlTree) >= 2 && orig.Funcs[i].InlTree[0].Name != orig.Funcs[i].InlTree[1].Name {
					fn, ofn = &f.Funcs[i], &orig.Funcs[i]
					break
				}
			}
			if fn == nil {
				t.Fatal("no function with an inline tree of two distinct names")
			}
			treeAddr, size, nameAt, ok, err := f.InlTreeAt(fn)
			if !ok || err != nil {
				t.Fatalf("inline tree of %s: %v", fn.Name, err)
			}
			rec := pcln + int(h.pclnOff) + int(fn.Offset)
			fdAt := rec + objscan.LinearFuncLenOffset + 4 + 4*len(fn.PCData)
			cases := []struct {
				name string
				edit func(b []byte)
			}{
				{"inline tree name", func(b []byte) {
					e0, e1 := off(treeAddr)+nameAt, off(treeAddr)+size+nameAt
					copy(b[e0:e0+4], b[e1:e1+4])
				}},
				{"funcdata offset", func(b []byte) { o.PutUint32(b[fdAt:], o.Uint32(b[fdAt:])+8) }},
				{"moduledata.text", func(b []byte) {
					w := off(mdAddr) + int(textWord)
					o.PutUint64(b[w:], o.Uint64(b[w:])+0x1000)
				}},
				{"moduledata pclntab pointer", func(b []byte) { o.PutUint64(b[off(mdAddr):], orig.PclntabAddr) }},
			}
			if orig.Magic == objscan.Go12Magic {
				cases = append(cases, struct {
					name string
					edit func(b []byte)
				}{"cutab entry", func(b []byte) {
					at := pcln + int(h.cuOff) + 4*2
					o.PutUint32(b[at:], o.Uint32(b[at+4:]))
				}})
			}
			for _, c := range cases {
				bad := bytes.Clone(out)
				c.edit(bad)
				bf, err := objscan.NewFile(bytes.NewReader(bad))
				if err != nil {
					t.Logf("%s: objscan rejects it: %v", c.name, err)
					continue
				}
				vr, err := Check(bf, orig, 0)
				if err == nil && vr.OK() {
					t.Errorf("%s (in %s): the corrupted output passed Check", c.name, ofn.Name)
				} else if err == nil {
					t.Logf("%s: %d mismatches, first: %s", c.name, vr.Mismatches, vr.Examples[0])
				}
			}
		})
	}
}

// TestConvertHostile feeds replace mode Go 1.15 and Go 1.16 binaries whose
// old-layout pclntab, moduledata or inline trees were corrupted: targeted
// edits must give errors that say what is wrong and where, and random byte
// changes must never panic and, when the rewrite succeeds, give an output
// that passes Check.
func TestConvertHostile(t *testing.T) {
	trials := 24
	if !testenv.Full() {
		trials = 8
	}
	for _, tc := range []struct {
		name string
		cfg  testbuild.Config
	}{
		{"go1.15", testbuild.Config{Archive: "features", Toolchain: "go1.15.15"}},
		{"go1.16", testbuild.Config{Archive: "features", Toolchain: "go1.16.15"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			ef, err := elf.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			off := fileOffset(t, ef)
			o := orig.ByteOrder
			mdAddr, _, ok := orig.Moduledata()
			if !ok {
				t.Fatal("no moduledata")
			}
			md := off(mdAddr)
			pcln := off(orig.PclntabAddr)
			ps := orig.PtrSize
			// The _func record of a function with funcdata, and where its
			// first funcdata pointer is.
			var fn *objscan.Func
			for i := range orig.Funcs {
				if len(orig.Funcs[i].FuncData) > 0 && orig.Funcs[i].FuncData[0] != 0 {
					fn = &orig.Funcs[i]
					break
				}
			}
			funcBase := pcln // Go 1.2: funcoff is relative to the pclntab
			if orig.Magic == objscan.Go116Magic {
				funcBase += int(o.Uint64(data[pcln+8+6*ps:])) // pclnOffset
			}
			rec := funcBase + int(fn.Offset)
			fixed := ps + 32
			if orig.Magic == objscan.Go116Magic {
				fixed += 4
			}
			fd := rec + (fixed+4*len(fn.PCData)+ps-1)/ps*ps
			if got := o.Uint64(data[fd:]); got != fn.FuncData[0] {
				t.Fatalf("funcdata pointer at file offset %#x is %#x, objscan read %#x", fd, got, fn.FuncData[0])
			}
			for _, c := range []struct {
				name string
				edit func(b []byte)
				want string
			}{
				{"no moduledata", func(b []byte) { o.PutUint64(b[md:], 0) }, "no moduledata points at the"},
				{"funcdata below the text", func(b []byte) { o.PutUint64(b[fd:], 0x1000) }, "funcdata 0x1000 is not within 4 GiB above the text start"},
				{"funcdata 4 GiB above the text", func(b []byte) { o.PutUint64(b[fd:], fn.Entry+1<<32) }, "is not within 4 GiB above the text start"},
			} {
				bad := bytes.Clone(data)
				c.edit(bad)
				_, _, err := Rewrite(bad, Options{Mode: Replace, Workers: 1})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
				}
			}
			// Random changes in the pclntab's first 64 KiB, the moduledata
			// and the first inline tree.
			var tree int
			for i := range orig.Funcs {
				if addr, _, _, ok, _ := orig.InlTreeAt(&orig.Funcs[i]); ok && orig.Funcs[i].InlTree != nil {
					tree = off(addr)
					break
				}
			}
			regions := [][2]int{{pcln, 1 << 16}, {md, 30 * ps}, {tree, 64}}
			rng := uint64(11)
			next := func(n int) int {
				rng ^= rng << 13
				rng ^= rng >> 7
				rng ^= rng << 17
				return int(rng % uint64(n))
			}
			refused := 0
			for trial := range trials {
				bad := bytes.Clone(data)
				r := regions[trial%len(regions)]
				for range 1 + next(4) {
					bad[r[0]+next(r[1])] = byte(next(256))
				}
				if _, _, err := Rewrite(bad, Options{Mode: Replace, Verify: true, Workers: 1}); err != nil {
					refused++
				}
			}
			t.Logf("%d of %d corrupted inputs refused (the others verified)", refused, trials)
		})
	}
}

// TestConvertOldELF converts gofmt builds by Go 1.5 and 1.7 (no inline
// trees yet, a moduledata without the types word before Go 1.7, and a
// linker that put .shstrtab in .gopclntab's segment, which replace mode
// moves to the end of the file) in both replace-mode forms.
func TestConvertOldELF(t *testing.T) {
	for _, tc := range []testbuild.Config{
		{Package: "cmd/gofmt", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.5.4"},
		{Package: "cmd/gofmt", GOOS: "linux", GOARCH: "386", Toolchain: "go1.7.6"},
	} {
		t.Run(tc.Toolchain+"-"+tc.GOARCH, func(t *testing.T) {
			in := testbuild.Build(t, tc)
			ef, err := elf.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range ef.Sections {
				names = append(names, s.Name)
			}
			shstr := ef.Section(".shstrtab")
			pcln := ef.Section(".gopclntab")
			ef.Close()
			if shstr == nil || pcln == nil || shstr.Offset < pcln.Offset+pcln.Size {
				t.Fatalf("the test build no longer has .shstrtab after .gopclntab in the file")
			}
			for _, derived := range []bool{false, true} {
				out := filepath.Join(t.TempDir(), "gofmt.replace")
				res, err := RewriteFile(in, out, Options{Mode: Replace, Derived: derived, Verify: true})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Verify.OK() || res.Verify.PCs == 0 {
					t.Fatalf("verification: %+v", res.Verify)
				}
				readelfClean(t, out)
				of, err := elf.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, s := range of.Sections {
					got = append(got, s.Name)
				}
				of.Close()
				if !slices.Equal(got, names) {
					t.Errorf("section names %q, want %q", got, names)
				}
				if !derived {
					orig, err := objscan.Open(in)
					if err != nil {
						t.Fatal(err)
					}
					checkSizes(t, res, orig)
					orig.Close()
				}
			}
		})
	}
}

// fileOffset returns a function that maps an address of ef's allocated
// sections to its file offset, failing the test for any other address.
func fileOffset(t *testing.T, ef *elf.File) func(addr uint64) int {
	return func(addr uint64) int {
		t.Helper()
		for _, s := range ef.Sections {
			if s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 && addr >= s.Addr && addr-s.Addr < s.Size {
				return int(s.Offset + addr - s.Addr)
			}
		}
		t.Fatalf("address %#x is in no section", addr)
		return 0
	}
}

// TestPCLnVarint rewrites real builds of every target to cfps-varint-pcln
// (cf-palette-short, pcln left varint, as the pctab toolchain's
// pctab_varln writes): Check passes at every PC, and at run ends when
// its walk is bounded, objscan reads the
// variant, every pcln table is the original's bytes, a flipped byte in
// them fails Check, and the layouts it does not support are refused.
func TestPCLnVarint(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			data, err := os.ReadFile(testbuild.Build(t, tg.cfg))
			if err != nil {
				t.Fatal(err)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			name := objscan.LinearVarintPCLnName
			out, res, err := Rewrite(data, Options{Mode: Replace, Variant: name, Derived: true, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Variant != name || res.Verify == nil || !res.Verify.OK() || res.Verify.PCs == 0 {
				t.Fatalf("result %s, verify %+v", res.Variant, res.Verify)
			}
			f, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			l := f.Linear
			if !l.PCLnVarint || l.Variant != objscan.LinearVarintPCLnVariant || !l.Derived {
				t.Fatalf("linear %+v", l)
			}
			var lnBytes int
			seen := map[uint32]bool{}
			for i := range orig.Funcs {
				vo, lo := orig.Funcs[i].PCLn, l.Funcs[i].Offsets()[2]
				if vo == 0 || l.Funcs[i].Len == 0 {
					continue
				}
				tab := orig.Table(vo)
				if int(lo)+len(tab.Data) > len(l.Data) || !bytes.Equal(l.Data[lo:int(lo)+len(tab.Data)], tab.Data) {
					t.Fatalf("%s: pcln at %#x is not the original's %d varint bytes", orig.Funcs[i].Name, lo, len(tab.Data))
				}
				if !seen[vo] {
					seen[vo] = true
					lnBytes += len(tab.Data)
				}
			}
			_, cfps, err := Rewrite(data, Options{Mode: Replace, Variant: objscan.LinearVarintPCLnVariant, Derived: true})
			if err != nil {
				t.Fatal(err)
			}
			if lnBytes == 0 || res.LinearBytes <= int64(lnBytes) || res.NewPclntab >= cfps.NewPclntab+int64(lnBytes) {
				t.Errorf("%d bytes of varint pcln; tables %d bytes, pclntab %d (cf-palette-short's %d)", lnBytes, res.LinearBytes, res.NewPclntab, cfps.NewPclntab)
			}
			// With lookups bounded to a few bytes' walk, the pcln tables
			// are sampled at run ends, and still agree.
			func() {
				defer func(old uint64) { maxVarintWalk = old }(maxVarintWalk)
				maxVarintWalk = 64
				vr, err := Check(f, orig, 0)
				if err != nil || !vr.OK() || vr.VarintSampled == 0 || vr.Lookups >= res.Verify.Lookups {
					t.Errorf("sampled: Check %v, %d tables sampled, %d lookups (%d unsampled), %v", err, vr.VarintSampled, vr.Lookups, res.Verify.Lookups, vr.Examples)
				}
			}()
			// Flip a byte of the last pcln table stored.
			var last uint32
			for i := range l.Funcs {
				last = max(last, l.Funcs[i].Offsets()[2])
			}
			at := bytes.Index(out, l.Data[last:last+8])
			if at < 0 {
				t.Fatal("varint pcln bytes not found in the output")
			}
			bad := bytes.Clone(out)
			bad[at+1] ^= 0x21
			if bf, err := objscan.NewFile(bytes.NewReader(bad)); err == nil {
				if vr, err := Check(bf, orig, 0); err != nil || vr.OK() {
					t.Errorf("a corrupted varint pcln table: Check %v, %+v", err, vr)
				}
			}
			// Random bytes anywhere in the pctab (linear encodings and
			// varint pcln tables): Check never panics and never passes.
			start := bytes.Index(out, l.Data[1:65]) - 1
			if start < 0 {
				t.Fatal("pctab not found in the output")
			}
			rng := uint64(7)
			next := func(n int) int {
				rng ^= rng << 13
				rng ^= rng >> 7
				rng ^= rng << 17
				return int(rng % uint64(n))
			}
			for trial := range 12 {
				bad := bytes.Clone(out)
				for range 1 + next(8) {
					bad[start+1+next(len(l.Data)-objscan.LinearPad-1)] = byte(next(256))
				}
				bf, err := objscan.NewFile(bytes.NewReader(bad))
				if err != nil {
					continue
				}
				if vr, err := Check(bf, orig, 0); err != nil {
					t.Fatalf("trial %d: %v", trial, err)
				} else if vr.OK() && !bytes.Equal(bad, out) {
					t.Errorf("trial %d: a corrupted binary passed Check", trial)
				}
			}
			for _, opt := range []Options{{Mode: Replace, Variant: name}, {Mode: Append, Variant: name}} {
				if _, _, err := Rewrite(data, opt); err == nil {
					t.Errorf("%+v: accepted", opt)
				}
			}
		})
	}
}

// TestCorpusLinearMixes rewrites every binary of the shared corpus
// (docs/testing.md, "The corpus") that replace mode with derived lengths
// takes in cf-palette-short also in cfps-varint-pcln and in cfps-offset,
// and requires Check to pass at every PC. It is skipped, saying why,
// without a corpus.
func TestCorpusLinearMixes(t *testing.T) {
	files := testenv.CorpusFiles(t)
	testenv.SkipUnlessLong(t, "rewrites every binary of the corpus three times")
	for _, path := range files {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := Rewrite(data, Options{Mode: Replace, Variant: objscan.LinearVarintPCLnVariant, Derived: true}); err != nil {
				t.Skipf("replace mode refuses it: %v", err)
			}
			for _, variant := range []string{objscan.LinearVarintPCLnName, "cfps-offset"} {
				_, res, err := Rewrite(data, Options{Mode: Replace, Variant: variant, Derived: true, Verify: true})
				if err != nil {
					t.Fatalf("%s: %v", variant, err)
				}
				if !res.Verify.OK() || res.Verify.PCs == 0 {
					t.Fatalf("%s: verify %+v", variant, res.Verify)
				}
				t.Logf("%s: %s %s/%s: %+d bytes (%+.3f%%), %d tables, %d PCs", variant, res.GoVersion, res.GOOS, res.GOARCH, res.DeltaBytes, res.DeltaPercent, res.Verify.Tables, res.Verify.PCs)
			}
		})
	}
}

// TestGarbled rewrites binaries with garble's pclntab changes, a magic of
// its own and encrypted _func entryOffs: the callers program with the
// changes made to it (testbuild.MimicGarble), and, in the long run, built
// by garble in each mode. Both modes must write a file that objscan reads
// with the same functions and that Check passes at every PC (Verify); the
// append mode keeps the original table, so a garbled program still runs,
// and prints what it printed before.
func TestGarbled(t *testing.T) {
	check := func(t *testing.T, cfg testbuild.Config, data []byte) {
		orig, err := objscan.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if !orig.ForeignMagic || orig.EntryOffKey == 0 {
			t.Fatalf("ForeignMagic %v, EntryOffKey %#x: not garbled", orig.ForeignMagic, orig.EntryOffKey)
		}
		for _, opt := range []Options{{Mode: Append}, {Mode: Replace}, {Mode: Replace, Derived: true}} {
			opt.Verify = true
			out, res, err := Rewrite(data, opt)
			if err != nil {
				t.Fatalf("%+v: %v", opt, err)
			}
			rf, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("%+v: reading the output: %v", opt, err)
			}
			if rf.EntryOffKey != orig.EntryOffKey || len(rf.Funcs) != len(orig.Funcs) || rf.Funcs[len(rf.Funcs)-1].Entry != orig.Funcs[len(orig.Funcs)-1].Entry {
				t.Errorf("%+v: output has key %#x and %d functions, want %#x and %d", opt, rf.EntryOffKey, len(rf.Funcs), orig.EntryOffKey, len(orig.Funcs))
			}
			if res.Verify == nil || res.Verify.Mismatches != 0 {
				t.Errorf("%+v: verify %+v", opt, res.Verify)
			}
			if !cfg.Garble || opt.Mode != Append {
				continue
			}
			path := filepath.Join(t.TempDir(), "appended")
			if err := os.WriteFile(path, out, 0o755); err != nil {
				t.Fatal(err)
			}
			in, err := testbuild.Compile(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := testbuild.Run(t, cfg, path), testbuild.Run(t, cfg, in); !bytes.Equal(got, want) {
				t.Errorf("the appended program printed\n%s\nthe original\n%s", got, want)
			}
		}
	}
	t.Run("mimic", func(t *testing.T) {
		_, data := compiled(t, testbuild.Config{Archive: "callers"})
		g, err := testbuild.MimicGarble(data, 0x6333c187, 0xa39c6fd7)
		if err != nil {
			t.Fatal(err)
		}
		check(t, testbuild.Config{}, g)
	})
	for _, mode := range []string{"", "-tiny", "-literals"} {
		t.Run("garble"+mode, func(t *testing.T) {
			cfg := testbuild.Config{Archive: "callers", Garble: true, GarbleFlags: mode}
			data, err := os.ReadFile(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			check(t, cfg, data)
		})
	}
}
