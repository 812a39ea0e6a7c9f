package toolchain

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

// The change to Go is a series of patches per release, one concern each, in
// git format-patch form (git am applies them to the release's GOROOT):
// patches/RELEASE/NNNN-summary.patch, applied in the order of their names.
// A new patch is a new file with the next number.
//
//go:embed patches
var patchFS embed.FS

// DefaultRelease is the Go release whose series SeriesFor returns for a
// release that has none of its own.
const DefaultRelease = "go1.26.8"

// ErrNoSeries is returned by Series for a release without a series.
var ErrNoSeries = errors.New("toolchain: no patch series for this Go release")

// A Patch is one commit of the change to Go, as git format-patch writes it:
// a mail whose subject is the commit's summary ("runtime: ..."), whose body
// says why, and a unified diff against the release's GOROOT.
type Patch struct {
	Name string // file name, e.g. "0001-runtime-add-decoders-....patch"
	Data []byte // the file
}

// patchName is the form of a patch's file name: a 4-digit number from
// 0001 up, then anything.
var patchName = regexp.MustCompile(`^([0-9]{4})-[^/]*\.patch$`)

// Releases returns the Go releases that have a patch series, in order.
func Releases() []string {
	ents, err := patchFS.ReadDir("patches")
	if err != nil {
		return nil
	}
	var rs []string
	for _, e := range ents {
		if e.IsDir() {
			rs = append(rs, e.Name())
		}
	}
	return rs
}

// Series returns the patch series for release ("go1.26.8"), in the order
// git am applies it. It returns an error wrapping ErrNoSeries if the
// release has none, and an error if a patch's name is not NNNN-....patch
// or the numbers do not run 0001, 0002, ... without a gap.
func Series(release string) ([]Patch, error) {
	dir := "patches/" + release
	if release == "" || strings.Contains(release, "/") {
		return nil, fmt.Errorf("%w: %q", ErrNoSeries, release)
	}
	ents, err := patchFS.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoSeries, release)
	} else if err != nil {
		return nil, err
	}
	var ps []Patch
	for _, e := range ents { // ReadDir sorts by name
		if !strings.HasSuffix(e.Name(), ".patch") {
			continue
		}
		m := patchName.FindStringSubmatch(e.Name())
		if m == nil || m[1] != fmt.Sprintf("%04d", len(ps)+1) {
			return nil, fmt.Errorf("toolchain: %s/%s: want a name starting %04d-", dir, e.Name(), len(ps)+1)
		}
		b, err := patchFS.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ps = append(ps, Patch{Name: e.Name(), Data: b})
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrNoSeries, dir)
	}
	return ps, nil
}

// SeriesFor returns the series of release, or DefaultRelease's if release
// has none (the release's GOROOT must then take it: Build reports an error
// naming the patch that does not apply).
func SeriesFor(release string) ([]Patch, error) {
	ps, err := Series(release)
	if errors.Is(err, ErrNoSeries) {
		return Series(DefaultRelease)
	}
	return ps, err
}

// Subject returns the patch's commit summary, the mail's Subject without
// its "[PATCH]" tag, unfolded.
func (p Patch) Subject() string {
	hdr, _, _ := bytes.Cut(p.Data, []byte("\n\n"))
	var subj []string
	in := false
	for _, line := range strings.Split(string(hdr), "\n") {
		switch {
		case strings.HasPrefix(line, "Subject: "):
			in = true
			subj = append(subj, strings.TrimPrefix(line, "Subject: "))
		case in && strings.HasPrefix(line, " "):
			subj = append(subj, strings.TrimSpace(line))
		default:
			in = false
		}
	}
	s := strings.Join(subj, " ")
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "] "); i >= 0 {
			s = s[i+2:]
		}
	}
	return s
}

// Files returns the GOROOT-relative paths the patch changes or adds, in
// the order of its diff.
func (p Patch) Files() []string {
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(p.Data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// A diff's content lines start with ' ', '+' or '-', so only a
		// file header starts with "diff --git ".
		rest, ok := strings.CutPrefix(sc.Text(), "diff --git a/")
		if !ok {
			continue
		}
		if _, b, ok := strings.Cut(rest, " b/"); ok {
			files = append(files, b)
		}
	}
	return files
}

// PatchedFiles returns the GOROOT-relative paths a series changes or adds,
// sorted, each once.
func PatchedFiles(series []Patch) ([]string, error) {
	var files []string
	for _, p := range series {
		pf := p.Files()
		if len(pf) == 0 {
			return nil, fmt.Errorf("toolchain: patch %s changes no files", p.Name)
		}
		files = append(files, pf...)
	}
	if len(files) == 0 {
		return nil, errors.New("toolchain: the series changes no files")
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}
