package objscan

import (
	"debug/elf"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

// TestModuledata checks the moduledata objscan finds by scanning against
// the linker's own runtime.firstmoduledata symbol, on ELF builds of both
// pointer sizes and byte orders, and that it reads the words rewrite
// updates.
func TestModuledata(t *testing.T) {
	for _, cfg := range []testbuild.Config{
		{Archive: "features", GOOS: "linux", GOARCH: "amd64"},
		{Archive: "features", GOOS: "linux", GOARCH: "386"},
		{Archive: "features", GOOS: "linux", GOARCH: "s390x"},
		{Archive: "features", GOOS: "linux", GOARCH: "arm64", BuildMode: "pie"},
		// The Go 1.16-1.17 moduledata, and Go 1.5-1.15's, which starts
		// with the pclntable, ftab and filetab slices.
		{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.16.15"},
		{Archive: "features", GOOS: "linux", GOARCH: "amd64", Toolchain: "go1.15.15"},
		{Archive: "features", GOOS: "linux", GOARCH: "386", Toolchain: "go1.15.15"},
	} {
		t.Run(cfg.GOARCH+cfg.BuildMode+cfg.Toolchain, func(t *testing.T) {
			path := testbuild.Build(t, cfg)
			ef, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			syms, err := ef.Symbols()
			ef.Close()
			if err != nil {
				t.Fatal(err)
			}
			var want, size, text uint64
			for _, s := range syms {
				switch s.Name {
				case "runtime.firstmoduledata":
					want, size = s.Value, s.Size
				case "runtime.text":
					text = s.Value
				}
			}
			if want == 0 {
				t.Fatal("no runtime.firstmoduledata symbol")
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			addr, words, ok := f.Moduledata()
			if !ok || addr != want {
				t.Fatalf("Moduledata() = %#x, %d, %v; want runtime.firstmoduledata %#x", addr, words, ok, want)
			}
			// Every word of the struct is read, up to MaxModuledataWords.
			if want := min(MaxModuledataWords, int(size)/f.PtrSize); words < want || words > MaxModuledataWords {
				t.Errorf("%d words read, want %d..%d (the symbol has %d bytes)", words, want, MaxModuledataWords, size)
			}
			if got, ok := f.ModuleText(); !ok || got != text {
				t.Errorf("ModuleText() = %#x, %v; want runtime.text %#x", got, ok, text)
			}
			t.Logf("moduledata: %d bytes, %d words read", size, words)
		})
	}
}
