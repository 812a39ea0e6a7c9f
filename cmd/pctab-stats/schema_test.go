package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/internal/testbuild"
)

// jsonOutputs are the -json outputs of pctab-stats, each with its Go type,
// its schema version and its golden field list in testdata.
var jsonOutputs = []struct {
	name    string
	typ     reflect.Type
	version int
}{
	{"report", reflect.TypeFor[jsonReport](), reportSchemaVersion},
	{"stacks", reflect.TypeFor[stacksJSON](), stacksSchemaVersion},
	{"replay", reflect.TypeFor[replayReport](), replaySchemaVersion},
	{"verify", reflect.TypeFor[verifyJSON](), verifySchemaVersion},
	{"labels", reflect.TypeFor[labelsJSON](), labelsSchemaVersion},
}

// TestJSONSchemas fails when a field of a -json output is added, removed or
// renamed without its schema_version changing, or is not snake_case.
// PCTAB_UPDATE_GOLDEN=1 rewrites testdata/*.fields after a deliberate
// change (bump the version and update docs/json.md first).
func TestJSONSchemas(t *testing.T) {
	for _, o := range jsonOutputs {
		t.Run(o.name, func(t *testing.T) {
			jsonschema.Golden(t, filepath.Join("testdata", o.name+".fields"), jsonschema.Of(o.typ, o.version))
		})
	}
}

// checkJSONValue checks a real -json output against its schema: every
// field it holds is in the schema and its schema_version is the current one.
func checkJSONValue(t *testing.T, name string, data []byte) {
	t.Helper()
	for _, o := range jsonOutputs {
		if o.name == name {
			if err := jsonschema.CheckValue(data, jsonschema.Of(o.typ, o.version)); err != nil {
				t.Errorf("%s -json output: %v", name, err)
			}
			return
		}
	}
	t.Fatalf("no JSON output %q", name)
}

// TestVerifyJSON runs verify -json on a built binary and on a file that is
// not one: one object per line each, in the schema, the first ok with
// tables checked, the second an error.
func TestVerifyJSON(t *testing.T) {
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	notBin := filepath.Join(t.TempDir(), "not-a-binary")
	if err := os.WriteFile(notBin, []byte("not a binary"), 0o666); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"verify", "-json", bin, notBin}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "1 of 2") {
		t.Errorf("verify: exit %d, %s; want exit 1, a failure on 1 of 2 binaries", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), stdout.String())
	}
	var got [2]verifyJSON
	for i, l := range lines {
		checkJSONValue(t, "verify", []byte(l))
		if err := json.Unmarshal([]byte(l), &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	if g := got[0]; !g.OK || g.Result == nil || g.Tables == 0 || g.PCs == 0 || g.Mismatches != 0 || g.GOOS == "" || g.Path != bin {
		t.Errorf("verify -json of a good binary: %s", lines[0])
	}
	if g := got[1]; g.OK || g.Error == "" || g.Result != nil || g.Path != notBin {
		t.Errorf("verify -json of a non-binary: %s", lines[1])
	}
}
