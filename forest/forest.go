// Package forest is an implicit in-order forest: an append-only array of
// leaves that answers range aggregations, such as the count, sum or maximum
// of leaves [lo, hi), in O(log N) time, with amortized O(1) appends and at
// most one aggregation node per leaf.
//
// The layout is the one of the implicit-inorder-forest seed (gigatrace's
// IForestIndex): leaves sit at even indices of one array and aggregation
// nodes at odd indices, each node at an index with k trailing ones
// aggregating the 2^k leaves around it. A sequence whose length is not a
// power of two is a forest of complete power-of-two trees, so appending
// never reorganizes what is there: it completes the nodes the new leaf
// finishes and adds one node after it.
//
// The aggregate is any associative combine with an identity (a monoid): it
// need not be commutative, since a query combines left to right. The
// package knows nothing of traces.
package forest

import (
	"fmt"
	"math/bits"
)

// A Forest aggregates an append-only sequence of T under an associative
// combine. Its zero value is not usable: call New or NewReserved.
type Forest[T any] struct {
	vals     []T // leaves at even indices, aggregation nodes at odd ones
	combine  func(a, b T) T
	identity T
	release  func() error // unmaps reserved storage; nil for the heap
}

// New returns an empty forest whose storage is a Go slice, grown by
// copying as appends need.
func New[T any](combine func(a, b T) T, identity T) *Forest[T] {
	return &Forest[T]{combine: combine, identity: identity}
}

// Append adds v as the last leaf.
func (f *Forest[T]) Append(v T) {
	f.vals = append(f.vals, v)
	n := len(f.vals) // odd: the leaf is at n-1
	// The node after the new leaf, at index n, aggregates as many levels
	// as n has trailing ones; the new leaf completes the nodes below that
	// level on its left, 2^level before each other.
	levels := bits.TrailingZeros(^uint(n)) - 1
	cur := n - 1
	for level := range levels {
		prev := cur - 1<<level
		f.vals[prev] = f.combine(f.vals[prev], f.vals[cur])
		cur = prev
	}
	f.vals = append(f.vals, f.vals[n-1<<levels])
}

// FromValues returns a forest over vals, the values of a forest as Values
// returned them (written to a file and mapped back, say): it reads them in
// place, without copying or checking them. len(vals) must be even.
// Appending to the forest may copy vals to the heap, as append does.
func FromValues[T any](vals []T, combine func(a, b T) T, identity T) (*Forest[T], error) {
	if len(vals)%2 != 0 {
		return nil, fmt.Errorf("forest: %d values: a forest holds two per leaf", len(vals))
	}
	return &Forest[T]{vals: vals, combine: combine, identity: identity}, nil
}

// Values returns the forest's values, leaves and aggregation nodes in
// order, two per leaf: what FromValues reads back. The slice aliases the
// forest until the next Append.
func (f *Forest[T]) Values() []T { return f.vals }

// Len returns the number of leaves.
func (f *Forest[T]) Len() int { return (len(f.vals) + 1) / 2 }

// Nodes returns the number of values stored: leaves and aggregation nodes,
// 2*Len() in all.
func (f *Forest[T]) Nodes() int { return len(f.vals) }

// Leaf returns leaf i. It panics if i is out of range, as a slice index
// does.
func (f *Forest[T]) Leaf(i int) T {
	if i < 0 || i >= f.Len() {
		panic(fmt.Sprintf("forest: leaf %d out of range [0, %d)", i, f.Len()))
	}
	return f.vals[2*i]
}

// Query returns the combine of leaves [lo, hi), in order, or the identity
// if the range is empty. It panics if the range is not inside [0, Len()],
// as slicing does.
func (f *Forest[T]) Query(lo, hi int) T {
	if lo < 0 || hi < lo || hi > f.Len() {
		panic(fmt.Sprintf("forest: range [%d, %d) out of range [0, %d]", lo, hi, f.Len()))
	}
	acc := f.identity
	for i := lo; i < hi; {
		// The highest node that starts at leaf i covers 2^k leaves,
		// with k at most the trailing zeros of i (i is a left child up
		// to that level) and 2^k at most the leaves left.
		k := bits.Len(uint(hi-i)) - 1
		if i != 0 {
			k = min(k, bits.TrailingZeros(uint(i)))
		}
		acc = f.combine(acc, f.vals[2*i+1<<k-1])
		i += 1 << k
	}
	return acc
}
