// Package testbuild compiles the Go programs stored as txtar archives in the
// module's testdata directory into real binaries for tests, for any target
// the go command can cross-compile to and with older Go toolchains.
//
// Binaries are cached outside the repository, under
// os.UserCacheDir()/pctab-testbuild (or $PCTAB_TESTBUILD_CACHE), keyed by a
// hash of the archive content, the toolchain version and every build
// setting, so that re-running tests is instant. Older toolchains are fetched
// by the local go command through GOTOOLCHAIN=go1.X.Y, which keeps them in
// the module cache.
//
// Every build uses -trimpath, so file names in the binaries do not depend on
// the temporary directory the archive is unpacked into: files of the
// program appear as "<module path>/<file>", for example
// "example.com/callers/main.go".
package testbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/version"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testenv"
	"golang.org/x/tools/txtar"
)

// modulePath is the path of the module whose testdata holds the archives.
const modulePath = "github.com/pctab/pctab"

// cacheSchema changes whenever the layout or the meaning of cached builds
// changes, so that old entries are never reused.
const cacheSchema = "pctab-testbuild/v1"

// buildTimeout bounds one go build, including a toolchain download.
const buildTimeout = 20 * time.Minute

// ErrUnsupported is returned (wrapped) by Compile when the archive needs a
// newer Go than the requested toolchain, as declared by the go directive of
// its go.mod.
var ErrUnsupported = errors.New("archive needs a newer Go toolchain")

// ErrNeedsDownload is returned (wrapped) by Compile when the build needs a
// toolchain that is not in the module cache and downloads are not allowed.
var ErrNeedsDownload = errors.New("toolchain not in the module cache")

// Config describes one build of a testdata archive.
type Config struct {
	// Archive names a file testdata/<Archive>.txtar at the module root
	// ("callers", "features", "generics"). A value ending in ".txtar" is
	// taken as a file path instead.
	Archive string
	// Package names a command of the toolchain's own standard library to
	// build instead of an archive, such as "cmd/gofmt"; Archive must then
	// be empty. It builds with every release back to go1.2.2, each in its
	// default GOPATH or module mode.
	Package string
	// Toolchain is the Go toolchain to build with, such as "go1.15.15".
	// Empty means the local go command, without switching toolchains.
	Toolchain string
	// GOOS and GOARCH select the target. Empty means the OS and architecture
	// of the running process (runtime.GOOS and runtime.GOARCH).
	GOOS, GOARCH string
	// Ldflags and Gcflags are passed to go build as -ldflags and -gcflags,
	// for example "-s -w" or "-l".
	Ldflags, Gcflags string
	// BuildMode is passed as -buildmode when not empty, for example "pie".
	BuildMode string
	// LinkMode is passed to the linker as -linkmode when not empty:
	// "internal" or "external". External linking needs a C toolchain and
	// turns cgo on.
	LinkMode string
	// CGO sets CGO_ENABLED=1. By default builds use CGO_ENABLED=0, so that
	// they do not depend on a C toolchain.
	CGO bool
	// Race builds with -race, which turns cgo on and links the race
	// detector's C runtime (ThreadSanitizer) into the binary.
	Race bool
	// Garble builds with garble (mvdan.cc/garble at GarbleVersion, which
	// the local go command builds into the cache on first use, fetching
	// it through the module proxy) instead of go build, with GarbleFlags
	// before garble's build command, such as "-tiny" or "-literals". It
	// needs the local toolchain (Toolchain empty). garble adds -trimpath
	// itself, and obfuscates names and file names.
	Garble      bool
	GarbleFlags string
	// AllowDownload lets Compile download a toolchain that is missing from
	// the module cache (or garble). Build ignores it and decides from
	// testing.Short.
	AllowDownload bool
}

// target returns the GOOS and GOARCH the configuration builds for.
func (c Config) target() (goos, goarch string) {
	goos, goarch = c.GOOS, c.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	return goos, goarch
}

// String describes the configuration briefly, for messages.
func (c Config) String() string {
	goos, goarch := c.target()
	tc := c.Toolchain
	if tc == "" {
		tc = "local go"
	}
	what := c.Archive
	if c.Package != "" {
		what = c.Package
	}
	s := fmt.Sprintf("%s for %s/%s with %s", what, goos, goarch, tc)
	for _, f := range []struct{ name, val string }{
		{"-ldflags", c.Ldflags}, {"-gcflags", c.Gcflags},
		{"-buildmode", c.BuildMode}, {"-linkmode", c.LinkMode},
	} {
		if f.val != "" {
			s += fmt.Sprintf(" %s=%q", f.name, f.val)
		}
	}
	if c.Race {
		s += " -race"
	}
	if c.Garble {
		s += strings.TrimSpace(" garble@" + GarbleVersion + " " + c.GarbleFlags)
	}
	if c.cgoEnabled() {
		s += " CGO_ENABLED=1"
	}
	return s
}

// cgoEnabled reports whether the build runs with CGO_ENABLED=1.
func (c Config) cgoEnabled() bool { return c.CGO || c.Race || c.LinkMode == "external" }

// Build compiles the archive described by cfg, or finds it in the cache, and
// returns the path of the binary. The file is shared with other tests and
// processes: do not modify it.
//
// A build with another toolchain than the local one (cfg.Toolchain set) is
// a long test: Build skips it unless PCTAB_LONG=1 (package testenv), and
// under -short when the toolchain must be downloaded first. It also skips
// when the archive needs a newer Go than cfg.Toolchain. Any other failure
// is fatal.
func Build(t testing.TB, cfg Config) string {
	t.Helper()
	if cfg.Toolchain != "" {
		testenv.SkipUnlessLong(t, "builds with "+cfg.Toolchain)
	}
	if cfg.Garble {
		testenv.SkipUnlessLong(t, "builds with garble "+GarbleVersion+", fetched through the module proxy")
	}
	cfg.AllowDownload = !testing.Short()
	path, err := Compile(t.Context(), cfg)
	switch {
	case err == nil:
		return path
	case errors.Is(err, ErrUnsupported):
		t.Skip(err)
	case errors.Is(err, ErrNeedsDownload):
		t.Skipf("skipping under -short: %v; run without -short to download it", err)
	default:
		t.Fatal(err)
	}
	return ""
}

// Compile is Build for callers without a testing.TB: it returns the path of
// the binary, building it if it is not in the cache. It downloads a missing
// toolchain only when cfg.AllowDownload is set, and otherwise returns an
// error wrapping ErrNeedsDownload.
func Compile(ctx context.Context, cfg Config) (string, error) {
	p, err := newPlan(ctx, cfg)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(p.out); err == nil {
		markUsed(p.out, fi)
		return p.out, nil
	}
	if p.needsDownload() && !cfg.AllowDownload {
		return "", fmt.Errorf("testbuild: building %v: %w: %s", cfg, ErrNeedsDownload, cfg.Toolchain)
	}
	// Test packages run in parallel processes that often want the same
	// binary: the first builds it, the others wait for it.
	locks := filepath.Join(filepath.Dir(p.out), "locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		return "", fmt.Errorf("testbuild: creating cache directory: %w", err)
	}
	unlock, err := lockFile(filepath.Join(locks, filepath.Base(p.out)))
	if err != nil {
		return "", fmt.Errorf("testbuild: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(p.out); err == nil {
		return p.out, nil // built by another process while this one waited
	}
	if cfg.Garble {
		if p.garble, err = garbleBinary(ctx, p.env, GarbleVersion, cfg.AllowDownload); err != nil {
			return "", fmt.Errorf("testbuild: building %v: %w", cfg, err)
		}
	}
	if err := p.build(ctx); err != nil {
		return "", fmt.Errorf("testbuild: building %v: %w", cfg, err)
	}
	prune(filepath.Dir(p.out), time.Now().Add(-pruneAge))
	return p.out, nil
}

// pruneAge is how long a cached binary may go unused before a later build
// deletes it; archives change, and their old builds are never used again.
const pruneAge = 14 * 24 * time.Hour

// markUsed records a use of a cached file in its modification time, at
// most once a day, so that prune keeps it.
func markUsed(path string, fi os.FileInfo) {
	now := time.Now()
	if now.Sub(fi.ModTime()) > 24*time.Hour {
		os.Chtimes(path, now, now) // best effort: a failure only risks a rebuild
	}
}

// prune deletes the files of the cache directory dir last used before
// cutoff, including temporary files that crashed builds left behind, and
// the directories of the cache's own making: garble's builds
// (garbleBinary) and temporary directories. Other directories, such as
// the locks, stay. It is best effort: errors are ignored.
func prune(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		ownDir := e.IsDir() && (strings.HasPrefix(name, "garble-") || strings.HasPrefix(name, ".tmp-"))
		if !e.Type().IsRegular() && !ownDir {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.RemoveAll(filepath.Join(dir, name))
		}
	}
}

// goEnv holds the output of go env -json of the local go command.
type goEnv map[string]string

// readGoEnv runs go env with the local go command.
func readGoEnv(ctx context.Context) (goEnv, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "-json")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env -json: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var env goEnv
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("parsing go env -json: %w", err)
	}
	for _, k := range []string{"GOVERSION", "GOMODCACHE", "GOHOSTOS", "GOHOSTARCH"} {
		if env[k] == "" {
			return nil, fmt.Errorf("go env -json: no %s", k)
		}
	}
	return env, nil
}

// plan is one resolved build: its inputs, its key and its output path.
type plan struct {
	cfg       Config
	env       goEnv
	archive   *txtar.Archive
	goVersion string // version of the toolchain that builds
	goos      string
	goarch    string
	out       string // final path of the binary in the cache
	garble    string // garble's path, for a Config.Garble build
}

// newPlan reads the archive and the go environment and computes where the
// binary of cfg lives in the cache.
func newPlan(ctx context.Context, cfg Config) (*plan, error) {
	if (cfg.Archive == "") == (cfg.Package == "") {
		return nil, errors.New("testbuild: exactly one of Config.Archive and Config.Package must be set")
	}
	if cfg.Garble && (cfg.Toolchain != "" || cfg.Package != "") {
		return nil, errors.New("testbuild: a garble build needs an archive and the local toolchain (Config.Toolchain empty)")
	}
	if cfg.Toolchain != "" && !version.IsValid(cfg.Toolchain) {
		return nil, fmt.Errorf("testbuild: invalid toolchain %q: want a Go version such as go1.15.15", cfg.Toolchain)
	}
	var data []byte
	ar := &txtar.Archive{}
	if cfg.Archive != "" {
		path, err := ArchivePath(cfg.Archive)
		if err != nil {
			return nil, err
		}
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("testbuild: reading archive: %w", err)
		}
		ar = txtar.Parse(data)
		if err := checkArchive(ar); err != nil {
			return nil, fmt.Errorf("testbuild: archive %s: %w", path, err)
		}
	} else if !strings.HasPrefix(cfg.Package, "cmd/") {
		return nil, fmt.Errorf("testbuild: package %q is not a standard command (cmd/...)", cfg.Package)
	}
	env, err := readGoEnv(ctx)
	if err != nil {
		return nil, fmt.Errorf("testbuild: %w", err)
	}
	p := &plan{cfg: cfg, env: env, archive: ar, goVersion: cfg.Toolchain}
	if p.goVersion == "" {
		p.goVersion = env["GOVERSION"]
	}
	p.goos, p.goarch = cfg.target()
	if need := archiveGo(ar); need != "" && version.IsValid(p.goVersion) && version.Compare(p.goVersion, need) < 0 {
		return nil, fmt.Errorf("testbuild: %s: %w: it declares go %s, toolchain is %s",
			cfg.Archive, ErrUnsupported, strings.TrimPrefix(need, "go"), p.goVersion)
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if root, err := moduleRoot(); err == nil && within(dir, root) {
		return nil, fmt.Errorf("testbuild: cache directory %s is inside the repository %s", dir, root)
	}
	key := p.key(data)
	base := archiveBase(cfg.Archive)
	if cfg.Package != "" {
		base = path.Base(cfg.Package)
	}
	if cfg.Garble {
		base = "garble-" + base
	}
	name := fmt.Sprintf("%s-%s-%s-%s-%s", base, p.goVersion, p.goos, p.goarch, key[:20])
	if p.goos == "windows" {
		name += ".exe"
	}
	p.out = filepath.Join(dir, name)
	return p, nil
}

// key hashes everything that determines the binary.
func (p *plan) key(archive []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", cacheSchema)
	fmt.Fprintf(h, "archive %d\n", len(archive))
	h.Write(archive)
	fields := []string{
		"package", p.cfg.Package,
		"toolchain", p.goVersion,
		"goos", p.goos, "goarch", p.goarch,
		"ldflags", p.cfg.Ldflags, "gcflags", p.cfg.Gcflags,
		"buildmode", p.cfg.BuildMode, "linkmode", p.cfg.LinkMode,
		"cgo", fmt.Sprint(p.cfg.cgoEnabled()),
	}
	if p.cfg.Race {
		fields = append(fields, "race", "true") // absent otherwise, so that older keys stay valid
	}
	if p.cfg.Garble {
		fields = append(fields, "garble", GarbleVersion+" "+p.cfg.GarbleFlags) // likewise
	}
	for i := 0; i < len(fields); i += 2 {
		fmt.Fprintf(h, "\n%s %q", fields[i], fields[i+1])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// toolchainDir returns the directory where the go command unpacks the
// requested toolchain, or "" for the local toolchain.
func (p *plan) toolchainDir() string {
	if p.cfg.Toolchain == "" {
		return ""
	}
	return filepath.Join(p.env["GOMODCACHE"], "golang.org",
		fmt.Sprintf("toolchain@v0.0.1-%s.%s-%s", p.cfg.Toolchain, p.env["GOHOSTOS"], p.env["GOHOSTARCH"]))
}

// needsDownload reports whether the build must first download its
// toolchain.
func (p *plan) needsDownload() bool {
	dir := p.toolchainDir()
	if dir == "" {
		return false
	}
	exe := ""
	if p.env["GOHOSTOS"] == "windows" {
		exe = ".exe"
	}
	_, err := os.Stat(filepath.Join(dir, "bin", "go"+exe))
	return err != nil
}

// inheritedEnviron returns the process environment without any GO* or
// CGO_* variable, plus the settings a build inherits from the local go
// command (goenv), which may come from its go env file: the callers set
// GOENV=off, which hides that file from the build.
func inheritedEnviron(goenv goEnv) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GO") || strings.HasPrefix(k, "CGO_") {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOMODCACHE", "GOCACHE", "GOPATH", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE"} {
		if v := goenv[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// environ returns the environment of the go build command: the inherited
// environment (inheritedEnviron) plus explicit settings.
func (p *plan) environ() []string {
	env := inheritedEnviron(p.env)
	toolchain := p.cfg.Toolchain
	if toolchain == "" {
		toolchain = "local"
	}
	cgo := "0"
	if p.cfg.cgoEnabled() {
		cgo = "1"
	}
	if p.cfg.Package == "" {
		// An archive is a module. A standard command builds in each
		// toolchain's default mode (GOPATH mode before Go 1.16): an unset
		// GO111MODULE also lets the local go command switch toolchains,
		// which GO111MODULE=off or auto would stop.
		env = append(env, "GO111MODULE=on")
	}
	return append(env,
		"GOENV=off", // ignore the user's go env file, whose GOFLAGS old toolchains may reject
		"GOFLAGS=",
		"GOTOOLCHAIN="+toolchain,
		"GOOS="+p.goos,
		"GOARCH="+p.goarch,
		"CGO_ENABLED="+cgo,
	)
}

// args returns the arguments of go build writing to out.
func (p *plan) args(out string) []string {
	args := []string{"build", "-o", out}
	if p.cfg.Garble {
		// garble's flags first; it adds -trimpath itself, and refuses it.
		args = append(strings.Fields(p.cfg.GarbleFlags), args...)
	} else if !version.IsValid(p.goVersion) || version.Compare(p.goVersion, "go1.13") >= 0 {
		args = append(args, "-trimpath") // since Go 1.13
	}
	ldflags := p.cfg.Ldflags
	if p.cfg.LinkMode != "" {
		ldflags = strings.TrimSpace(ldflags + " -linkmode=" + p.cfg.LinkMode)
	}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	if p.cfg.Gcflags != "" {
		args = append(args, "-gcflags="+p.cfg.Gcflags)
	}
	if p.cfg.BuildMode != "" {
		args = append(args, "-buildmode="+p.cfg.BuildMode)
	}
	if p.cfg.Race {
		args = append(args, "-race")
	}
	if p.cfg.Package != "" {
		return append(args, p.cfg.Package)
	}
	return append(args, ".")
}

// build unpacks the archive into a temporary directory and runs go build,
// writing the binary under a temporary name that is renamed into place, so
// that concurrent builds of the same key never expose a partial file.
func (p *plan) build(ctx context.Context) error {
	dir := filepath.Dir(p.out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating cache directory: %w", err)
	}
	src, err := os.MkdirTemp("", "pctab-testbuild-src-")
	if err != nil {
		return fmt.Errorf("creating source directory: %w", err)
	}
	defer os.RemoveAll(src)
	for _, f := range p.archive.Files {
		name := filepath.Join(src, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("unpacking archive: %w", err)
		}
		if err := os.WriteFile(name, f.Data, 0o644); err != nil {
			return fmt.Errorf("unpacking archive: %w", err)
		}
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(p.out)+"-")
	if err != nil {
		return fmt.Errorf("creating temporary output: %w", err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	// go1.2–go1.4 refuse to overwrite a file that is not an object file:
	// keep the unique name, not the empty file.
	os.Remove(tmpName)
	defer os.Remove(tmpName) // no-op after a successful rename

	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	args := p.args(tmpName)
	tool := "go"
	if p.cfg.Garble {
		tool = p.garble
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Dir = src
	cmd.Env = p.environ()
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("GOTOOLCHAIN=%s GOOS=%s GOARCH=%s go %s: %w\n%s",
			p.goVersion, p.goos, p.goarch, strings.Join(args, " "), err, bytes.TrimSpace(output.Bytes()))
	}
	if err := os.Rename(tmpName, p.out); err != nil {
		return fmt.Errorf("moving binary into the cache: %w", err)
	}
	return nil
}

// checkArchive reports whether ar looks like a buildable main module.
func checkArchive(ar *txtar.Archive) error {
	hasMod := false
	for _, f := range ar.Files {
		if f.Name == "go.mod" {
			hasMod = true
		}
		if filepath.IsAbs(f.Name) || strings.Contains(f.Name, "..") {
			return fmt.Errorf("file name %q escapes the build directory", f.Name)
		}
	}
	if !hasMod {
		return errors.New("no go.mod file")
	}
	return nil
}

// archiveGo returns the go directive of the archive's go.mod as a Go
// version ("go1.18"), or "" if there is none.
func archiveGo(ar *txtar.Archive) string {
	for _, f := range ar.Files {
		if f.Name != "go.mod" {
			continue
		}
		for _, line := range strings.Split(string(f.Data), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 2 && fields[0] == "go" {
				return "go" + fields[1]
			}
		}
	}
	return ""
}

// ArchiveGoVersion returns the Go version the named archive declares in the
// go directive of its go.mod, such as "go1.15", or "" if it declares none.
func ArchiveGoVersion(archive string) (string, error) {
	path, err := ArchivePath(archive)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("testbuild: reading archive: %w", err)
	}
	return archiveGo(txtar.Parse(data)), nil
}

// archiveBase returns a short name for an archive, for cache file names.
func archiveBase(archive string) string {
	return strings.TrimSuffix(filepath.Base(archive), ".txtar")
}

// ArchivePath returns the path of the named archive: testdata/<name>.txtar
// at the module root, or name itself if it ends in ".txtar".
func ArchivePath(name string) (string, error) {
	if strings.HasSuffix(name, ".txtar") {
		return name, nil
	}
	if strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("testbuild: archive name %q contains a path separator", name)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testdata", name+".txtar"), nil
}

// Archives returns the names of the archives in the module's testdata
// directory, sorted.
func Archives() ([]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(root, "testdata", "*.txtar"))
	if err != nil {
		return nil, fmt.Errorf("testbuild: listing archives: %w", err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = archiveBase(p)
	}
	return names, nil
}

// moduleRoot finds the root of the pctab module by walking up from the
// working directory, which go test sets to the package directory.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbuild: %w", err)
	}
	for dir := wd; ; {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePathOf(data) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testbuild: no go.mod of module %s above %s", modulePath, wd)
		}
		dir = parent
	}
}

// modulePathOf returns the module path declared in a go.mod file.
func modulePathOf(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// CacheDir returns the directory that holds built binaries:
// $PCTAB_TESTBUILD_CACHE if set, else os.UserCacheDir()/pctab-testbuild.
// It does not create the directory.
func CacheDir() (string, error) {
	if dir := os.Getenv("PCTAB_TESTBUILD_CACHE"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("testbuild: PCTAB_TESTBUILD_CACHE: %w", err)
		}
		return abs, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testbuild: locating the user cache directory: %w", err)
	}
	return filepath.Join(dir, "pctab-testbuild"), nil
}
