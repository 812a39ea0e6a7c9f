package textfmt

import (
	"errors"
	"testing"
)

func TestCommas(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1823043, "1,823,043"}, {-420935, "-420,935"}, {-1000, "-1,000"}} {
		if got := Commas(tc.n); got != tc.want {
			t.Errorf("Commas(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestErrWriter(t *testing.T) {
	fw := &failWriter{}
	ew := &ErrWriter{W: fw}
	ew.Write([]byte("a"))
	ew.Write([]byte("b"))
	if ew.Err == nil || fw.n != 1 {
		t.Errorf("err %v after %d writes; want an error after 1", ew.Err, fw.n)
	}
}

func TestGoVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"go1.26.8", "go1.26.8"},
		{"", "unknown Go version"},
	} {
		if got := GoVersion(tc.in); got != tc.want {
			t.Errorf("GoVersion(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
