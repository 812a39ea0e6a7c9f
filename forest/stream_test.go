package forest

import (
	"slices"
	"testing"
)

// TestStream puts a stream's values into a slice and finds Values of a
// forest of the same leaves, for every length to 300, under a combine
// that is not commutative, holding at most a logarithm of them pending.
func TestStream(t *testing.T) {
	concat := func(a, b string) string { return a + b }
	for n := range 300 {
		f := New(concat, "")
		var got []string
		puts := 0
		s := NewStream(concat, func(i int, v string) error {
			for len(got) <= i {
				got = append(got, "unset")
			}
			got[i] = v
			puts++
			return nil
		})
		maxPending := 0
		for i := range n {
			leaf := string(rune('a' + i%26))
			f.Append(leaf)
			if err := s.Append(leaf); err != nil {
				t.Fatal(err)
			}
			maxPending = max(maxPending, len(s.pending))
		}
		if !slices.Equal(got, f.Values()) || s.Nodes() != f.Nodes() {
			t.Fatalf("%d leaves: stream %q, forest %q", n, got, f.Values())
		}
		if n > 1 && maxPending > 1+bitsLen(n) {
			t.Errorf("%d leaves: %d values pending", n, maxPending)
		}
		if puts > 3*f.Nodes() {
			t.Errorf("%d leaves: %d puts for %d values", n, puts, f.Nodes())
		}
	}
}

func bitsLen(n int) int {
	k := 0
	for ; n > 0; n >>= 1 {
		k++
	}
	return k
}
