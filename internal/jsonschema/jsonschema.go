// Package jsonschema holds pctab's JSON convention and the checks that keep
// every -json output to it.
//
// The convention: field names are snake_case, every top-level object
// carries an integer "schema_version", its first field, and a change that
// removes or renames a field bumps that version. A command that prints one
// object indents it with tabs ([Write]); one that prints an object per
// input prints each on a line of its own ([WriteLine]). Fields lists the field paths a Go type
// encodes to; Golden compares them with a checked-in list that records the
// version they belong to, so a test fails when a field changes without the
// version changing.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// VersionField is the name of the version field every output carries.
const VersionField = "schema_version"

// Fields returns the sorted paths of every JSON object field that a value
// of type t encodes to under encoding/json's rules (tags, embedded structs,
// "-" and unexported fields skipped). Nested objects are joined with ".",
// elements of slices and arrays are marked "[]" and map values "{}" (the
// path of a map itself is listed with "{}" too): a report's variants'
// names are "variants[].name". Types with their own
// MarshalJSON or MarshalText are leaves.
func Fields(t reflect.Type) []string {
	var out []string
	walk(t, "", &out, map[reflect.Type]bool{})
	slices.Sort(out)
	return slices.Compact(out)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

func walk(t reflect.Type, prefix string, out *[]string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return // []byte encodes as a string
		}
		walk(t.Elem(), prefix+"[]", out, seen)
	case reflect.Map:
		*out = append(*out, prefix+"{}") // marks prefix as a map for CheckValue
		walk(t.Elem(), prefix+"{}", out, seen)
	case reflect.Struct:
		if seen[t] {
			return // recursive type: its fields are listed where it first appears
		}
		seen[t] = true
		defer delete(seen, t)
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, prefix, out, seen)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			*out = append(*out, path)
			walk(f.Type, path, out, seen)
		}
	}
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// CheckSnake reports the first path with a field name that is not
// snake_case (lower-case words joined by single underscores).
func CheckSnake(paths []string) error {
	for _, p := range paths {
		for _, seg := range strings.Split(p, ".") {
			seg = strings.TrimRight(seg, "[]{}")
			if !snake.MatchString(seg) {
				return fmt.Errorf("field %q in %q is not snake_case", seg, p)
			}
		}
	}
	return nil
}

// A Schema is a version and the field paths it promises.
type Schema struct {
	Version int
	Fields  []string
	// First is the top-level field the type encodes first ("" for a
	// schema read from a golden file).
	First string
}

// Of returns the schema of type t at the given version.
func Of(t reflect.Type, version int) Schema {
	var inOrder []string
	walk(t, "", &inOrder, map[reflect.Type]bool{})
	s := Schema{Version: version, Fields: Fields(t)}
	if len(inOrder) > 0 {
		s.First = inOrder[0]
	}
	return s
}

// Format returns the golden-file form of s: a "schema_version N" line,
// then one field path per line.
func (s Schema) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d\n", VersionField, s.Version)
	for _, f := range s.Fields {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	return b.String()
}

// Parse reads the golden-file form written by Format.
func Parse(data []byte) (Schema, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	v, ok := strings.CutPrefix(lines[0], VersionField+" ")
	if !ok {
		return Schema{}, fmt.Errorf("line 1: want %q, got %q", VersionField+" N", lines[0])
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return Schema{}, fmt.Errorf("line 1: version: %w", err)
	}
	return Schema{Version: n, Fields: lines[1:]}, nil
}

// Compare checks got against the golden schema want. It returns nil when
// they are equal. When the fields differ at the same version it says
// which fields changed and that the version must be bumped; when the
// version differs it says the golden file must be rewritten.
func Compare(want, got Schema) error {
	added, removed := diff(want.Fields, got.Fields)
	switch {
	case want.Version == got.Version && len(added)+len(removed) == 0:
		return nil
	case want.Version == got.Version:
		return fmt.Errorf("fields changed at %s %d (added %q, removed %q): bump the version, document it and rewrite the golden list",
			VersionField, got.Version, added, removed)
	case len(removed) == 0 && len(added) == 0:
		return fmt.Errorf("%s is %d, the golden list has %d: rewrite the golden list", VersionField, got.Version, want.Version)
	default:
		return fmt.Errorf("%s %d -> %d (added %q, removed %q): rewrite the golden list", VersionField, want.Version, got.Version, added, removed)
	}
}

func diff(a, b []string) (added, removed []string) {
	for _, s := range b {
		if !slices.Contains(a, s) {
			added = append(added, s)
		}
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			removed = append(removed, s)
		}
	}
	return added, removed
}

// TB is the part of testing.TB that Golden uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Golden checks schema s against the golden file at path: its field names
// are snake_case, it has a top-level schema_version, and it matches the
// file (Compare). With the environment variable PCTAB_UPDATE_GOLDEN=1 it
// rewrites the file instead of comparing.
func Golden(t TB, path string, s Schema) {
	t.Helper()
	if err := CheckSnake(s.Fields); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !slices.Contains(s.Fields, VersionField) {
		t.Fatalf("%s: no top-level %s field", path, VersionField)
	}
	if s.First != "" && s.First != VersionField {
		t.Fatalf("%s: the first field is %s: %s comes first", path, s.First, VersionField)
	}
	if os.Getenv("PCTAB_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(s.Format()), 0o666); err != nil {
			t.Fatalf("%v", err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (PCTAB_UPDATE_GOLDEN=1 writes it)", err)
	}
	want, err := Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := Compare(want, s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// CheckValue checks that every field of the encoded JSON value data is one
// of the schema's paths, which catches fields that a custom marshaler adds,
// and that its schema_version is s.Version.
func CheckValue(data []byte, s Schema) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("not a JSON object")
	}
	ver, ok := obj[VersionField].(float64)
	if !ok || int(ver) != s.Version {
		return fmt.Errorf("%s = %v, want %d", VersionField, obj[VersionField], s.Version)
	}
	if first := firstKey(data); first != VersionField {
		return fmt.Errorf("the first field is %q, want %s", first, VersionField)
	}
	var bad []string
	has := func(p string) bool {
		_, found := slices.BinarySearch(s.Fields, p)
		return found
	}
	valuePaths(v, "", has, func(p string) bool {
		if !has(p) {
			bad = append(bad, p)
		}
		return true
	})
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("fields not in the schema: %q", slices.Compact(bad))
	}
	return nil
}

// valuePaths calls f with the path of every object field in v. An object
// at a path the schema lists as a map (path "{}" present) is a map: its
// keys are not fields, and its values are at the path "{}".
func valuePaths(v any, prefix string, has, f func(string) bool) {
	switch v := v.(type) {
	case map[string]any:
		if prefix != "" && has(prefix+"{}") {
			for _, e := range v {
				valuePaths(e, prefix+"{}", has, f)
			}
			return
		}
		for k, e := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			f(p)
			valuePaths(e, p, has, f)
		}
	case []any:
		for _, e := range v {
			valuePaths(e, prefix+"[]", has, f)
		}
	}
}

// firstKey returns the name of the first field of the JSON object data,
// or "".
func firstKey(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	t, err := dec.Token()
	if err != nil {
		return ""
	}
	name, _ := t.(string)
	return name
}

// Write writes v, a command's one JSON object, to w as the commands print
// it: indented with tabs, as go list -json does, and ending in a newline.
func Write(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteLine writes v, one of a command's several JSON objects (one per
// binary, say), to w on one line of its own, as JSON lines.
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
