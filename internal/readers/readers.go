// Package readers builds outside readers of the pclntab, Delve (dlv),
// govulncheck, the OpenTelemetry eBPF profiler's reader of Go binaries,
// goretk/gore and Pyroscope's eBPF symbolizer, from the Go module proxy at
// the versions pinned in versions.txt, either as released or with a patch
// (patches/NAME.diff) that teaches the reader's decoder (Delve's and
// govulncheck's copies of debug/gosym, the profiler's elfunwindinfo,
// gore's search for the pclntab, Pyroscope's symtab/gosym) the linear
// tables the patched toolchain writes (package toolchain), the way the
// toolchain's series teaches debug/gosym itself. A reader that decodes the
// tables with the standard library's debug/gosym (gore) is built, patched,
// with the patched toolchain's go command. It runs them, and go tool
// pprof, on binaries built with the patched toolchain, its twin and the
// stock toolchain ([CheckProbe], [CheckGovulncheck], [CheckDelve],
// [CheckPprof]).
//
// Each build also compiles a probe into the reader's module: a small
// command that prints what the reader's decoder reads from a binary
// (functions with their inlined calls, the function, file and line at
// sampled PCs, stack deltas, and what a library reports: report lines),
// so that a patched binary and its stock twin
// can be compared through the reader's own decoder ([ReadProbe], [Diff]).
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

	"github.com/pctab/pctab/toolchain"
)

//go:embed versions.txt
var versionsTxt string

//go:embed patches/dlv.diff
var dlvPatch []byte

//go:embed patches/govulncheck.diff
var govulncheckPatch []byte

//go:embed patches/ebpf-profiler.diff
var ebpfPatch []byte

//go:embed probe.go.txt
var probeSource string

//go:embed probe_ebpf.go.txt
var probeEBPF string

//go:embed patches/gore.diff
var gorePatch []byte

//go:embed probe_gore.go.txt
var probeGore string

//go:embed patches/pyroscope.diff
var pyroscopePatch []byte

//go:embed probe_pyroscope.go.txt
var probePyroscope string

// A Reader is one outside reader of the pclntab, built from its module.
type Reader struct {
	Name     string // its name in versions.txt, e.g. "dlv"
	Module   string // module path, e.g. "github.com/go-delve/delve"
	Version  string // pinned version (versions.txt)
	Command  string // the command's directory in the module, e.g. "cmd/dlv"; empty for a library
	PatchDir string // the directory the patch changes: the reader's pclntab decoder
	ProbeDir string // directory of the probe in the module, where it may import PatchDir
	Probe    string // the probe's source (see ReadProbe)
	Patch    []byte // the diff against the module that teaches PatchDir the linear tables

	// StdGosym says that the reader decodes the tables with the standard
	// library's debug/gosym, not a copy: its patched build compiles with
	// the patched toolchain's go command, whose debug/gosym reads the
	// linear tables, and its released one with the local go command.
	StdGosym bool
}

// readerInfo is what versions.txt does not say about each reader.
var readerInfo = map[string]Reader{
	"dlv": {
		Command:  "cmd/dlv",
		PatchDir: "pkg/internal/gosym",
		ProbeDir: "pkg/pctabprobe",
		Probe:    gosymProbe("github.com/go-delve/delve/pkg/internal/gosym"),
		Patch:    dlvPatch,
	},
	"govulncheck": {
		Command:  "cmd/govulncheck",
		PatchDir: "internal/gosym",
		ProbeDir: "pctabprobe",
		Probe:    gosymProbe("golang.org/x/vuln/internal/gosym"),
		Patch:    govulncheckPatch,
	},
	// The eBPF profiler is a library here: its reader of Go binaries,
	// through the probe.
	"ebpf-profiler": {
		PatchDir: "nativeunwind/elfunwindinfo",
		ProbeDir: "cmd/pctabprobe",
		Probe:    probeEBPF,
		Patch:    ebpfPatch,
	},
	// gore is a library: what it reports about a binary, through the
	// probe. It reads the tables with debug/gosym; its patch teaches its
	// search for the pclntab (binaries without symbols and without a
	// .gopclntab section, such as stripped PE files) the magics.
	"gore": {
		PatchDir: ".",
		ProbeDir: "pctabprobe",
		Probe:    probeGore,
		Patch:    gorePatch,
		StdGosym: true,
	},
	// Pyroscope's eBPF profiler symbolizes Go code with a trimmed copy
	// of debug/gosym that reads the functab and function names only,
	// through the probe.
	"pyroscope": {
		PatchDir: "symtab/gosym",
		ProbeDir: "cmd/pctabprobe",
		Probe:    probePyroscope,
		Patch:    pyroscopePatch,
	},
}

// gosymProbe returns the probe of a copy of debug/gosym at importPath.
func gosymProbe(importPath string) string {
	return strings.Replace(probeSource, `"GOSYM"`, fmt.Sprintf("%q", importPath), 1)
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
	Bin     string // the reader's command, empty for a library
	Probe   string // the probe command (see ReadProbe)
}

// ErrUnavailable is returned (wrapped) by Build when the module proxy does
// not serve the reader's module and no local copy is given (SourceEnv).
var ErrUnavailable = errors.New("readers: the module is not available")

// SourceEnv returns the environment variable that may name a directory
// holding r's module at r.Version, used when the module proxy does not
// serve it: PCTAB_READER_SRC_ and the name in upper case, "-" as "_"
// (PCTAB_READER_SRC_EBPF_PROFILER).
func (r Reader) SourceEnv() string {
	return "PCTAB_READER_SRC_" + strings.ToUpper(strings.ReplaceAll(r.Name, "-", "_"))
}

// Build builds r's command (if it has one) and the probe with the local
// go command, from the module's source at r.Version (go mod download, so
// through the module proxy, or the directory SourceEnv names when the
// proxy does not serve it), with r.Patch applied if patched. A patched
// build of a reader that uses the standard library's debug/gosym
// (r.StdGosym) compiles with tc's patched go command instead; tc may be
// nil for the others. A build already in cacheDir is reused. Progress
// goes to log (may be nil).
func (r Reader) Build(ctx context.Context, cacheDir string, tc *toolchain.Toolchain, patched bool, log io.Writer) (*Build, error) {
	if log == nil {
		log = io.Discard
	}
	goCmd := localGo()
	if patched && r.StdGosym {
		if tc == nil {
			return nil, fmt.Errorf("readers: %s reads the tables with debug/gosym: its patched build needs the patched toolchain", r.Name)
		}
		goCmd = patchedGo(tc)
	}
	goVersion, err := goCmd.output(ctx, "", "env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n", r.Module, r.Version, r.Command, r.ProbeDir, strings.TrimSpace(goVersion))
	if goCmd.key != "" {
		fmt.Fprintf(h, "toolchain %s\n", goCmd.key)
	}
	if patched {
		h.Write(r.Patch)
	}
	h.Write([]byte(r.Probe))
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
	if r.Command != "" {
		b.Bin = filepath.Join(b.Dir, "bin", r.Name)
	}
	b.Probe = filepath.Join(b.Dir, "bin", "pctabprobe")
	done := filepath.Join(b.Dir, "done")
	if _, err := os.Stat(done); err == nil {
		return b, nil
	}

	fmt.Fprintf(log, "readers: building %s %s@%s (%s) in %s\n", r.Name, r.Module, r.Version, flavour, b.Dir)
	srcDir, err := r.download(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(b.Dir); err != nil {
		return nil, err
	}
	if err := copyTree(b.Src, srcDir); err != nil {
		return nil, fmt.Errorf("readers: copying %s: %w", srcDir, err)
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
	if err := os.WriteFile(filepath.Join(probeDir, "main.go"), []byte(r.Probe), 0o644); err != nil {
		return nil, err
	}
	for _, c := range []struct{ out, pkg string }{{b.Bin, r.Command}, {b.Probe, r.ProbeDir}} {
		if c.pkg == "" {
			continue
		}
		fmt.Fprintf(log, "readers: %s build ./%s\n", goCmd.path, c.pkg)
		if _, err := goCmd.output(ctx, b.Src, "build", "-trimpath", "-o", c.out, "./"+c.pkg); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		return nil, err
	}
	return b, nil
}

// download returns the directory of r's module source: the module cache's
// (go mod download), or SourceEnv's when the proxy does not serve it.
func (r Reader) download(ctx context.Context) (string, error) {
	out, err := localGo().output(ctx, "", "mod", "download", "-json", r.Module+"@"+r.Version)
	var mod struct{ Dir, Error string }
	if err == nil {
		if err = json.Unmarshal([]byte(out), &mod); err == nil && (mod.Error != "" || mod.Dir == "") {
			err = errors.New(mod.Error)
		}
	}
	if err == nil {
		return mod.Dir, nil
	}
	if dir := os.Getenv(r.SourceEnv()); dir != "" {
		if _, serr := os.Stat(filepath.Join(dir, "go.mod")); serr != nil {
			return "", fmt.Errorf("readers: %s=%s: %w", r.SourceEnv(), dir, serr)
		}
		return dir, nil
	}
	return "", fmt.Errorf("%w: go mod download %s@%s: %v (%s may name a copy of it)", ErrUnavailable, r.Module, r.Version, err, r.SourceEnv())
}

// A goCommand is the go command that builds a reader, and its environment.
type goCommand struct {
	path string   // "go" (on PATH) or the patched toolchain's
	env  []string // the whole environment
	key  string   // the patched toolchain's key, empty for the local go
}

// localGo is the local toolchain's go command (on PATH), with the
// module's own go.mod and no workspace.
func localGo() goCommand {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOTOOLCHAIN", "GOFLAGS", "GOWORK", "GOROOT":
			continue
		}
		env = append(env, kv)
	}
	return goCommand{path: "go", env: append(env, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOWORK=off")}
}

// patchedGo is tc's patched go command (linear tables, and a debug/gosym
// that reads them), with the module's own go.mod and no workspace.
func patchedGo(tc *toolchain.Toolchain) goCommand {
	return goCommand{path: tc.GoCommand(false), env: tc.Env(false, "GOFLAGS=-mod=mod", "GOWORK=off"), key: tc.Key}
}

func (g goCommand) output(ctx context.Context, dir string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, g.path, args...)
	cmd.Dir = dir
	cmd.Env = g.env
	cmd.Stdout = &out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", g.path, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
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
