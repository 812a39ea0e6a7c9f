package testenv

import (
	"os"
	"testing"
)

func TestStartTime(t *testing.T) {
	a, ok := startTime(os.Getpid())
	if !ok || a == "" {
		t.Fatalf("startTime(self) = %q, %v", a, ok)
	}
	b, _ := startTime(os.Getpid())
	if a != b {
		t.Errorf("startTime(self) changed: %q then %q", a, b)
	}
	if _, ok := startTime(-1); ok {
		t.Error("startTime(-1) succeeded")
	}
}
