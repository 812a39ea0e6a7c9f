package population

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/pctab/pctab/toolchain"
)

// DefaultCacheDir returns $HOME/.cache/pctab-population (os.UserCacheDir).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pctab-population"), nil
}

// BuildFlags are the go build flags of every build: no file names that
// depend on a GOROOT's path, no DWARF (as the Go distribution ships its
// commands), and the module's own go.mod and go.sum as they are.
var buildFlags = []string{"-trimpath", "-ldflags=-w", "-mod=readonly"}

// BuildFlags returns the go build flags of every build.
func BuildFlags() []string { return slices.Clone(buildFlags) }

// buildEnv is the environment every build adds: pure Go, no workspace.
var buildEnv = []string{"CGO_ENABLED=0", "GOWORK=off"}

// A Builder builds the programs of a population with the local toolchain
// and with a patched toolchain and its twin in each of Formats.
type Builder struct {
	Toolchain *toolchain.Toolchain
	CacheDir  string             // where builds and results go (DefaultCacheDir)
	Formats   []toolchain.Format // the patched formats to build, each with its twin
	Log       io.Writer          // progress (may be nil)
	// Key names the patched builds' directory under CacheDir: BuildKey's
	// hash of what the patched toolchain builds with ("": Toolchain.Key,
	// the hash of its patch series).
	Key string
	// BuildTimeout bounds one go build (0: 60 minutes).
	BuildTimeout time.Duration
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format, args...)
	}
}

// ProgramDir returns the directory of p's builds and results for the
// builder's toolchain: CacheDir/KEY/NAME@VERSION, KEY the builder's Key.
func (b *Builder) ProgramDir(p Program) string {
	return filepath.Join(b.keyDir(), p.Name+"@"+p.Version)
}

func (b *Builder) keyDir() string {
	key := b.Key
	if key == "" {
		key = b.Toolchain.Key
	}
	return filepath.Join(b.CacheDir, key)
}

// BuildKey returns a hash of what tc's builds depend on beyond the stock
// release: the release, the target, the content of every file its patch
// series changes in the patched GOROOT, and the linkers of the patched and
// the twin GOROOT (the only tools the series rebuilds that a build runs;
// the compiler and the go command are the release's). Unlike
// Toolchain.Key, a hash of the series' text, it stays the same when the
// series changes only in form (commit messages, how the change is split
// into patches), so that such a change rebuilds none of the population.
func BuildKey(tc *toolchain.Toolchain) (string, error) {
	files, err := toolchain.PatchedFiles(tc.Series)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "population build key 1\n%s %s/%s\n", tc.Version, runtime.GOOS, runtime.GOARCH)
	link := filepath.Join("pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "link")
	if runtime.GOOS == "windows" {
		link += ".exe"
	}
	paths := []string{filepath.Join(tc.GOROOT, link), filepath.Join(tc.TwinGOROOT, link)}
	for _, f := range files {
		paths = append(paths, filepath.Join(tc.GOROOT, filepath.FromSlash(f)))
	}
	for _, path := range paths {
		rel, _ := filepath.Rel(tc.Dir, path)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(h, "%s absent\n", filepath.ToSlash(rel)) // a file the series deletes
			continue
		}
		if err != nil {
			return "", err
		}
		fi, err := f.Stat()
		if err == nil {
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), fi.Size())
			_, err = io.Copy(h, f)
		}
		f.Close()
		if err != nil {
			return "", fmt.Errorf("population: build key: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// StockPath returns where p's stock build goes. Stock builds depend only
// on the local release, so they are shared by every patch:
// CacheDir/stock-RELEASE/NAME@VERSION/stock.
func (b *Builder) StockPath(p Program) string {
	return filepath.Join(b.CacheDir, "stock-"+b.Toolchain.Version, p.Name+"@"+p.Version, "stock")
}

// FormatPath returns where p's build in format f goes, or its twin's.
func (b *Builder) FormatPath(p Program, f toolchain.Format, twin bool) string {
	name := f.Name
	if twin {
		name += ".twin"
	}
	return filepath.Join(b.ProgramDir(p), name)
}

// Source downloads p's module through the module proxy (the go command's
// GOPROXY) and returns the directory the module cache holds it in.
func (b *Builder) Source(ctx context.Context, p Program) (string, error) {
	cmd := exec.CommandContext(ctx, b.Toolchain.StockGoCommand(), "mod", "download", "-json", p.Module+"@"+p.Version)
	cmd.Dir = os.TempDir() // outside any module
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", p.Module, p.Version, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w\n%s", p.Module, p.Version, err, bytes.TrimSpace(stderr.Bytes()))
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory in %q", p.Module, p.Version, out)
	}
	return info.Dir, nil
}

// Build builds whatever of p is missing: the stock build, and for each
// format the patched build and its twin. Each build is written under a
// temporary name and renamed, so an existing file is a complete build.
func (b *Builder) Build(ctx context.Context, p Program) error {
	type job struct {
		path string
		o    toolchain.BuildOptions
		what string
	}
	jobs := []job{{b.StockPath(p), toolchain.BuildOptions{Stock: true}, "stock"}}
	// The patched toolchain and its twin share one GOCACHE here, so that
	// the twin compiles nothing: it links the very objects the patched
	// build compiled (the same compiler and sources) with the stock
	// linker. Their link steps must not share cache entries, and the go
	// command tells them apart only by what it hashes into a link's
	// action ID: the twin sets GO_EXTLINK_ENABLED=0, which is part of
	// that ID and changes nothing else (CGO_ENABLED=0 links internally
	// anyway). toolchain.Check would catch a mix-up: a twin with linear
	// tables fails it.
	cache := filepath.Join(b.keyDir(), "gocache")
	for _, f := range b.Formats {
		jobs = append(jobs,
			job{b.FormatPath(p, f, false), toolchain.BuildOptions{Tags: f.Tags, Env: []string{"GOCACHE=" + cache, "GO_EXTLINK_ENABLED="}}, f.Name},
			job{b.FormatPath(p, f, true), toolchain.BuildOptions{Tags: f.Tags, Twin: true, Env: []string{"GOCACHE=" + cache, "GO_EXTLINK_ENABLED=0"}}, f.Name + " twin"})
	}
	var src string
	for _, j := range jobs {
		if fi, err := os.Stat(j.path); err == nil && fi.Mode().IsRegular() {
			continue
		}
		if src == "" {
			var err error
			if src, err = b.Source(ctx, p); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
			return err
		}
		tmp := j.path + ".tmp"
		os.Remove(tmp)
		o := j.o
		o.Dir, o.Package, o.Out = src, "./"+strings.TrimPrefix(p.Package, "./"), tmp
		if p.Package == "." {
			o.Package = "."
		}
		o.Flags, o.Env = BuildFlags(), append(slices.Clone(buildEnv), o.Env...)
		b.logf("population: building %s %s (%s)\n", p.Name, p.Version, j.what)
		timeout := b.BuildTimeout
		if timeout <= 0 {
			timeout = 60 * time.Minute
		}
		bctx, cancel := context.WithTimeout(ctx, timeout)
		t0 := time.Now()
		err := b.Toolchain.GoBuild(bctx, o)
		cancel()
		if err != nil {
			os.Remove(tmp)
			return fmt.Errorf("building %s@%s %s (%s): %w", p.ImportPath(), p.Version, j.what, filepath.Base(j.path), err)
		}
		if err := os.Rename(tmp, j.path); err != nil {
			return err
		}
		b.logf("population: built %s %s (%s) in %.0fs\n", p.Name, p.Version, j.what, time.Since(t0).Seconds())
	}
	return nil
}
