package testsuite

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// An archive holds the outcomes of runs in a form small enough to keep in a
// repository, so that a suite run that takes longer than one machine's
// session resumes on another machine. It is gzip-compressed JSON lines,
// each with the integer "schema_version": a header line per run,
// {"schema_version":1,"run":NAME,"id":ID}, followed by that run's final
// events, {"schema_version":1,"action":A,"package":P,"test":T} ("test"
// omitted for a package's own event), in the order the run printed them.
// The events are the pass, fail and skip actions that Outcomes and
// CaseOutcomes read; output and timing are left out.

// ArchiveSchemaVersion is the schema_version of every line of an archive.
const ArchiveSchemaVersion = 1

// ErrArchive is returned (wrapped) for an archive that cannot be read: not
// gzip, a line that is not an archive line, an event before any run
// header, or a field out of its bounds.
var ErrArchive = errors.New("testsuite: malformed archive")

// An ArchiveRun names a run in an archive. ID says what the run ran (the
// toolchain, its patch key and build tags); ReadArchive takes a run's
// events only into a run of the same name and ID, or one of Accept: the
// IDs of earlier toolchains that the caller knows build the same (for
// example a series whose later patches leave this run's code as it was).
type ArchiveRun struct {
	Name   string
	ID     string
	Accept []string
}

// archiveLine is one line of an archive: a run header or an event.
type archiveLine struct {
	SchemaVersion int    `json:"schema_version"`
	Run           string `json:"run,omitempty"`
	ID            string `json:"id,omitempty"`
	Action        string `json:"action,omitempty"`
	Package       string `json:"package,omitempty"`
	Test          string `json:"test,omitempty"`
}

// maxArchiveRatio bounds how many times its compressed size an archive
// may expand to (real archives expand about 20 times), so that a
// decompression bomb costs a small multiple of its own size.
const maxArchiveRatio = 200

// maxArchiveLine bounds one line of an archive (a test name is at most a
// few hundred bytes).
const maxArchiveLine = 64 << 10

// WriteArchive writes the final events of each run's JSON file in dir to w,
// as an archive. A run with no file in dir is written as a header alone.
func WriteArchive(w io.Writer, dir string, runs []ArchiveRun) error {
	zw := gzip.NewWriter(w)
	enc := json.NewEncoder(zw)
	for _, r := range runs {
		if !validName.MatchString(r.Name) {
			return fmt.Errorf("testsuite: run name %q: want letters, digits, '-', '_' or '.'", r.Name)
		}
		if err := enc.Encode(archiveLine{SchemaVersion: ArchiveSchemaVersion, Run: r.Name, ID: r.ID}); err != nil {
			return err
		}
		f, err := os.Open(JSONFile(dir, r.Name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		err = archiveRun(enc, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("testsuite: archiving %s: %w", r.Name, err)
		}
	}
	return zw.Close()
}

// archiveRun writes the final events of one run's go test -json output,
// then a package event for each package whose outcome came from a
// build-fail event alone, so that the archive gives every package the
// outcome Outcomes gives it.
func archiveRun(enc *json.Encoder, f io.ReadSeeker) error {
	outcomes, err := Outcomes(f)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	written := map[string]bool{}
	var werr error
	err = scanEvents(f, func(e *event) {
		if e.Package != "" && isFinal(e.Action) && werr == nil {
			werr = enc.Encode(archiveLine{SchemaVersion: ArchiveSchemaVersion, Action: e.Action, Package: e.Package, Test: e.Test})
			if e.Test == "" {
				written[e.Package] = true
			}
		}
	})
	if err != nil || werr != nil {
		return cmp.Or(err, werr)
	}
	for _, p := range slices.Sorted(maps.Keys(outcomes)) {
		if !written[p] {
			if err := enc.Encode(archiveLine{SchemaVersion: ArchiveSchemaVersion, Action: outcomes[p], Package: p}); err != nil {
				return err
			}
		}
	}
	return nil
}

// isFinal reports whether a go test -json action ends a test or package.
func isFinal(action string) bool { return action == Pass || action == Fail || action == Skip }

// An ImportResult says what ReadArchive did with one run of an archive.
type ImportResult struct {
	Run      string
	ID       string // the archive's ID of the run
	Packages int    // packages added to the run's JSON file
	Skipped  string // why the run was not imported ("" if it was)
}

// ReadArchive merges the archive data into dir: for each run of the archive
// that is one of runs, with the same ID, it appends to the run's JSON file
// the events of the packages the file has no outcome for, as go test -json
// events, so that Execute does not run them again and Load reports them.
// Runs of another ID or not in runs are skipped, and said so in the
// results. A malformed archive changes nothing and returns an error
// wrapping ErrArchive that names the line.
func ReadArchive(data []byte, dir string, runs []ArchiveRun) ([]ImportResult, error) {
	archived, order, err := parseArchive(data)
	if err != nil {
		return nil, err
	}
	want := map[string]ArchiveRun{}
	for _, r := range runs {
		want[r.Name] = r
	}
	var res []ImportResult
	for _, name := range order {
		a := archived[name]
		ir := ImportResult{Run: name, ID: a.id}
		switch r, ok := want[name]; {
		case !ok:
			ir.Skipped = "not a run of this command"
		case r.ID != a.id && !slices.Contains(r.Accept, a.id):
			ir.Skipped = fmt.Sprintf("ran %q, this command's run is %q", a.id, r.ID)
		default:
			ir.Packages, err = mergeRun(dir, name, a.events)
			if err != nil {
				return res, err
			}
		}
		res = append(res, ir)
	}
	return res, nil
}

// archivedRun is one run of a parsed archive.
type archivedRun struct {
	id     string
	events []archiveLine
}

// parseArchive reads a whole archive, checking every line.
func parseArchive(data []byte) (map[string]*archivedRun, []string, error) {
	text, err := gunzip(data)
	if err != nil {
		return nil, nil, err
	}
	runs := map[string]*archivedRun{}
	var order []string
	var cur *archivedRun
	for n := 1; len(text) > 0; n++ {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		text = rest
		if len(line) > maxArchiveLine {
			return nil, nil, fmt.Errorf("%w: line %d: too long (%d bytes)", ErrArchive, n, len(line))
		}
		var l archiveLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %v", ErrArchive, n, err)
		}
		if l.SchemaVersion != ArchiveSchemaVersion {
			return nil, nil, fmt.Errorf("%w: line %d: schema_version %d, want %d", ErrArchive, n, l.SchemaVersion, ArchiveSchemaVersion)
		}
		switch {
		case l.Run != "":
			if !validName.MatchString(l.Run) || runs[l.Run] != nil || l.Action != "" {
				return nil, nil, fmt.Errorf("%w: line %d: bad run header (run %q, repeated %v)", ErrArchive, n, l.Run, runs[l.Run] != nil)
			}
			cur = &archivedRun{id: l.ID}
			runs[l.Run] = cur
			order = append(order, l.Run)
		case cur == nil:
			return nil, nil, fmt.Errorf("%w: line %d: an event before any run header", ErrArchive, n)
		case !isFinal(l.Action) || l.Package == "" || l.ID != "":
			return nil, nil, fmt.Errorf("%w: line %d: bad event (action %q, package %q)", ErrArchive, n, l.Action, l.Package)
		default:
			cur.events = append(cur.events, l)
		}
	}
	return runs, order, nil
}

// gunzip decompresses an archive, refusing one that expands to more than
// maxArchiveRatio times its size.
func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip header: %v", ErrArchive, err)
	}
	defer zr.Close()
	limit := int64(len(data))*maxArchiveRatio + maxArchiveLine
	text, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %v (after %d bytes)", ErrArchive, err, len(text))
	}
	if int64(len(text)) > limit {
		return nil, fmt.Errorf("%w: expands to more than %d bytes (%d times its %d bytes)", ErrArchive, limit, maxArchiveRatio, len(data))
	}
	return text, nil
}

// goTestEvent is an event as go test -json writes it (cmd/test2json),
// without its time, elapsed time and output.
type goTestEvent struct {
	Action  string
	Package string
	Test    string `json:",omitempty"`
}

// mergeRun appends to run name's JSON file in dir the events of the
// packages that have no outcome there yet, and returns how many packages
// it added.
func mergeRun(dir, name string, events []archiveLine) (int, error) {
	path := JSONFile(dir, name)
	have, err := readOutcomes(path)
	if err != nil {
		return 0, err
	}
	var buf []byte
	added := map[string]bool{}
	for _, e := range events {
		if _, ok := have[e.Package]; ok {
			continue
		}
		b, err := json.Marshal(goTestEvent{Action: e.Action, Package: e.Package, Test: e.Test})
		if err != nil {
			return 0, err
		}
		buf = append(append(buf, b...), '\n')
		if e.Test == "" {
			added[e.Package] = true
		}
	}
	if len(buf) == 0 {
		return 0, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	return len(added), appendFile(path, buf)
}
