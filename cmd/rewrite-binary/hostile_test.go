package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

// TestHostileInputs runs rewrite-binary on mutated builds (issue 26,
// items 12 to 14): each must fail, say what is wrong and where, and leave
// no output file.
func TestHostileInputs(t *testing.T) {
	in := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "amd64"})
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pcln := ef.Section(".gopclntab")
	noFuncs := bytes.Clone(data)
	binary.LittleEndian.PutUint64(noFuncs[pcln.Offset+8:], 0) // pcHeader.nfunc
	// The alignment of .typelink, the section after .gopclntab in its
	// segment, which replace mode moves with the table.
	badAlign := bytes.Clone(data)
	shoff := binary.LittleEndian.Uint64(data[40:])
	for i, s := range ef.Sections {
		if s.Name == ".typelink" {
			binary.LittleEndian.PutUint64(badAlign[shoff+64*uint64(i)+48:], 0xffffffff)
		}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		mode string
		want []string
	}{
		{"truncated", data[:len(data)/2], "replace", []string{"ELF: file is truncated", "at offset 0x"}},
		{"truncated, append", data[:len(data)-1], "append", []string{"ELF: file is truncated", "at offset 0x"}},
		{"nfunc 0", noFuncs, "replace", []string{"nfunc is 0"}},
		{"nfunc 0, append", noFuncs, "append", []string{"nfunc is 0"}},
		{"section alignment 0xffffffff", badAlign, "replace", []string{"alignment 0xffffffff is not a power of two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(dir, "bad")
			if err := os.WriteFile(bad, tc.data, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"-mode", tc.mode, "-o", out, bad}, &stdout, &stderr); code == 0 {
				t.Fatalf("exit 0:\n%s", stdout.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stdout.String(), "verify") {
				t.Errorf("stdout reports a verification:\n%s", stdout.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a failed run wrote its output")
			}
		})
	}
}
