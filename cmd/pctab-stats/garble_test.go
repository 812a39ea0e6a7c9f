package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

// TestGarbled runs the report (text and -json), verify and replay on
// binaries with garble's pclntab changes: the callers program with them
// made to it (testbuild.MimicGarble), and, in the long run, built by
// garble in each mode (objscan's TestGarble checks those against the
// garbled runtime's own answers). Each command must read the binary, say
// that the magic is not Go's and that the entryOffs are encrypted, and
// find no mismatch.
func TestGarbled(t *testing.T) {
	check := func(t *testing.T, bin string, magic, key string) {
		var out, errOut bytes.Buffer
		if code := run([]string{"-variants=false", bin}, &out, &errOut); code != 0 {
			t.Fatalf("report: exit %d\n%s", code, errOut.String())
		}
		// magic and key are "" for a real garble build, whose are random.
		for _, w := range []string{"magic " + magic, ", not Go's", "layout of 0xfffffff1", "_func entryOffs encrypted as garble does (entryOff XOR nameOff*key), key " + key} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("report does not say %q:\n%s", w, out.String())
			}
		}
		out.Reset()
		if code := run([]string{"-json", "-variants=false", bin}, &out, &errOut); code != 0 {
			t.Fatalf("report -json: exit %d\n%s", code, errOut.String())
		}
		var r struct {
			Magic       string `json:"pclntab_magic"`
			HeaderMagic string `json:"pclntab_header_magic"`
			Foreign     bool   `json:"pclntab_magic_foreign"`
			Key         string `json:"entryoff_key"`
		}
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Magic != "0xfffffff1" || !r.Foreign || magic != "" && r.HeaderMagic != magic || key != "" && r.Key != key || r.Key == "0x0" {
			t.Errorf("-json: %+v, want header magic %s, key %s", r, magic, key)
		}
		out.Reset()
		if code := run([]string{"verify", bin}, &out, &errOut); code != 0 || !strings.Contains(out.String(), " 0 mismatches") {
			t.Errorf("verify: exit %d\n%s%s", code, out.String(), errOut.String())
		}
		out.Reset()
		if code := run(append(append([]string{"replay"}, fastArgs...), "-synthetic", "50", bin), &out, &errOut); code != 0 {
			t.Errorf("replay: exit %d\n%s", code, errOut.String())
		}
	}
	t.Run("mimic", func(t *testing.T) {
		data, err := os.ReadFile(testbuild.Build(t, testbuild.Config{Archive: "callers"}))
		if err != nil {
			t.Fatal(err)
		}
		g, err := testbuild.MimicGarble(data, 0x6333c187, 0xa39c6fd7)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "garbled")
		if err := os.WriteFile(bin, g, 0o644); err != nil {
			t.Fatal(err)
		}
		check(t, bin, "0x6333c187", "0xa39c6fd7")
	})
	for _, mode := range []string{"", "-tiny", "-literals"} {
		t.Run("garble"+mode, func(t *testing.T) {
			bin := testbuild.Build(t, testbuild.Config{Archive: "callers", Garble: true, GarbleFlags: mode})
			check(t, bin, "", "")
		})
	}
}
