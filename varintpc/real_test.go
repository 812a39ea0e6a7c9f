package varintpc

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
)

var realOnce struct {
	sync.Once
	f   *objscan.File
	err error
}

// realFile opens the local go binary once per test binary, or skips.
func realFile(tb testing.TB) *objscan.File {
	tb.Helper()
	realOnce.Do(func() {
		path := testbuild.GoBinary()
		if _, err := os.Stat(path); err != nil {
			realOnce.err = err
			return
		}
		realOnce.f, realOnce.err = objscan.Open(path)
	})
	if realOnce.err != nil {
		tb.Skipf("no real go binary: %v", realOnce.err)
	}
	return realOnce.f
}

// TestRealRoundTrip checks that every table of the local go binary
// decodes and re-encodes byte for byte.
func TestRealRoundTrip(t *testing.T) {
	f := realFile(t)
	total := 0
	for _, tab := range f.Tabs {
		dec, n, err := Decode(tab.Data)
		if err != nil {
			t.Fatalf("table at %#x: %v", tab.Offset, err)
		}
		if n != len(tab.Data) || dec.Len != tab.Len {
			t.Fatalf("table at %#x: n %d len %d; objscan says %d bytes, len %d", tab.Offset, n, dec.Len, len(tab.Data), tab.Len)
		}
		if enc := Encode(dec); !bytes.Equal(enc, tab.Data) {
			t.Fatalf("table at %#x: Encode(Decode(x)) = % x, want % x", tab.Offset, enc, tab.Data)
		}
		total += n
	}
	t.Logf("%d tables, %d bytes", len(f.Tabs), total)
}

// TestRealLookup checks Lookup against the decoded tables at every PC of
// every table (byte offsets, with the binary's PC quantum).
func TestRealLookup(t *testing.T) {
	testenv.SkipUnlessLong(t, "every PC of every table of the go binary")
	f := realFile(t)
	q := uint32(f.PCQuantum)
	for _, tab := range f.Tabs {
		dec, _, err := Decode(tab.Data)
		if err != nil {
			t.Fatal(err)
		}
		r := 0
		for pc := uint32(0); pc < dec.Len; pc++ {
			for r+1 < len(dec.Runs) && dec.Runs[r+1].PC <= pc {
				r++
			}
			v, s, err := Lookup(tab.Data, uintptr(pc)*uintptr(q), q, true)
			if err != nil || v != dec.Runs[r].Value || s != uintptr(dec.Runs[r].PC)*uintptr(q) {
				t.Fatalf("table at %#x pc %d: %d, %d, %v; want %d, %d", tab.Offset, pc, v, s, err, dec.Runs[r].Value, dec.Runs[r].PC)
			}
		}
		if _, _, err := Lookup(tab.Data, uintptr(dec.Len)*uintptr(q), q, true); err == nil {
			t.Fatalf("table at %#x: pc %d past the end found", tab.Offset, dec.Len)
		}
	}
}
