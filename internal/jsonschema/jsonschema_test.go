package jsonschema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type inner struct {
	A int    `json:"a_b"`
	B string `json:"b,omitempty"`
	c int
}

type base struct {
	Version int `json:"schema_version"`
}

type outer struct {
	base
	Items   []inner          `json:"items"`
	Ptr     *inner           `json:"ptr,omitempty"`
	ByName  map[string]inner `json:"by_name"`
	Skip    int              `json:"-"`
	When    time.Time        `json:"when"` // MarshalJSON: a leaf
	Raw     []byte           `json:"raw"`
	Untaged int
}

func TestFields(t *testing.T) {
	got := Fields(reflect.TypeFor[outer]())
	want := []string{"Untaged", "by_name", "by_name{}", "by_name{}.a_b", "by_name{}.b", "items", "items[].a_b", "items[].b",
		"ptr", "ptr.a_b", "ptr.b", "raw", "schema_version", "when"}
	if !slices.Equal(got, want) {
		t.Errorf("Fields:\n got %q\nwant %q", got, want)
	}
}

func TestCheckSnake(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		bad   string
	}{
		{[]string{"a", "a_b", "x[].y_2", "m{}.k"}, ""},
		{[]string{"a", "goVersion"}, "goVersion"},
		{[]string{"items[].BytesPerNode"}, "BytesPerNode"},
		{[]string{"a__b"}, "a__b"},
		{[]string{"_a"}, "_a"},
		{[]string{"a_"}, "a_"},
	} {
		err := CheckSnake(tc.paths)
		if (err != nil) != (tc.bad != "") || err != nil && !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("CheckSnake(%q) = %v, want error about %q", tc.paths, err, tc.bad)
		}
	}
}

func TestCompare(t *testing.T) {
	v1 := Schema{Version: 1, Fields: []string{"a", "b", "schema_version"}}
	for _, tc := range []struct {
		name string
		got  Schema
		err  string // substring; "" means no error
	}{
		{"same", v1, ""},
		{"renamed, same version", Schema{Version: 1, Fields: []string{"a", "c", "schema_version"}}, "bump the version"},
		{"removed, same version", Schema{Version: 1, Fields: []string{"a", "schema_version"}}, "bump the version"},
		{"added, same version", Schema{Version: 1, Fields: []string{"a", "b", "d", "schema_version"}}, "bump the version"},
		{"renamed, new version", Schema{Version: 2, Fields: []string{"a", "c", "schema_version"}}, "rewrite the golden list"},
		{"only the version", Schema{Version: 2, Fields: v1.Fields}, "rewrite the golden list"},
	} {
		err := Compare(v1, tc.got)
		if (err != nil) != (tc.err != "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Compare = %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestFormatParse(t *testing.T) {
	s := Of(reflect.TypeFor[outer](), 3)
	s.First = "" // a golden file does not record it
	got, err := Parse([]byte(s.Format()))
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("Parse(Format) = %v, %v; want %v", got, err, s)
	}
	if _, err := Parse([]byte("version 1\n")); err == nil {
		t.Error("Parse accepted a file without a schema_version line")
	}
}

type fatal struct{ msg string }

func (f *fatal) Helper()                   {}
func (f *fatal) Fatalf(s string, a ...any) { f.msg = s }

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden")
	s := Of(reflect.TypeFor[inner2](), 1)
	os.WriteFile(path, []byte(s.Format()), 0o666)
	var f fatal
	Golden(&f, path, s)
	if f.msg != "" {
		t.Errorf("Golden failed on its own schema: %s", f.msg)
	}
	Golden(&f, path, Schema{Version: 1, Fields: []string{"a_b", "schema_version"}})
	if f.msg == "" {
		t.Error("Golden passed with a field gone at the same version")
	}
	f.msg = ""
	Golden(&f, path, Of(reflect.TypeFor[inner](), 1))
	if f.msg == "" {
		t.Error("Golden passed a schema without schema_version")
	}
	// schema_version after another field.
	late := Of(reflect.TypeFor[versionLast](), 1)
	os.WriteFile(path, []byte(late.Format()), 0o666)
	f.msg = ""
	Golden(&f, path, late)
	if !strings.Contains(f.msg, "comes first") {
		t.Errorf("Golden on a type whose schema_version comes second: %q", f.msg)
	}
}

type versionLast struct {
	inner
	base
}

type inner2 struct {
	base
	inner
}

func TestCheckValue(t *testing.T) {
	s := Of(reflect.TypeFor[outer](), 2)
	good, _ := json.Marshal(outer{base: base{2}, Items: []inner{{A: 1, B: "x"}}, ByName: map[string]inner{"Key": {A: 2}}})
	if err := CheckValue(good, s); err != nil {
		t.Errorf("CheckValue(good) = %v", err)
	}
	for _, bad := range []string{
		`{"schema_version":1}`,
		`{"items":[]}`,
		`{"schema_version":2,"items":[{"a_b":1,"extra":2}]}`,
		`{"schema_version":2,"by_name":{"k":{"x":1}}}`,
		`{"items":[],"schema_version":2}`,
		`[1]`,
	} {
		if err := CheckValue([]byte(bad), s); err == nil {
			t.Errorf("CheckValue(%s) = nil", bad)
		}
	}
}

func TestWrite(t *testing.T) {
	v := struct {
		SchemaVersion int    `json:"schema_version"`
		Name          string `json:"name"`
	}{1, "x"}
	var b bytes.Buffer
	if err := Write(&b, v); err != nil {
		t.Fatal(err)
	}
	if err := WriteLine(&b, v); err != nil {
		t.Fatal(err)
	}
	want := "{\n\t\"schema_version\": 1,\n\t\"name\": \"x\"\n}\n{\"schema_version\":1,\"name\":\"x\"}\n"
	if b.String() != want {
		t.Errorf("Write, WriteLine wrote\n%s\nwant\n%s", b.String(), want)
	}
}
