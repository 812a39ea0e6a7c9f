package objscan

import (
	"path/filepath"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

// BenchmarkOpen times Open on the local go binary and gofmt: reading and
// parsing the pclntab, every distinct table and every inline tree.
func BenchmarkOpen(b *testing.B) {
	goBin := testbuild.GoBinary()
	for name, path := range map[string]string{"go": goBin, "gofmt": filepath.Join(filepath.Dir(goBin), "gofmt")} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := Open(path)
				if err != nil {
					b.Skipf("%s: %v", path, err)
				}
				f.Close()
			}
		})
	}
}
