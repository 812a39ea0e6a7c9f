package toolchain

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCallersOutput builds testdata/callers, which prints what
// runtime.Callers, CallersFrames, Caller and FuncForPC say about its own
// stacks (inlined calls, wrappers, generics, a sigpanic, every skip, full
// buffers, goroutines on several threads, each case several times so
// that per-PC caches answer), with the stock toolchain and in every
// patched flavour, and checks that every flavour prints what stock does.
func TestCallersOutput(t *testing.T) {
	tc := testToolchain(t)
	dir, err := filepath.Abs("testdata/callers")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, fl := range Flavours() {
		out := filepath.Join(t.TempDir(), "callers-"+fl.Name)
		if err := tc.GoBuild(context.Background(), BuildOptions{Dir: dir, Package: ".", Out: out, Stock: fl.Stock, Flags: fl.BuildFlags()}); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(out).Output()
		if err != nil {
			t.Fatalf("%s: %v", fl.Name, err)
		}
		if fl.Baseline() {
			want = got
			if len(want) < 1<<20 {
				t.Fatalf("stock printed %d bytes, want more than 1 MiB", len(want))
			}
			continue
		}
		if !bytes.Equal(got, want) {
			gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
			for i := range min(len(gl), len(wl)) {
				if !bytes.Equal(gl[i], wl[i]) {
					t.Errorf("%s: line %d is %q, stock's %q", fl.Name, i+1, gl[i], wl[i])
					break
				}
			}
			t.Errorf("%s: %d lines, stock %d; the output differs", fl.Name, len(gl), len(wl))
		}
	}
}
