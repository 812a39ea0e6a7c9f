package testsuite

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/jsonschema"
)

// runJSON is go test -json output of one run: output lines, a failing
// test, a skipped package, a build failure with no event of the package's
// own, and a subtest named after a pointer.
const runJSON = `{"Time":"2026-12-06T06:21:11Z","Action":"start","Package":"a"}
{"Time":"2026-12-06T06:21:11Z","Action":"run","Package":"a","Test":"TestX"}
{"Time":"2026-12-06T06:21:11Z","Action":"output","Package":"a","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Time":"2026-12-06T06:21:11Z","Action":"fail","Package":"a","Test":"TestX","Elapsed":0.1}
{"Time":"2026-12-06T06:21:11Z","Action":"pass","Package":"a","Test":"TestY/0xc000012345","Elapsed":0.1}
{"Time":"2026-12-06T06:21:11Z","Action":"fail","Package":"a","Elapsed":0.2}
{"Time":"2026-12-06T06:21:12Z","Action":"skip","Package":"b","Elapsed":0}
{"ImportPath":"c [c.test]","Action":"build-fail"}
{"Time":"2026-12-06T06:21:13Z","Action":"pass","Package":"d","Test":"TestZ","Elapsed":0.1}
{"Time":"2026-12-06T06:21:13Z","Action":"pass","Package":"d","Elapsed":0.1}
`

func writeRun(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(JSONFile(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestArchiveRoundTrip(t *testing.T) {
	src := t.TempDir()
	writeRun(t, src, "stock", runJSON)
	writeRun(t, src, "default", runJSON)
	runs := []ArchiveRun{{"stock", "go1.26.8 linux/amd64", nil}, {"default", "go1.26.8 linux/amd64 key k1", nil}}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, src, runs); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, err := ReadArchive(buf.Bytes(), dst, runs)
	if err != nil {
		t.Fatal(err)
	}
	want := []ImportResult{{Run: "stock", ID: runs[0].ID, Packages: 4}, {Run: "default", ID: runs[1].ID, Packages: 4}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("ReadArchive = %+v, want %+v", res, want)
	}
	pkgs := []string{"a", "b", "c", "d"}
	names := []string{"stock", "default"}
	a, err := Load(src, names, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(dst, names, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("imported table differs:\n got %+v\nwant %+v", b, a)
	}
	if a.Outcome["c"][0] != Fail {
		t.Errorf("build failure: %v, want fail", a.Outcome["c"])
	}

	// Importing again adds nothing.
	res, err = ReadArchive(buf.Bytes(), dst, runs)
	if err != nil || res[0].Packages != 0 || res[1].Packages != 0 {
		t.Errorf("second ReadArchive = %+v, %v; want nothing added", res, err)
	}
}

func TestArchiveMerge(t *testing.T) {
	src := t.TempDir()
	writeRun(t, src, "stock", runJSON)
	var buf bytes.Buffer
	runs := []ArchiveRun{{"stock", "id1", nil}, {"default", "key1", nil}}
	if err := WriteArchive(&buf, src, runs); err != nil {
		t.Fatal(err)
	}
	// The destination has already run d (failing this time): its
	// outcome stays, and only a, b and c come from the archive.
	dst := t.TempDir()
	writeRun(t, dst, "stock", `{"Action":"fail","Package":"d"}`+"\n")
	res, err := ReadArchive(buf.Bytes(), dst, []ArchiveRun{{"stock", "id1", nil}, {"default", "key2", nil}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Packages != 3 || res[1].Skipped == "" || !strings.Contains(res[1].Skipped, "key1") {
		t.Errorf("ReadArchive = %+v; want stock's 3 packages, default skipped for its key", res)
	}
	tab, err := Load(dst, []string{"stock", "default"}, []string{"a", "b", "c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][]string{"a": {Fail, Missing}, "b": {Skip, Missing}, "c": {Fail, Missing}, "d": {Fail, Missing}} {
		if got := tab.Outcome[p]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	if _, err := os.Stat(JSONFile(dst, "default")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a skipped run's file was written: %v", err)
	}

	// An ID the caller accepts takes the run.
	res, err = ReadArchive(buf.Bytes(), dst, []ArchiveRun{{"stock", "id1", nil}, {"default", "key2", []string{"key0", "key1"}}})
	if err != nil || len(res) != 2 || res[1].Skipped != "" || res[1].Packages != 0 {
		t.Errorf("ReadArchive accepting key1 = %+v, %v; want default taken (with no packages)", res, err)
	}
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestArchiveMalformed(t *testing.T) {
	header := `{"schema_version":1,"run":"stock","id":"x"}` + "\n"
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte("{}\n"), "gzip"},
		{"truncated", gz(header)[:20], "unexpected EOF"},
		{"event before a header", gz(`{"schema_version":1,"action":"pass","package":"a"}` + "\n"), "line 1: an event before any run header"},
		{"unknown action", gz(header + `{"schema_version":1,"action":"output","package":"a"}` + "\n"), "line 2: bad event"},
		{"no package", gz(header + `{"schema_version":1,"action":"pass"}` + "\n"), "line 2: bad event"},
		{"schema version", gz(`{"schema_version":2,"run":"stock","id":"x"}` + "\n"), "line 1: schema_version 2, want 1"},
		{"event without schema version", gz(header + `{"action":"pass","package":"a"}` + "\n"), "line 2: schema_version 0, want 1"},
		{"run name", gz(`{"schema_version":1,"run":"../x","id":"x"}` + "\n"), "line 1: bad run header"},
		{"repeated run", gz(header + header), "line 2: bad run header"},
		{"not JSON", gz(header + "pass a\n"), "line 2"},
		{"long line", gz(header + `{"schema_version":1,"action":"pass","package":"` + strings.Repeat("a", maxArchiveLine) + `"}` + "\n"), "too long"},
		{"bomb", gz(header + strings.Repeat(`{"schema_version":1,"action":"pass","package":"a"}`+"\n", 200000)), "expands to more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := ReadArchive(tc.data, dir, []ArchiveRun{{"stock", "x", nil}})
			if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadArchive = %v, want ErrArchive saying %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a malformed archive wrote %v", ents)
			}
		})
	}
}

// FuzzReadArchive checks that no archive panics ReadArchive or makes it
// write outside its directory, and that what it accepts it imports.
func FuzzReadArchive(f *testing.F) {
	var buf bytes.Buffer
	src := f.TempDir()
	if err := os.WriteFile(filepath.Join(src, "stock.json"), []byte(runJSON), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := WriteArchive(&buf, src, []ArchiveRun{{"stock", "x", nil}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(gz(`{"schema_version":1,"run":"stock","id":"x"}` + "\n" + `{"schema_version":1,"action":"pass","package":"a","test":"T"}` + "\n"))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "d")
		res, err := ReadArchive(data, dir, []ArchiveRun{{"stock", "x", nil}, {"default", "y", nil}})
		if err != nil {
			if !errors.Is(err, ErrArchive) {
				t.Fatalf("error not wrapping ErrArchive: %v", err)
			}
			return
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) > 1 {
			t.Fatalf("wrote outside its directory: %v", ents)
		}
		for _, r := range res {
			if r.Skipped == "" && r.Packages > 0 {
				if _, err := Load(dir, []string{r.Run}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestArchiveSchema keeps the archive's lines to the JSON convention: its
// field list against the golden one, and every line of a real archive
// against it.
func TestArchiveSchema(t *testing.T) {
	schema := jsonschema.Of(reflect.TypeOf(archiveLine{}), ArchiveSchemaVersion)
	jsonschema.Golden(t, filepath.Join("testdata", "archive.fields"), schema)
	src := t.TempDir()
	writeRun(t, src, "stock", runJSON)
	var buf bytes.Buffer
	if err := WriteArchive(&buf, src, []ArchiveRun{{"stock", "x", nil}}); err != nil {
		t.Fatal(err)
	}
	text, err := gunzip(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(text), []byte("\n")) {
		if err := jsonschema.CheckValue(line, schema); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}
