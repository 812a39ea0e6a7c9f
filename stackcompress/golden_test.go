package stackcompress

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.dag")

// TestGoldenFiles pins the file format: building the same stacks must give
// the same bytes on every host, little- or big-endian, and the committed
// files must read back on every host.
func TestGoldenFiles(t *testing.T) {
	for _, l := range []Layout{LayoutSeed(), LayoutDelta32(), LayoutPacked()} {
		t.Run(l.String(), func(t *testing.T) {
			b, in := build(t, Options{Layout: l, PageNodes: 32}, 77, 300, 40)
			var buf bytes.Buffer
			if _, err := b.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", fmt.Sprintf("golden-%v.dag", l))
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("built file differs from %s", path)
			}
			r, err := NewReader(bytes.NewReader(want), int64(len(want)), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkStacks(t, path, r, in)
		})
	}
}
