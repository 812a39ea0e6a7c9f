package testbuild

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testenv"
)

// TestArchivesHost builds every archive for the host and runs it.
func TestArchivesHost(t *testing.T) {
	names, err := Archives()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"callers", "features", "generics"} {
		if !slices.Contains(names, want) {
			t.Errorf("archive %q missing from %v", want, names)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Archive: name}
			bin := Build(t, cfg)
			if root, err := moduleRoot(); err != nil {
				t.Fatal(err)
			} else if within(bin, root) {
				t.Fatalf("binary %s is inside the repository %s", bin, root)
			}
			out := Run(t, cfg, bin)
			if len(out) == 0 {
				t.Fatal("no output")
			}
			// The programs must be deterministic.
			if again := Run(t, cfg, bin); !bytes.Equal(out, again) {
				t.Errorf("two runs differ:\n%s\n----\n%s", out, again)
			}
			if bytes.HasPrefix(out, []byte(`{"kind":"meta"`)) {
				c, err := ParseCallers(out)
				if err != nil {
					t.Fatal(err)
				}
				checkCallers(t, c, runtime.GOOS, runtime.GOARCH)
			}
		})
	}
}

// TestCallersStacks checks the stacks of the callers program built by the
// local toolchain, whose inlining decisions are known.
func TestCallersStacks(t *testing.T) {
	c := RunCallers(t, Config{})
	checkCallers(t, c, runtime.GOOS, runtime.GOARCH)
	tests := []struct {
		stack string
		want  []string // innermost frames, in order
	}{
		{"leaf-inlined", []string{"main.leafHelper", "main.leafOuter", "main.main"}},
		{"mid-inlined", []string{"main.(*recorder).capture", "main.midB", "main.midA", "main.midOuter", "main.main"}},
		{"alternating", []string{"main.(*recorder).capture", "main.altE", "main.altD", "main.altC", "main.altB", "main.altA", "main.main"}},
		{"skip0", []string{"runtime.Callers"}},
		{"closures", []string{"main.(*recorder).capture", "main.closureOuter.func1", "main.apply", "main.closureOuter.func2", "main.closureOuter", "main.main"}},
		{"methods", []string{"main.(*recorder).capture", "main.square.scaled", "main.(*square).area", "main.methodOuter", "main.main"}},
		{"defer", []string{"main.(*recorder).capture", "main.deferHelper", "main.deferOuter.func1", "main.deferOuter", "main.main"}},
		{"panic", []string{"main.(*recorder).capture", "main.panicOuter.func1", "runtime.gopanic", "main.panicHelper", "main.panicOuter", "main.main"}},
		{"goroutine", []string{"main.(*recorder).capture", "main.goroutineHelper", "main.goroutineBody", "runtime.goexit"}},
	}
	inlined := map[string]bool{
		"main.leafHelper": true, "main.midA": true, "main.midB": true,
		"main.altB": true, "main.altC": true, "main.altE": true,
		"main.closureOuter.func2": true, "main.square.scaled": true,
		"main.deferHelper": true, "main.panicHelper": true,
		"main.goroutineHelper": true, "main.skipHelper": true,
		"runtime.Callers": true, // inlinable since Go 1.2x
	}
	if len(c.Stacks) != len(tests) {
		t.Errorf("got %d stacks, want %d", len(c.Stacks), len(tests))
	}
	for _, tt := range tests {
		s, ok := c.Stack(tt.stack)
		if !ok {
			t.Errorf("stack %q missing", tt.stack)
			continue
		}
		got := s.Functions()
		if len(got) < len(tt.want) || !slices.Equal(got[:len(tt.want)], tt.want) {
			t.Errorf("stack %q: functions %q, want prefix %q", tt.stack, got, tt.want)
			continue
		}
		for _, f := range s.Frames {
			if inlined[f.Function] != f.Inlined {
				t.Errorf("stack %q: %s inlined=%v, want %v", tt.stack, f.Function, f.Inlined, inlined[f.Function])
			}
		}
	}
}

// checkCallers checks properties that hold for any toolchain: frames are
// consistent with PCs, entries and FuncForPC, and some frame is inlined.
func checkCallers(t *testing.T, c *Callers, goos, goarch string) {
	t.Helper()
	if c.Meta.GOOS != goos || c.Meta.GOARCH != goarch {
		t.Errorf("meta: target %s/%s, want %s/%s", c.Meta.GOOS, c.Meta.GOARCH, goos, goarch)
	}
	if c.Meta.MainName != "main.main" || c.Meta.MainEntry == 0 {
		t.Errorf("meta: main entry %q at %#x", c.Meta.MainName, c.Meta.MainEntry)
	}
	if len(c.Stacks) == 0 {
		t.Fatal("no stacks")
	}
	nInlined := 0
	for _, s := range c.Stacks {
		if len(s.PCs) == 0 || len(s.Frames) == 0 {
			t.Errorf("stack %q: %d PCs, %d frames", s.Name, len(s.PCs), len(s.Frames))
			continue
		}
		if len(s.Frames) != len(s.PCs) {
			// Callers returns one PC per frame, inlined or not.
			t.Errorf("stack %q: %d PCs but %d frames", s.Name, len(s.PCs), len(s.Frames))
		}
		for i, f := range s.Frames {
			switch {
			case f.Function == "" || f.File == "" || f.Line <= 0 || f.Entry == 0:
				t.Errorf("stack %q frame %d: incomplete %+v", s.Name, i, f)
			case f.Inlined:
				nInlined++
				if f.FuncName != "" {
					t.Errorf("stack %q frame %d: inlined frame with Func %q", s.Name, i, f.FuncName)
				}
			case f.FuncName != f.Function:
				t.Errorf("stack %q frame %d: Func.Name %q != Function %q", s.Name, i, f.FuncName, f.Function)
			}
			if i < len(s.PCInfo) {
				if pi := s.PCInfo[i]; pi.Entry != f.Entry {
					t.Errorf("stack %q frame %d: FuncForPC(%#x).Entry %#x != frame entry %#x", s.Name, i, pi.PC, pi.Entry, f.Entry)
				}
			}
		}
		// An inlined frame shares its entry with the real frame it sits in.
		for i := 0; i+1 < len(s.Frames); i++ {
			if s.Frames[i].Inlined && s.Frames[i].Entry != s.Frames[i+1].Entry {
				t.Errorf("stack %q: inlined frame %d entry %#x != next frame entry %#x", s.Name, i, s.Frames[i].Entry, s.Frames[i+1].Entry)
			}
		}
	}
	if nInlined == 0 {
		t.Error("no inlined frame in any stack")
	}
}

// TestBigFunc checks that main.bigFunc of the features program spans more
// than 16 chunks of 256 bytes.
func TestBigFunc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads ELF symbols")
	}
	bin := Build(t, Config{Archive: "features"})
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "main.bigFunc" {
			if s.Size <= 4096 {
				t.Errorf("main.bigFunc is %d bytes, want > 4096", s.Size)
			}
			t.Logf("main.bigFunc: %d bytes", s.Size)
			return
		}
	}
	t.Fatal("no symbol main.bigFunc")
}

// TestCrash checks that the features program dies of its panic with -crash.
func TestCrash(t *testing.T) {
	cfg := Config{Archive: "features"}
	bin := Build(t, cfg)
	_, err := Exec(t.Context(), cfg, bin, "-crash")
	if err == nil || !strings.Contains(err.Error(), "main.crashInner") {
		t.Fatalf("want a traceback through main.crashInner, got %v", err)
	}
}

// TestTargets builds the callers program for every standard target, and
// runs it where this machine can (natively or under qemu). Under -short it
// only uses builds and toolchains that are already cached.
func TestTargets(t *testing.T) {
	seen := map[string]bool{}
	for _, tg := range Targets() {
		if seen[tg.Name] {
			t.Errorf("duplicate target name %q", tg.Name)
		}
		seen[tg.Name] = true
		t.Run(tg.Name, func(t *testing.T) {
			cfg := tg.For("callers")
			if tg.Config.LinkMode == "external" {
				if _, err := exec.LookPath("gcc"); err != nil {
					t.Skip("external linking needs gcc")
				}
			}
			if testing.Short() && !isCached(t, cfg) {
				t.Skip("skipping uncached cross build under -short")
			}
			bin := Build(t, cfg)
			if _, err := Runner(cfg); errors.Is(err, ErrCannotRun) {
				t.Logf("built %s; not running it: %v", bin, err)
				return
			}
			c, err := ParseCallers(Run(t, cfg, bin))
			if err != nil {
				t.Fatal(err)
			}
			checkCallers(t, c, tg.Config.GOOS, tg.Config.GOARCH)
			if tg.Config.Toolchain != "" && c.Meta.GoVersion != tg.Config.Toolchain {
				t.Errorf("built by %s, want %s", c.Meta.GoVersion, tg.Config.Toolchain)
			}
		})
	}
}

// TestOldToolchain proves that an older toolchain can be downloaded and
// used: it builds and runs the callers program with go1.15.15, the oldest
// standard toolchain. It is skipped under -short unless already cached.
func TestOldToolchain(t *testing.T) {
	cfg := Config{Archive: "callers", Toolchain: "go1.15.15", GOOS: "linux", GOARCH: "amd64"}
	testenv.SkipUnlessLong(t, "downloads go1.15.15")
	if testing.Short() && !isCached(t, cfg) {
		t.Skip("skipping under -short: needs a go1.15.15 build, which may download the toolchain")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs a linux/amd64 binary")
	}
	c := RunCallers(t, cfg)
	if c.Meta.GoVersion != "go1.15.15" {
		t.Errorf("built by %s, want go1.15.15", c.Meta.GoVersion)
	}
	checkCallers(t, c, "linux", "amd64")
}

// TestUnsupported checks that an archive declaring a newer Go than the
// toolchain is refused before any download.
func TestUnsupported(t *testing.T) {
	_, err := Compile(t.Context(), Config{Archive: "generics", Toolchain: "go1.15.15"})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}

// TestNeedsDownload checks that a missing toolchain is not downloaded
// unless allowed.
func TestNeedsDownload(t *testing.T) {
	cfg := Config{Archive: "callers", Toolchain: "go1.15", GOOS: "linux", GOARCH: "amd64"}
	p, err := newPlan(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !p.needsDownload() {
		t.Skip("go1.15 is in the module cache")
	}
	_, err = Compile(t.Context(), cfg)
	if !errors.Is(err, ErrNeedsDownload) {
		t.Fatalf("got %v, want ErrNeedsDownload", err)
	}
}

// TestCacheKey checks that every setting changes the cache path and that
// the cache lies outside the repository.
func TestCacheKey(t *testing.T) {
	base := Config{Archive: "callers", GOOS: "linux", GOARCH: "amd64"}
	variants := []Config{
		base,
		{Archive: "features", GOOS: "linux", GOARCH: "amd64"},
		{Archive: "callers", GOOS: "linux", GOARCH: "arm64"},
		{Archive: "callers", GOOS: "windows", GOARCH: "amd64"},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.21.13"},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", Ldflags: "-s -w"},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", Gcflags: "-l"},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", BuildMode: "pie"},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", LinkMode: "external"},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", CGO: true},
		{Archive: "callers", GOOS: "linux", GOARCH: "amd64", Race: true},
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]Config{}
	for _, cfg := range variants {
		p, err := newPlan(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := paths[p.out]; dup {
			t.Errorf("%v and %v share cache path %s", prev, cfg, p.out)
		}
		paths[p.out] = cfg
		if within(p.out, root) {
			t.Errorf("cache path %s is inside the repository", p.out)
		}
		again, err := newPlan(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if again.out != p.out {
			t.Errorf("%v: cache path not stable: %s then %s", cfg, p.out, again.out)
		}
	}
}

// TestArchivePath checks name resolution.
func TestArchivePath(t *testing.T) {
	tests := []struct {
		name    string
		wantErr bool
		suffix  string
	}{
		{"callers", false, filepath.Join("testdata", "callers.txtar")},
		{"/tmp/x.txtar", false, "/tmp/x.txtar"},
		{"a/b", true, ""},
	}
	for _, tt := range tests {
		got, err := ArchivePath(tt.name)
		if (err != nil) != tt.wantErr || !strings.HasSuffix(got, tt.suffix) {
			t.Errorf("ArchivePath(%q) = %q, %v", tt.name, got, err)
		}
	}
	if v, err := ArchiveGoVersion("generics"); err != nil || v != "go1.18" {
		t.Errorf("ArchiveGoVersion(generics) = %q, %v; want go1.18", v, err)
	}
}

// TestParseCallers checks the parser on small inputs.
func TestParseCallers(t *testing.T) {
	meta := `{"kind":"meta","goVersion":"go1.26.8","goos":"linux","goarch":"amd64","mainName":"main.main","mainEntry":4096}`
	stack := `{"kind":"stack","name":"s","skip":1,"pcs":[18446744073709551615],"pcInfo":[{"pc":1,"function":"f","entry":1,"file":"x.go","line":3}],"frames":[{"pc":1,"function":"f","file":"x.go","line":3,"entry":1,"funcName":"f","inlined":false}]}`
	tests := []struct {
		name    string
		in      string
		wantErr bool
		stacks  int
	}{
		{"ok", meta + "\n" + stack + "\n", false, 1},
		{"blank lines", "\n" + meta + "\n\n", false, 0},
		{"no meta", stack + "\n", true, 0},
		{"two metas", meta + "\n" + meta + "\n", true, 0},
		{"bad kind", meta + "\n" + `{"kind":"x"}` + "\n", true, 0},
		{"bad json", meta + "\n{", true, 0},
		{"pcinfo mismatch", meta + "\n" + strings.Replace(stack, `"pcs":[18446744073709551615]`, `"pcs":[1,2]`, 1), true, 0},
	}
	for _, tt := range tests {
		c, err := ParseCallers([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", tt.name, err, tt.wantErr)
			continue
		}
		if err == nil && len(c.Stacks) != tt.stacks {
			t.Errorf("%s: %d stacks, want %d", tt.name, len(c.Stacks), tt.stacks)
		}
	}
	c, err := ParseCallers([]byte(meta + "\n" + stack))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Stack("s"); !ok || s.PCs[0] != 1<<64-1 || c.Meta.MainEntry != 4096 {
		t.Errorf("parsed %+v", c)
	}
}

// isCached reports whether cfg's binary is already in the cache.
func isCached(t *testing.T, cfg Config) bool {
	t.Helper()
	p, err := newPlan(t.Context(), cfg)
	if err != nil {
		return false
	}
	_, err = os.Stat(p.out)
	return err == nil
}

// TestPrune checks that only files, garble builds and temporary
// directories unused since the cutoff are deleted.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	type file struct {
		name string
		age  time.Duration
		keep bool
	}
	files := []file{
		{"fresh", time.Hour, true},
		{"recent", 13 * 24 * time.Hour, true},
		{"old", 15 * 24 * time.Hour, false},
		{".tmp-crashed", 30 * 24 * time.Hour, false},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-f.age), now.Add(-f.age)); err != nil {
			t.Fatal(err)
		}
	}
	// Directories: garble's builds and temporary ones are pruned by age
	// with their contents; others (the locks) stay.
	dirs := []file{
		{"subdir", 30 * 24 * time.Hour, true},
		{"garble-v0.17.0-go1.26.8", 15 * 24 * time.Hour, false},
		{"garble-v0.17.0-go1.27.3", time.Hour, true},
		{".tmp-garble-crashed", 15 * 24 * time.Hour, false},
	}
	for _, d := range dirs {
		path := filepath.Join(dir, d.name)
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, "garble"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-d.age), now.Add(-d.age)); err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, dirs...)
	// A use refreshes an old file, which then survives.
	used := filepath.Join(dir, "old-but-used")
	if err := os.WriteFile(used, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(used, now.Add(-20*24*time.Hour), now.Add(-20*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(used)
	if err != nil {
		t.Fatal(err)
	}
	markUsed(used, fi)

	prune(dir, now.Add(-pruneAge))
	for _, f := range append(files, file{"old-but-used", 0, true}) {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if kept := err == nil; kept != f.keep {
			t.Errorf("%s: kept=%v, want %v", f.name, kept, f.keep)
		}
	}
}

// TestBuildError checks that a failing build reports the compiler's
// message and leaves nothing in the cache.
func TestBuildError(t *testing.T) {
	t.Setenv("PCTAB_TESTBUILD_CACHE", t.TempDir())
	archive := filepath.Join(t.TempDir(), "bad.txtar")
	src := "-- go.mod --\nmodule bad\n\ngo 1.15\n-- main.go --\npackage main\n\nfunc main() { undefinedFunc() }\n"
	if err := os.WriteFile(archive, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Compile(t.Context(), Config{Archive: archive})
	if err == nil || !strings.Contains(err.Error(), "undefinedFunc") || !strings.Contains(err.Error(), "GOTOOLCHAIN=") {
		t.Fatalf("got error %v, want the compiler's message and the build settings", err)
	}
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "locks" { // the builds' lock files, which stay
			t.Errorf("cache holds %s after a failed build", e.Name())
		}
	}
}

// TestExecRefused checks the path a test takes under qemu-user without
// binfmt_misc: a binary that the target config says is native, but that
// the kernel refuses, runs through the emulator its ELF header names. It
// hands Exec a linux/arm64 (or, on arm64, linux/amd64) callers program
// under a config for the machine's own target.
func TestExecRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs linux")
	}
	foreign := map[string]string{"arm64": "amd64"}[runtime.GOARCH]
	if foreign == "" {
		foreign = "arm64"
	}
	cfg := Config{Archive: "callers", GOOS: "linux", GOARCH: foreign}
	if _, err := Runner(cfg); errors.Is(err, ErrCannotRun) {
		t.Skip(err)
	}
	if testing.Short() && !isCached(t, cfg) {
		t.Skip("skipping uncached cross build under -short")
	}
	bin := Build(t, cfg)
	native := Config{Archive: "callers"}
	out, err := Exec(t.Context(), native, bin)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCallers(out)
	if err != nil {
		t.Fatal(err)
	}
	checkCallers(t, c, "linux", foreign)

	// A file that is no ELF binary at all still reports why.
	junk := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junk, []byte("\x00\x01not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Exec(t.Context(), native, junk); !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "architecture is unknown") {
		t.Errorf("Exec(junk) = %v, want ErrCannotRun naming the unknown architecture", err)
	}
}
