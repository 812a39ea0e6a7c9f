package forest

import "fmt"

// Chunked is a coarse level over a forest's leaves, for ranges that span
// many leaves, as a zoomed-out timeline's pixels do. It cuts the leaves
// into chunks of a fixed size and keeps, for each leaf, the combine of
// its chunk's leaves up to it (a prefix) and from it on (a suffix), and a
// forest over the chunks. A range that crosses a chunk boundary is then a
// suffix, a query of the small forest of chunks and a prefix: two reads
// of per-leaf data, next to each other for neighbouring ranges, where the
// forest reads some 2·log2 of the range's length nodes spread over it. A
// range inside one chunk is the forest's own query, whose nodes lie in the
// chunk.
//
// It costs two values per leaf, as much again as the forest.
type Chunked[T any] struct {
	f        *Forest[T]
	size     int
	pre, suf []T
	chunks   *Forest[T]
}

// NewChunked returns the coarse level of chunks of size leaves over the
// current leaves of f (leaves appended to f later are not in it). size
// must be at least 2.
func NewChunked[T any](f *Forest[T], size int) *Chunked[T] {
	if size < 2 {
		panic(fmt.Sprintf("forest: NewChunked with chunks of %d leaves", size))
	}
	n := f.Len()
	c := &Chunked[T]{f: f, size: size, pre: make([]T, n), suf: make([]T, n), chunks: New(f.combine, f.identity)}
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		acc := f.identity
		for i := lo; i < hi; i++ {
			acc = f.combine(acc, f.Leaf(i))
			c.pre[i] = acc
		}
		c.chunks.Append(acc)
		acc = f.identity
		for i := hi - 1; i >= lo; i-- {
			acc = f.combine(f.Leaf(i), acc)
			c.suf[i] = acc
		}
	}
	return c
}

// Len returns the number of leaves the level covers.
func (c *Chunked[T]) Len() int { return len(c.pre) }

// Query returns the combine of leaves [lo, hi), in order, as the forest's
// Query does. It panics if the range is not inside [0, Len()].
func (c *Chunked[T]) Query(lo, hi int) T {
	if lo < 0 || hi < lo || hi > len(c.pre) {
		panic(fmt.Sprintf("forest: range [%d, %d) out of range [0, %d]", lo, hi, len(c.pre)))
	}
	if hi == lo {
		return c.f.identity
	}
	k0, k1 := lo/c.size, (hi-1)/c.size
	if k0 == k1 {
		return c.f.Query(lo, hi)
	}
	acc := c.suf[lo]
	if k0+1 < k1 {
		acc = c.f.combine(acc, c.chunks.Query(k0+1, k1))
	}
	return c.f.combine(acc, c.pre[hi-1])
}
