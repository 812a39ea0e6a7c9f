package gallop

import "testing"

func TestSearch(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 100} {
		for lo := 0; lo <= n; lo++ {
			for want := lo; want <= n; want++ {
				calls := 0
				got := Search(n, lo, func(k int) bool { calls++; return k >= want })
				if got != want {
					t.Fatalf("Search(%d, %d) for %d: %d", n, lo, want, got)
				}
				if calls > 4+2*bitsLen(want-lo+1) {
					t.Errorf("Search(%d, %d) for %d: %d calls", n, lo, want, calls)
				}
			}
		}
	}
}

func bitsLen(x int) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}
