package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
)

// benchBinaries returns the binaries BenchmarkCompute reads: the local go
// binary, and gofmt next to it when present (a small binary, where fixed
// costs show).
func benchBinaries() map[string]string {
	goBin := testbuild.GoBinary()
	bins := map[string]string{"go": goBin}
	if p := filepath.Join(filepath.Dir(goBin), "gofmt"); fileExists(p) {
		bins["gofmt"] = p
	}
	return bins
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// BenchmarkCompute times what `pctab-stats BINARY` does without -bench:
// opening the binary and computing the full report, variants included.
func BenchmarkCompute(b *testing.B) {
	for _, name := range []string{"go", "gofmt"} {
		path, ok := benchBinaries()[name]
		if !ok {
			continue
		}
		for _, tc := range []struct {
			name string
			opt  Options
		}{
			{"variants", Options{Variants: true}},
			{"tables", Options{}},
		} {
			b.Run(name+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					f, err := objscan.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Compute(f, tc.opt); err != nil {
						b.Fatal(err)
					}
					f.Close()
				}
			})
		}
	}
}
