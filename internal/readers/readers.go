// Package readers builds the outside readers of the pclntab, Delve (dlv)
// and govulncheck, from the Go module proxy at the versions pinned in
// versions.txt, either as released or with a patch (patches/NAME.diff)
// that teaches the reader's copy of debug/gosym the linear tables the
// patched toolchain writes (package toolchain), the way
// toolchain/patches/linear.diff teaches debug/gosym itself.
//
// Each build also compiles a probe into the reader's module: a small
// command that prints what the reader's gosym copy reads from a binary
// (every function with its inlined calls, and the function, file and line
// at sampled PCs), so that a patched binary and its stock twin can be
// compared through the reader's own decoder ([ReadProbe], [Diff]).
//
// Builds live under a cache directory (DefaultCacheDir: ~/.cache/pctab-readers),
// one per reader, version, patch and Go release; nothing is written to the
// repository. Builds of the same key are not safe to run concurrently.
package readers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed versions.txt
var versionsTxt string

//go:embed patches/dlv.diff
var dlvPatch []byte

//go:embed patches/govulncheck.diff
var govulncheckPatch []byte

//go:embed probe.go.txt
var probeSource string

// A Reader is one outside reader of the pclntab, built from its module.
type Reader struct {
	Name     string // command name, e.g. "dlv"
	Module   string // module path, e.g. "github.com/go-delve/delve"
	Version  string // pinned version (versions.txt)
	Command  string // the command's directory in the module, e.g. "cmd/dlv"
	Gosym    string // import path of the reader's copy of debug/gosym
	ProbeDir string // directory of the probe in the module, where it may import Gosym
	Patch    []byte // the diff against the module that teaches Gosym the linear tables
}

// readerInfo is what versions.txt does not say about each reader.
var readerInfo = map[string]Reader{
	"dlv": {
		Command:  "cmd/dlv",
		Gosym:    "github.com/go-delve/delve/pkg/internal/gosym",
		ProbeDir: "pkg/pctabprobe",
		Patch:    dlvPatch,
	},
	"govulncheck": {
		Command:  "cmd/govulncheck",
		Gosym:    "golang.org/x/vuln/internal/gosym",
		ProbeDir: "pctabprobe",
		Patch:    govulncheckPatch,
	},
}

// Readers returns the readers in versions.txt, in its order.
func Readers() ([]Reader, error) {
	return parseVersions(versionsTxt)
}

func parseVersions(text string) ([]Reader, error) {
	var rs []Reader
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("versions.txt:%d: want NAME MODULE VERSION, have %q", i+1, line)
		}
		r, ok := readerInfo[f[0]]
		if !ok {
			return nil, fmt.Errorf("versions.txt:%d: unknown reader %q", i+1, f[0])
		}
		if !strings.HasPrefix(f[2], "v") {
			return nil, fmt.Errorf("versions.txt:%d: version %q is not a module version", i+1, f[2])
		}
		r.Name, r.Module, r.Version = f[0], f[1], f[2]
		rs = append(rs, r)
	}
	return rs, nil
}

// Lookup returns the reader called name.
func Lookup(name string) (Reader, error) {
	rs, err := Readers()
	if err != nil {
		return Reader{}, err
	}
	for _, r := range rs {
		if r.Name == name {
			return r, nil
		}
	}
	return Reader{}, fmt.Errorf("readers: no reader %q in versions.txt", name)
}

// DefaultCacheDir returns $HOME/.cache/pctab-readers (os.UserCacheDir).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pctab-readers"), nil
}

// A Build is a reader built in the cache.
type Build struct {
	Reader  Reader
	Patched bool   // built with Reader.Patch
	Dir     string // its cache directory
	Src     string // the module's source, patched or not, with the probe
	Bin     string // the reader's command
	Probe   string // the probe command (see ReadProbe)
}

// Build builds r's command and the probe with the local go command, from
// the module's source at r.Version (go mod download, so through the module
// proxy), with r.Patch applied if patched. A build already in cacheDir is
// reused. Progress goes to log (may be nil).
func (r Reader) Build(ctx context.Context, cacheDir string, patched bool, log io.Writer) (*Build, error) {
	if log == nil {
		log = io.Discard
	}
	goVersion, err := goOutput(ctx, "", "env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n", r.Module, r.Version, r.Command, r.ProbeDir, strings.TrimSpace(goVersion))
	if patched {
		h.Write(r.Patch)
	}
	h.Write([]byte(probeSource))
	flavour := "stock"
	if patched {
		flavour = "patched"
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	b := &Build{
		Reader:  r,
		Patched: patched,
		Dir:     filepath.Join(cacheDir, fmt.Sprintf("%s-%s-%s-%s", r.Name, r.Version, flavour, key)),
	}
	b.Src = filepath.Join(b.Dir, "src")
	b.Bin = filepath.Join(b.Dir, "bin", r.Name)
	b.Probe = filepath.Join(b.Dir, "bin", "pctabprobe")
	done := filepath.Join(b.Dir, "done")
	if _, err := os.Stat(done); err == nil {
		return b, nil
	}

	fmt.Fprintf(log, "readers: building %s %s@%s (%s) in %s\n", r.Name, r.Module, r.Version, flavour, b.Dir)
	out, err := goOutput(ctx, "", "mod", "download", "-json", r.Module+"@"+r.Version)
	if err != nil {
		return nil, err
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		return nil, fmt.Errorf("readers: go mod download %s@%s: %w", r.Module, r.Version, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return nil, fmt.Errorf("readers: go mod download %s@%s: %s", r.Module, r.Version, mod.Error)
	}
	if err := os.RemoveAll(b.Dir); err != nil {
		return nil, err
	}
	if err := copyTree(b.Src, mod.Dir); err != nil {
		return nil, fmt.Errorf("readers: copying %s: %w", mod.Dir, err)
	}
	if patched {
		p := filepath.Join(b.Dir, r.Name+".diff")
		if err := os.WriteFile(p, r.Patch, 0o644); err != nil {
			return nil, err
		}
		if err := run(ctx, b.Src, nil, "git", "apply", "--whitespace=nowarn", p); err != nil {
			return nil, fmt.Errorf("readers: applying patches/%s.diff to %s@%s: %w", r.Name, r.Module, r.Version, err)
		}
	}
	probeDir := filepath.Join(b.Src, filepath.FromSlash(r.ProbeDir))
	if err := os.MkdirAll(probeDir, 0o755); err != nil {
		return nil, err
	}
	src := strings.Replace(probeSource, `"GOSYM"`, fmt.Sprintf("%q", r.Gosym), 1)
	if err := os.WriteFile(filepath.Join(probeDir, "main.go"), []byte(src), 0o644); err != nil {
		return nil, err
	}
	for _, c := range []struct{ out, pkg string }{{b.Bin, r.Command}, {b.Probe, r.ProbeDir}} {
		fmt.Fprintf(log, "readers: go build ./%s\n", c.pkg)
		if _, err := goOutput(ctx, b.Src, "build", "-trimpath", "-o", c.out, "./"+c.pkg); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		return nil, err
	}
	return b, nil
}

// goEnv is the environment of the go commands that build readers: the
// local toolchain, the module's own go.mod, no workspace.
func goEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOTOOLCHAIN", "GOFLAGS", "GOWORK", "GOROOT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOWORK=off")
}

func goOutput(ctx context.Context, dir string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	cmd.Stdout = &out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out.String(), nil
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

// copyTree copies the regular files under src (a read-only module cache
// directory) to dst, writable.
func copyTree(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode().Perm()|0o200)
	})
}

// errNoFuncs is returned by Diff when the truth holds no function.
var errNoFuncs = errors.New("readers: the probe of the stock twin read no function")

// scanLines calls f on each line of data.
func scanLines(data []byte, f func(line string) error) error {
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for s.Scan() {
		if err := f(s.Text()); err != nil {
			return err
		}
	}
	return s.Err()
}
