package trampoline

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/internal/testenv"
)

// historySchema is the schema of WriteHistory's JSON.
func historySchema() jsonschema.Schema {
	return jsonschema.Of(reflect.TypeFor[History](), HistorySchemaVersion)
}

// TestHistorySchema fails when a field of the history's JSON is added,
// removed or renamed without HistorySchemaVersion changing, or is not
// snake_case. PCTAB_UPDATE_GOLDEN=1 rewrites testdata/history.fields after
// a deliberate change (bump the version and update docs/json.md first).
func TestHistorySchema(t *testing.T) {
	jsonschema.Golden(t, filepath.Join("testdata", "history.fields"), historySchema())
}

// TestWriteHistoryConvention checks what WriteHistory really writes against
// the schema: the fields, schema_version first, indented with tabs as the
// commands' JSON is.
func TestWriteHistoryConvention(t *testing.T) {
	l, err := New("query", "history-test")
	testenv.SkipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	l.Do(func() {})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHistory(&b); err != nil {
		t.Fatal(err)
	}
	if err := jsonschema.CheckValue(b.Bytes(), historySchema()); err != nil {
		t.Errorf("WriteHistory: %v\n%s", err, b.String())
	}
	if !bytes.HasPrefix(b.Bytes(), []byte("{\n\t\"schema_version\": 1,")) {
		t.Errorf("WriteHistory's output does not start as jsonschema.Write's:\n%.100s", b.String())
	}
}
