package par

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestFor(t *testing.T) {
	for _, run := range []struct {
		name string
		fn   func(n, workers int, fn func(w, i int) error) error
	}{{"For", For}, {"Dynamic", Dynamic}} {
		t.Run(run.name, func(t *testing.T) { testFor(t, run.fn) })
	}
}

func testFor(t *testing.T, For func(n, workers int, fn func(w, i int) error) error) {
	for _, tc := range []struct{ n, workers int }{{0, 2}, {1, 2}, {10, 1}, {10, 3}, {7, 0}} {
		seen := make([]int32, tc.n)
		err := For(tc.n, tc.workers, func(w, i int) error {
			if w < 0 || w >= max(1, tc.workers) {
				t.Errorf("worker %d out of range", w)
			}
			atomic.AddInt32(&seen[i], 1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("n=%d workers=%d: item %d done %d times", tc.n, tc.workers, i, c)
			}
		}
	}
	boom := errors.New("boom")
	if err := For(10, 2, func(w, i int) error {
		if i == 5 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}
