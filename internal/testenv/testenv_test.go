package testenv

import (
	"errors"
	"fmt"
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

func TestSkipUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		skip bool
	}{
		{"nil", nil, false},
		{"other", errors.New("other"), false},
		{"wrapped", fmt.Errorf("x: %w", errors.ErrUnsupported), true},
	} {
		var sub *testing.T
		t.Run(tc.name, func(t *testing.T) {
			sub = t
			SkipUnsupported(t, tc.err)
		})
		if sub.Skipped() != tc.skip {
			t.Errorf("%s: skipped %v, want %v", tc.name, sub.Skipped(), tc.skip)
		}
	}
}
