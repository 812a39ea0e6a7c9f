package linearpc

import (
	"math/rand/v2"
	"testing"
)

// TestHashIndex checks a hashIndex against a map: keys that collide in
// their first slot, keys whose low bits are all alike, growth from empty
// and from a size hint, and the value 0 and the largest value.
func TestHashIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name string
		hint int
		key  func(i int) uint64
	}{
		{"random", 0, func(int) uint64 { return r.Uint64() }},
		{"sequential", 0, func(i int) uint64 { return uint64(i) }},
		{"high bits only", 0, func(i int) uint64 { return uint64(i) << 40 }},
		{"small range", 10, func(int) uint64 { return r.Uint64N(500) }},
		{"hinted", 3000, func(int) uint64 { return r.Uint64() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHashIndex(tc.hint)
			want := map[uint64]uint32{}
			for i := range 2000 {
				k := tc.key(i)
				v := uint32(i)
				if i == 1 {
					v = 1<<32 - 2 // the largest value a slot holds
				}
				_, had := want[k]
				if added := h.add(k, v); added == had {
					t.Fatalf("add(%#x): %v, but the key was stored: %v", k, added, had)
				}
				if !had {
					want[k] = v
				}
			}
			if h.n != len(want) {
				t.Errorf("%d keys stored, want %d", h.n, len(want))
			}
			for k, v := range want {
				if got, ok := h.get(k); !ok || got != v {
					t.Errorf("get(%#x) = %d, %v; want %d", k, got, ok, v)
				}
			}
			for range 1000 {
				k := r.Uint64()
				if _, ok := want[k]; ok {
					continue
				}
				if _, ok := h.get(k); ok {
					t.Errorf("get(%#x) found a key never added", k)
				}
			}
		})
	}
	var zero hashIndex
	if _, ok := zero.get(1); ok {
		t.Error("the zero hashIndex has a key")
	}
}
