package forest

import "math/bits"

// A Stream builds a forest's values as Append would, without holding
// them: it hands each value to put as soon as Append creates it, and again
// when a later Append changes it, by its index in Values. The last value
// put at each index is Values' value there for a Forest of the same
// leaves. A Stream holds O(log n) values for n leaves: a node is changed
// once, when the last leaf of its tree arrives.
type Stream[T any] struct {
	n       int // values so far
	combine func(a, b T) T
	put     func(i int, v T) error
	pending []pendingNode[T] // nodes whose trees are not complete, by index
}

type pendingNode[T any] struct {
	i int
	v T
}

// NewStream returns an empty Stream that hands its values to put.
func NewStream[T any](combine func(a, b T) T, put func(i int, v T) error) *Stream[T] {
	return &Stream[T]{combine: combine, put: put}
}

// Append adds v as the last leaf, as Forest.Append does, and puts the
// values it creates and changes. It returns put's first error.
func (s *Stream[T]) Append(v T) error {
	leaf := s.n
	if err := s.put(leaf, v); err != nil {
		return err
	}
	n := leaf + 1
	levels := bits.TrailingZeros(^uint(n)) - 1
	cur := v
	// The nodes this leaf completes are the pending ones at n-2, n-4,
	// n-8, ...: the last pending, then the one before it, and so on.
	for range levels {
		p := &s.pending[len(s.pending)-1]
		cur = s.combine(p.v, cur)
		if err := s.put(p.i, cur); err != nil {
			return err
		}
		s.pending = s.pending[:len(s.pending)-1]
	}
	// The node after the leaf starts as the tree just completed.
	s.pending = append(s.pending, pendingNode[T]{n, cur})
	s.n = n + 1
	return s.put(n, cur)
}

// Nodes returns the number of values put: two per leaf.
func (s *Stream[T]) Nodes() int { return s.n }
