package testenv

import (
	"os"
	"testing"
)

func TestLong(t *testing.T) {
	for _, tc := range []struct {
		val  string
		set  bool
		want bool
	}{
		{"", false, false},
		{"1", true, true},
		{"0", true, false},
		{"yes", true, false},
	} {
		if tc.set {
			t.Setenv(LongVar, tc.val)
		} else {
			t.Setenv(LongVar, "")
			os.Unsetenv(LongVar)
		}
		if got := Long(); got != tc.want {
			t.Errorf("%s=%q: Long() = %v, want %v", LongVar, tc.val, got, tc.want)
		}
	}
}

func TestSkipUnlessLong(t *testing.T) {
	t.Setenv(LongVar, "1")
	ran := false
	t.Run("on", func(t *testing.T) {
		skipUnlessLong(t, "nothing", noticed)
		ran = true
	})
	if want := !testing.Short(); ran != want || Full() != want {
		t.Errorf("%s=1, -short=%v: SkipUnlessLong ran the test: %v, Full() = %v; want %v", LongVar, testing.Short(), ran, Full(), want)
	}
	t.Setenv(LongVar, "")
	ran = false
	t.Run("off", func(t *testing.T) {
		skipUnlessLong(t, "nothing", noticed)
		ran = true
	})
	if ran {
		t.Errorf("SkipUnlessLong did not skip with %s unset", LongVar)
	}
}

// noticed stands in for the notice in this package's tests.
func noticed() {}
