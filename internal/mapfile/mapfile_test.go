package mapfile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// file writes n random bytes to a new file and opens it.
func file(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, b, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, b
}

func TestLoad(t *testing.T) {
	ps := os.Getpagesize()
	for _, n := range []int{0, 1, ps - 1, ps, 3*ps + 5} {
		f, want := file(t, n)
		m, err := Load(f, int64(n))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(m.Bytes(), want) {
			t.Errorf("%d bytes: Load's bytes differ from the file's", n)
		}
		if got := m.Mapped(); got != (Supported && n > 0) {
			t.Errorf("%d bytes: Mapped() = %v in a build that maps: %v", n, got, Supported)
		}
		// Dropping the pages loses nothing: mapped, they fault back in
		// from the file; read into memory, DontNeed leaves them alone.
		DontNeed(m.Bytes())
		DontNeed(m.Bytes()[min(n, 3):])
		if !bytes.Equal(m.Bytes(), want) {
			t.Errorf("%d bytes: DontNeed changed the bytes", n)
		}
		if err := m.Close(); err != nil {
			t.Errorf("%d bytes: Close: %v", n, err)
		}
		if err := m.Close(); err != nil || m.Bytes() != nil {
			t.Errorf("%d bytes: second Close: %v, %d bytes left", n, err, len(m.Bytes()))
		}
	}
}

func TestMap(t *testing.T) {
	f, want := file(t, 10)
	m, err := Map(f, 10)
	if !Supported {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Map in a build that cannot map: %v, want ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Mapped() || !bytes.Equal(m.Bytes(), want) {
		t.Errorf("Map: mapped %v, bytes %x, want %x", m.Mapped(), m.Bytes(), want)
	}
}

func TestBadSize(t *testing.T) {
	f, _ := file(t, 10)
	for _, n := range []int64{-1, 11} {
		if m, err := Load(f, n); err == nil && !m.Mapped() {
			t.Errorf("Load of %d bytes of a 10-byte file read %d bytes", n, len(m.Bytes()))
		}
	}
	if _, err := Map(f, -1); err == nil {
		t.Error("Map of -1 bytes succeeded")
	}
}

// TestTruncated checks that a mapped page past the end of a file
// truncated after Map faults, which debug.SetPanicOnFault turns into a
// panic that callers (tracestore.Store.Guard) recover.
func TestTruncated(t *testing.T) {
	if !Supported {
		t.Skip("nothing is mapped in this build")
	}
	ps := os.Getpagesize()
	f, _ := file(t, 2*ps)
	m, err := Map(f, int64(2*ps))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := os.Truncate(f.Name(), 0); err != nil {
		t.Skipf("cannot truncate a mapped file here: %v", err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if _, ok := recover().(interface{ Addr() uintptr }); !ok {
			t.Error("reading a truncated file's page did not fault")
		}
	}()
	sink = m.Bytes()[ps]
}

var sink byte

func TestWholePages(t *testing.T) {
	ps := os.Getpagesize()
	page := make([]byte, 4*ps)
	lo := (ps - int(addr(page)%uintptr(ps))) % ps // page[lo:] starts a page
	for _, c := range []struct{ from, to, wantFrom, wantTo int }{
		{lo, lo + ps, lo, lo + ps},
		{lo, lo + ps - 1, 0, 0},
		{lo + 1, lo + 3*ps, lo + ps, lo + 3*ps},
		{lo + 1, lo + 2*ps + 7, lo + ps, lo + 2*ps},
		{lo + 1, lo + ps + 1, 0, 0},
		{lo, lo, 0, 0},
	} {
		got := wholePages(page[c.from:c.to])
		if c.wantFrom == c.wantTo {
			if len(got) != 0 {
				t.Errorf("wholePages([%d:%d]) = %d bytes, want none", c.from-lo, c.to-lo, len(got))
			}
			continue
		}
		if addr(got) != addr(page[c.wantFrom:]) || len(got) != c.wantTo-c.wantFrom {
			t.Errorf("wholePages([%d:%d]) = %d bytes at %+d, want [%d:%d]", c.from-lo, c.to-lo, len(got), int(addr(got)-addr(page))-lo, c.wantFrom-lo, c.wantTo-lo)
		}
	}
}

func TestOpen(t *testing.T) {
	f, want := file(t, 100)
	m, err := Open(f.Name(), nil)
	if err != nil || !bytes.Equal(m.Bytes(), want) {
		t.Fatalf("Open: %v, bytes equal: %v", err, err == nil && bytes.Equal(m.Bytes(), want))
	}
	m.Close()
	refuse := errors.New("refused")
	if _, err := Open(f.Name(), func(n int64) error {
		if n != 100 {
			t.Errorf("check saw %d bytes, want 100", n)
		}
		return refuse
	}); err != refuse {
		t.Errorf("Open with a check that refuses: %v, want its error", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}
