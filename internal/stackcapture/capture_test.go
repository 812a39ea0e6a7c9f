package stackcapture

import (
	"context"
	"errors"
	"os"
	"testing"
)

func TestStd(t *testing.T) {
	f, err := Std(context.Background(), "compress/flate")
	if errors.Is(err, ErrCrossBuild) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.Binary, f.Trace, f.Profile} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Error(err)
		} else if fi.Size() == 0 {
			t.Errorf("%s is empty", p)
		}
	}
	// A second call reuses the capture.
	g, err := Std(context.Background(), "compress/flate")
	if err != nil || g != f {
		t.Errorf("second capture %+v, %v; want %+v", g, err, f)
	}
	if _, err := Std(context.Background(), "no/such/package/exists"); err == nil {
		t.Error("capturing a missing package succeeded")
	}
}

func ExampleStd() {
	f, err := Std(context.Background(), "compress/flate")
	if err != nil {
		return // no go command, or a cross-built test
	}
	_ = f.Trace // an execution trace of the compress/flate tests
}
