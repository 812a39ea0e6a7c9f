package toolchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
)

// goSubject is the form of a Go commit summary: "pkg: what", or
// "pkg1, pkg2: what", the packages lower-case import paths.
var goSubject = regexp.MustCompile(`^([a-z0-9][a-z0-9/_.]*(?:, [a-z0-9][a-z0-9/_.]*)*): [a-z0-9].*[^.]$`)

// TestSeriesLayout checks every release's series: names numbered from 0001
// without a gap (Series), commit messages in Go's form (a "pkg: summary"
// subject naming the packages the patch touches and only those, then a
// body), and the same commits, in the same order, for every release.
func TestSeriesLayout(t *testing.T) {
	releases := Releases()
	if !slices.Contains(releases, DefaultRelease) {
		t.Fatalf("releases with a series: %v, want %s among them", releases, DefaultRelease)
	}
	var first []string
	for _, r := range releases {
		series, err := Series(r)
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		for _, p := range series {
			subj := p.Subject()
			subjects = append(subjects, subj)
			m := goSubject.FindStringSubmatch(subj)
			if m == nil || len(subj) > 76 {
				t.Errorf("%s/%s: subject %q is not a Go commit summary (pkg: what, at most 76 bytes)", r, p.Name, subj)
				continue
			}
			// The packages named are the directories the patch touches.
			named := strings.Split(m[1], ", ")
			covered := map[string]bool{}
			for _, f := range p.Files() {
				pkg := ""
				for _, n := range named {
					if strings.HasPrefix(f, "src/"+n+"/") && len(n) > len(pkg) {
						pkg = n
					}
				}
				if pkg == "" {
					t.Errorf("%s/%s: changes %s, outside the packages its subject names (%s)", r, p.Name, f, m[1])
				}
				covered[pkg] = true
			}
			for _, n := range named {
				if !covered[n] {
					t.Errorf("%s/%s: subject names %s, which the patch does not touch", r, p.Name, n)
				}
			}
			_, rest, _ := bytes.Cut(p.Data, []byte("\n\n"))
			body, _, ok := bytes.Cut(rest, []byte("\n---\n"))
			if !ok || len(bytes.Fields(body)) < 20 {
				t.Errorf("%s/%s: the commit message has no body that says why", r, p.Name)
			}
		}
		if first == nil {
			first = subjects
		} else if !slices.Equal(subjects, first) {
			t.Errorf("%s's series is %q; %s's %q", r, subjects, releases[0], first)
		}
	}
	if _, err := Series("go1.2.2"); !errors.Is(err, ErrNoSeries) {
		t.Errorf("Series(go1.2.2): %v, want ErrNoSeries", err)
	}
}

// pristineRoot returns the GOROOT of release, unpatched: the local one,
// the module cache's copy, or (a long test) one GOTOOLCHAIN downloads.
func pristineRoot(t *testing.T, release string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		t.Fatalf("go env printed %q", out)
	}
	if f[1] == release {
		return f[0]
	}
	cached := filepath.Join(f[2], "golang.org", fmt.Sprintf("toolchain@v0.0.1-%s.%s-%s", release, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(filepath.Join(cached, "src", "runtime", "symtab.go")); err == nil {
		return cached
	}
	testenv.SkipUnlessLong(t, "downloads "+release)
	root, _, err := stockRoot(context.Background(), release)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSeriesGitAm applies each release's series with git am to a git
// repository of the pristine release's files that the series changes, and
// checks that every patch becomes one commit with its subject, and that
// Build's way (git apply, patch by patch) gives the same files.
func TestSeriesGitAm(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	for _, r := range Releases() {
		t.Run(r, func(t *testing.T) {
			series, err := Series(r)
			if err != nil {
				t.Fatal(err)
			}
			root := pristineRoot(t, r)
			files, err := PatchedFiles(series)
			if err != nil {
				t.Fatal(err)
			}
			repo, applied := filepath.Join(t.TempDir(), "repo"), filepath.Join(t.TempDir(), "applied")
			n := 0
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(root, f))
				if errors.Is(err, os.ErrNotExist) {
					continue // a new file
				} else if err != nil {
					t.Fatal(err)
				}
				for _, d := range []string{repo, applied} {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(d, f)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				n++
			}
			if n == 0 {
				t.Fatalf("the series changes none of %s's files", root)
			}
			env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
				"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir, cmd.Env = repo, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			git("init", "-q")
			git("add", "-A")
			git("commit", "-q", "-m", r+" pristine")
			am := []string{"am", "-q", "--whitespace=nowarn"}
			for _, p := range series {
				pf := filepath.Join(t.TempDir(), p.Name)
				if err := os.WriteFile(pf, p.Data, 0o644); err != nil {
					t.Fatal(err)
				}
				am = append(am, pf)
			}
			git(am...)
			log := strings.Split(strings.TrimSpace(git("log", "--reverse", "--format=%s", "HEAD~"+fmt.Sprint(len(series))+"..")), "\n")
			for i, p := range series {
				if i >= len(log) || log[i] != p.Subject() {
					t.Fatalf("git log after git am: %q; want the series' %d subjects in order", log, len(series))
				}
			}
			if st := git("status", "--porcelain"); st != "" {
				t.Errorf("git am left changes:\n%s", st)
			}
			if err := applySeries(context.Background(), applied, series, t.TempDir(), io.Discard); err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				a, err1 := os.ReadFile(filepath.Join(repo, f))
				b, err2 := os.ReadFile(filepath.Join(applied, f))
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Errorf("%s: git am and Build's git apply differ (%v, %v)", f, err1, err2)
				}
			}
			t.Logf("git am: %d patches on %d files of %s", len(series), n, root)
		})
	}
}

// helloMain prints a greeting and its own file and line, which the
// runtime reads from the PC-value tables.
const helloMain = `package main

import (
	"fmt"
	"path/filepath"
	"runtime"
)

func main() {
	_, file, line, _ := runtime.Caller(0)
	fmt.Println("hello", filepath.Base(file), line)
}
`

// TestSeriesPrefixes builds the toolchain from every prefix of each
// release's series (each prefix has its own cache directory), links a
// hello world with it and runs it: every commit of the series builds and
// works on its own. The whole series is what TestRuntime and
// TestRuntimeRelease check in every flavour.
func TestSeriesPrefixes(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds the patched toolchain once per patch of each release's series")
	cache, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	hello := t.TempDir()
	if err := os.WriteFile(filepath.Join(hello, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hello, "main.go"), []byte(helloMain), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range Releases() {
		series, err := Series(r)
		if err != nil {
			t.Fatal(err)
		}
		wasLinear := false
		for k := 1; k <= len(series); k++ {
			t.Run(fmt.Sprintf("%s/%s", r, series[k-1].Name[:4]), func(t *testing.T) {
				tc, err := BuildSeries(context.Background(), cache, r, series[:k], nil)
				if err != nil {
					t.Fatalf("the series up to %s: %v", series[k-1].Name, err)
				}
				bin := filepath.Join(t.TempDir(), "hello")
				if err := tc.GoBuild(context.Background(), BuildOptions{Dir: hello, Package: ".", Out: bin}); err != nil {
					t.Fatalf("the series up to %s: %v", series[k-1].Name, err)
				}
				out, err := exec.Command(bin).CombinedOutput()
				if want := "hello main.go 10\n"; err != nil || string(out) != want {
					t.Fatalf("the series up to %s: hello printed %q (%v), want %q", series[k-1].Name, out, err, want)
				}
				f, err := objscan.Open(bin)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// Once the linker writes linear tables, every later
				// patch keeps them.
				if f.Linear == nil && wasLinear {
					t.Errorf("the series up to %s links varint tables, an earlier prefix linear ones", series[k-1].Name)
				}
				wasLinear = f.Linear != nil
				checkGofmt(t, tc.GOROOT, series[k-1])
				t.Logf("%s: %s; linear tables: %v", tc.Key, series[k-1].Subject(), wasLinear)
			})
		}
	}
}

// checkGofmt reports each Go file that patch p changes or adds, in the
// patched GOROOT root, that gofmt would change: a reviewer's first check.
func checkGofmt(t *testing.T, root string, p Patch) {
	t.Helper()
	for _, name := range p.Files() {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by a later part of the same patch
		}
		if err != nil {
			t.Fatal(err)
		}
		if out, err := format.Source(src); err != nil || !bytes.Equal(out, src) {
			t.Errorf("%s: %s is not gofmt-formatted (%v)", p.Name, name, err)
		}
	}
}
