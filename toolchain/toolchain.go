// Package toolchain builds and runs a Go toolchain whose linker writes, and
// whose runtime reads, PC-value tables in the linear index format of
// golang/go#61984 (package linearpc's spec, compact-fast or
// cf-palette-short variant).
//
// The change to Go is a series of patches, one concern each, in git
// format-patch form: patches/RELEASE/NNNN-*.patch, applied in order
// ([Series]). [Build] makes, once per series and release, two GOROOTs
// under a cache directory:
//
//   - go: a copy of the release's GOROOT with the series applied and cmd/link
//     rebuilt from the patched sources. Programs built with it carry linear
//     tables and a runtime that reads them. The runtime's build tags choose
//     the format and the linker follows (it reads runtime.linearFormat).
//     With no tags it builds the default flavour: cf-palette-short tables
//     whose function lengths are derived from the functab (pcHeader magic
//     0xffffffe2, objscan.LinearDerivedMagic), read through a per-M
//     direct-mapped pcvalue cache that needs no acquirem and per-PC
//     caches of the unwinder's facts. [CompactFastTag] selects the
//     compact-fast variant, [SpecTag] the spec variant (it wins over
//     CompactFastTag), [FuncFieldTag] a length field in every _func (magic
//     0xffffffe1, objscan.LinearMagic), [StockCacheTag] the stock per-M
//     pcvalue cache and [NoCacheTag] no cache. [Formats] lists the table
//     formats and [Flavours] the runtime flavours Bench compares.
//   - twin: the same patched sources with the stock linker. It builds the
//     stock twin of a program: the same code at the same addresses with
//     varint tables, the independent truth [Check] compares against.
//
// Only the linker is rebuilt: the runtime and the rest of the standard
// library are compiled from the GOROOT's sources by every build, so a
// patched runtime needs no make.bash. The linker is built with the stock
// toolchain, its own sources overlaid (go build -overlay), so that the
// linker binary itself keeps a stock runtime. Each GOROOT gets its own
// GOCACHE: a release's go command identifies the linker by its version
// line, which the series does not change, so a shared cache could hand a
// stock link's output to the patched toolchain.
package toolchain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// The build tags that select a runtime flavour (go build -tags); the linker
// writes what the runtime it links reads. With none, the toolchain builds
// the default flavour: cf-palette-short tables, lengths derived from the
// functab, the direct-mapped pcvalue cache and the per-PC unwind caches.
const (
	// SpecTag selects linearpc's spec variant instead of cf-palette-short
	// (or compact-fast: SpecTag wins if both are given).
	SpecTag = "pctab_spec"
	// CompactFastTag selects linearpc's compact-fast variant instead of
	// cf-palette-short, the default variant (the default until patch
	// 0009 of the series).
	CompactFastTag = "pctab_compactfast"
	// StockCacheTag replaces the default flavour's pcvalue cache with the
	// stock one (2 sets of 8 entries per M, under acquirem), as the
	// patched runtime had before the default flavour.
	StockCacheTag = "pctab_stockcache"
	// NoCacheTag removes the runtime's pcvalue cache.
	NoCacheTag = "pctab_nocache"
	// FuncFieldTag stores each function's length in a uint32 _func field
	// (magic 0xffffffe1) instead of deriving it from the functab (magic
	// 0xffffffe2, the default).
	FuncFieldTag = "pctab_funcfield"
	// VarlnTag keeps the pcln tables in Go's varint format, the other
	// kinds in cf-palette-short (patch 0010; with SpecTag or
	// CompactFastTag it changes nothing).
	VarlnTag = "pctab_varln"
	// OffsetTag selects linearpc's cfps-offset variant: cf-palette-short
	// whose palette chunks may be offset palettes (patch 0011; with
	// SpecTag or CompactFastTag it changes nothing).
	OffsetTag = "pctab_offset"
	// NoFastCallersTag turns off the default flavour's walk of cached
	// frames on the goroutine's own stack in runtime.Callers and
	// runtime.Caller (patch 0012), which then unwind on the system stack
	// as with patch 0011 (the unwind cache's entries keep 0012's size).
	NoFastCallersTag = "pctab_nofastcallers"
	// PaletteTag selected linearpc's cf-palette-short variant when
	// compact-fast was the default (patch 0008). cf-palette-short is now
	// the default variant, so the tag changes nothing; it is kept so that
	// the tag lists of earlier comparisons still build what they built.
	PaletteTag = "pctab_palette"
)

// Toolchain is a built patched toolchain and its twin.
type Toolchain struct {
	Dir        string  // cache directory of this series and release
	GOROOT     string  // patched GOROOT: linear tables
	TwinGOROOT string  // patched sources, stock linker: varint tables
	StockRoot  string  // the local GOROOT it was made from
	Version    string  // Go release, e.g. "go1.26.8"
	Series     []Patch // the patches applied, in order (SeriesFor(Version))
	Key        string  // hash of the series and the release
	Cached     bool    // whether Build found it ready
}

// DefaultCacheDir returns $HOME/.cache/pctab-toolchain (os.UserCacheDir).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pctab-toolchain"), nil
}

// Build returns the toolchain for the local Go release (the go command on
// PATH) and its series, building it under cacheDir if it is missing.
// Progress goes to log (may be nil).
func Build(ctx context.Context, cacheDir string, log io.Writer) (*Toolchain, error) {
	return BuildRelease(ctx, cacheDir, "", log)
}

// BuildRelease is Build for a Go release ("go1.27.3"; "" for the local
// one), which the go command downloads into the module cache
// (GOTOOLCHAIN=release), patched with SeriesFor(release).
func BuildRelease(ctx context.Context, cacheDir, release string, log io.Writer) (*Toolchain, error) {
	return BuildSeries(ctx, cacheDir, release, nil, log)
}

// BuildSeries is BuildRelease with the given series instead of the
// release's own (nil: SeriesFor the release), for example a prefix of it.
// Each series has its own cache directory.
func BuildSeries(ctx context.Context, cacheDir, release string, series []Patch, log io.Writer) (*Toolchain, error) {
	if log == nil {
		log = io.Discard
	}
	root, version, err := stockRoot(ctx, release)
	if err != nil {
		return nil, err
	}
	if series == nil {
		if series, err = SeriesFor(version); err != nil {
			return nil, err
		}
	}
	files, err := PatchedFiles(series)
	if err != nil {
		return nil, err
	}
	key := seriesKey(version, series)
	dir := filepath.Join(cacheDir, key)
	tc := &Toolchain{
		Dir: dir, GOROOT: filepath.Join(dir, "go"), TwinGOROOT: filepath.Join(dir, "twin"),
		StockRoot: root, Version: version, Series: series, Key: key,
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		tc.Cached = true
		return tc, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(cacheDir, key+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := makeRoots(ctx, root, release != "", series, files, tmp, log); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "done"), []byte(version+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process built it meanwhile: use its copy.
		if _, serr := os.Stat(filepath.Join(dir, "done")); serr == nil {
			return tc, nil
		}
		os.RemoveAll(dir) // a half-made directory of an interrupted run
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	return tc, nil
}

// seriesKey is the cache key of series applied to release version on
// this GOOS/GOARCH: 16 hex digits of a hash of all three.
func seriesKey(version string, series []Patch) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", version, runtime.GOOS, runtime.GOARCH)
	for _, p := range series {
		fmt.Fprintf(h, "%s %d\n", p.Name, len(p.Data))
		h.Write(p.Data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// makeRoots makes, in tmp, the patched GOROOT (go: a copy of the stock
// root with series applied and the patched tools rebuilt from it) and its
// twin (twin: the same, but with the stock linker). fromModCache says the
// stock root is a release in the module cache.
func makeRoots(ctx context.Context, root string, fromModCache bool, series []Patch, files []string, tmp string, log io.Writer) error {
	goroot, twin := filepath.Join(tmp, "go"), filepath.Join(tmp, "twin")
	fmt.Fprintf(log, "toolchain: copying %s to %s\n", root, goroot)
	if err := run(ctx, "", nil, "cp", "-a", root, goroot); err != nil {
		return err
	}
	// A release from the module cache is read-only.
	if err := run(ctx, "", nil, "chmod", "-R", "u+w", goroot); err != nil {
		return err
	}
	if err := applySeries(ctx, goroot, series, tmp, log); err != nil {
		return fmt.Errorf("toolchain: patching a copy of %s: %w", root, err)
	}
	tools := filepath.Join("pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH)
	// The go command refuses an overlay of files in the module cache,
	// where GOTOOLCHAIN puts a downloaded release: the tools are then
	// built from a hard-linked copy of it.
	toolRoot := root
	if fromModCache {
		toolRoot = filepath.Join(tmp, "stock")
		if err := run(ctx, "", nil, "cp", "-al", root, toolRoot); err != nil {
			return err
		}
		defer os.RemoveAll(toolRoot) // before tmp becomes the cache entry
	}
	for _, t := range patchedTools {
		if err := buildTool(ctx, toolRoot, goroot, files, t.pkg, filepath.Join(goroot, tools, path.Base(t.pkg)+exeSuffix()), t.prefix, tmp, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "toolchain: making the twin GOROOT (stock linker)\n")
	link := filepath.Join(tools, "link"+exeSuffix())
	if err := run(ctx, "", nil, "cp", "-al", goroot, twin); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(twin, link)); err != nil {
		return err
	}
	return run(ctx, "", nil, "cp", filepath.Join(root, link), filepath.Join(twin, link))
}

// patchedTools are the toolchain's commands that Build rebuilds: the
// linker, and the tools that read a binary's pclntab through debug/gosym
// (go tool addr2line, objdump and pprof, which symbolizes profiles from the
// binary when the profile's own names are incomplete), so that they read
// the linear tables the linker writes. Each is built with the stock
// toolchain and only the patched files under prefix overlaid, so that the
// tool itself runs on a stock runtime.
var patchedTools = []struct{ pkg, prefix string }{
	{"cmd/link", "src/cmd/link/"},
	{"cmd/addr2line", "src/debug/gosym/"},
	{"cmd/objdump", "src/debug/gosym/"},
	{"cmd/pprof", "src/debug/gosym/"},
}

// buildTool builds the command pkg from the stock GOROOT with the patched
// files under prefix overlaid, writing it to out.
func buildTool(ctx context.Context, root, patched string, files []string, pkg, out, prefix, tmp string, log io.Writer) error {
	var ov bytes.Buffer
	ov.WriteString(`{"Replace":{`)
	n := 0
	for _, f := range files {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		if n > 0 {
			ov.WriteString(",")
		}
		n++
		fmt.Fprintf(&ov, "%q:%q", filepath.Join(root, f), filepath.Join(patched, f))
	}
	ov.WriteString("}}")
	ovFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovFile, ov.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "toolchain: building %s with %d patched files\n", pkg, n)
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=", "CGO_ENABLED=0")
	err := run(ctx, filepath.Join(root, "src"), env, filepath.Join(root, "bin", "go"+exeSuffix()), "build", "-overlay", ovFile, "-o", out, pkg)
	os.Remove(ovFile)
	return err
}

// applySeries applies the series to the GOROOT goroot in order, one
// git apply per patch (git apply reads a format-patch mail's diff),
// writing each patch to a file in tmp.
func applySeries(ctx context.Context, goroot string, series []Patch, tmp string, log io.Writer) error {
	for _, p := range series {
		f := filepath.Join(tmp, p.Name)
		if err := os.WriteFile(f, p.Data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(log, "toolchain: applying %s\n", p.Name)
		err := run(ctx, goroot, nil, "git", "apply", "--unsafe-paths", "--whitespace=nowarn", f)
		os.Remove(f)
		if err != nil {
			return fmt.Errorf("applying %s: %w", p.Name, err)
		}
	}
	return nil
}

// stockRoot returns the GOROOT and version of the go command on PATH, or
// of release ("go1.27.3"), which the go command downloads.
func stockRoot(ctx context.Context, release string) (root, version string, err error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOVERSION")
	if release != "" {
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+release)
	}
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("toolchain: go env (GOTOOLCHAIN=%s): %w", release, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", "", fmt.Errorf("toolchain: go env GOROOT GOVERSION printed %q", out)
	}
	return f[0], f[1], nil
}

// Env returns the environment for the go command of the patched toolchain
// (twin false) or of the twin: its GOROOT, its own GOCACHE, no toolchain
// switching, and extra (KEY=value) last.
func (tc *Toolchain) Env(twin bool, extra ...string) []string {
	root, cache := tc.GOROOT, filepath.Join(tc.Dir, "cache-go")
	if twin {
		root, cache = tc.TwinGOROOT, filepath.Join(tc.Dir, "cache-twin")
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOROOT", "GOCACHE", "GOTOOLCHAIN", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOROOT="+root, "GOCACHE="+cache, "GOTOOLCHAIN=local", "GOFLAGS=")
	return append(env, extra...)
}

// GoCommand returns the path of the go command of the patched toolchain or
// of the twin.
func (tc *Toolchain) GoCommand(twin bool) string {
	root := tc.GOROOT
	if twin {
		root = tc.TwinGOROOT
	}
	return filepath.Join(root, "bin", "go"+exeSuffix())
}

// BuildOptions describes one go build.
type BuildOptions struct {
	Dir     string   // directory of the main package's module (cmd.Dir)
	Package string   // package to build, e.g. "." or "cmd/gofmt"
	Out     string   // output file
	Twin    bool     // build with the twin (varint tables)
	Stock   bool     // build with the local, unpatched toolchain (Twin is ignored)
	Tags    []string // build tags, e.g. NoCacheTag
	Flags   []string // more go build flags, e.g. -trimpath
	Env     []string // extra environment, e.g. GOARCH=arm64
}

// GoBuild runs go build with the patched toolchain or the twin.
func (tc *Toolchain) GoBuild(ctx context.Context, o BuildOptions) error {
	args := append([]string{"build", "-o", o.Out}, o.Flags...)
	if len(o.Tags) > 0 {
		args = append(args, "-tags", strings.Join(o.Tags, ","))
	}
	args = append(args, o.Package)
	if o.Stock {
		env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
		return run(ctx, o.Dir, append(env, o.Env...), tc.StockGoCommand(), args...)
	}
	return run(ctx, o.Dir, tc.Env(o.Twin, o.Env...), tc.GoCommand(o.Twin), args...)
}

// StockGoCommand returns the path of the local toolchain's go command.
func (tc *Toolchain) StockGoCommand() string {
	return filepath.Join(tc.StockRoot, "bin", "go"+exeSuffix())
}

// A Format is one of the table formats the patched toolchain writes,
// chosen by the runtime's build tags.
type Format struct {
	Name string   // e.g. "spec", "compact-fast-field"
	Tags []string // build tags that select it
}

// Formats returns the formats the patched toolchain writes: the spec and
// compact-fast variants, each with function lengths derived from the
// functab (no bytes) or stored in a _func field, the cf-palette-short
// variant with derived lengths, and the same with pcln tables left in
// varint (cfps-varint-pcln) and with offset palettes (cfps-offset). The
// last, cf-palette-short (no tags), is the default.
func Formats() []Format {
	return []Format{
		{Name: "spec-field", Tags: []string{SpecTag, FuncFieldTag}},
		{Name: "spec", Tags: []string{SpecTag}},
		{Name: "compact-fast-field", Tags: []string{CompactFastTag, FuncFieldTag}},
		{Name: "compact-fast", Tags: []string{CompactFastTag}},
		{Name: "cfps-varint-pcln", Tags: []string{VarlnTag}},
		{Name: "cfps-offset", Tags: []string{OffsetTag}},
		{Name: "cf-palette-short"},
	}
}

func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
