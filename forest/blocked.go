package forest

import "fmt"

// Blocked indexes a sequence of items in blocks of a fixed size, as
// gigatrace does: each leaf of its forest aggregates one whole block, so
// the forest holds 2/size values per item. A query combines the whole
// blocks inside its range through the forest and the items of the partial
// blocks at its ends one by one, read back through a function the caller
// gives (the items live wherever the caller keeps them).
type Blocked[T any] struct {
	f       *Forest[T]
	size    int
	n       int // items appended
	pending T   // the aggregate of the last, incomplete block
}

// NewBlocked returns an empty Blocked index of blocks of size items over
// forest f, which must be empty; f's combine and identity are the
// aggregate's. size must be at least 1.
func NewBlocked[T any](f *Forest[T], size int) *Blocked[T] {
	if size < 1 || f.Len() != 0 {
		panic(fmt.Sprintf("forest: NewBlocked with block size %d over %d leaves", size, f.Len()))
	}
	return &Blocked[T]{f: f, size: size, pending: f.identity}
}

// Append adds the aggregate of one item.
func (b *Blocked[T]) Append(v T) {
	b.pending = b.f.combine(b.pending, v)
	b.n++
	if b.n%b.size == 0 {
		b.f.Append(b.pending)
		b.pending = b.f.identity
	}
}

// Len returns the number of items.
func (b *Blocked[T]) Len() int { return b.n }

// BlockSize returns the number of items per leaf.
func (b *Blocked[T]) BlockSize() int { return b.size }

// Forest returns the forest of whole blocks.
func (b *Blocked[T]) Forest() *Forest[T] { return b.f }

// Query returns the combine of items [lo, hi), in order. item(i) must
// return the aggregate of item i as it was appended; Query calls it for
// fewer than 2*BlockSize() items. It panics if the range is not inside
// [0, Len()].
func (b *Blocked[T]) Query(lo, hi int, item func(i int) T) T {
	if lo < 0 || hi < lo || hi > b.n {
		panic(fmt.Sprintf("forest: range [%d, %d) out of range [0, %d]", lo, hi, b.n))
	}
	acc := b.f.identity
	firstWhole := (lo + b.size - 1) / b.size // first block starting at or after lo
	lastWhole := hi / b.size                 // blocks before this one end at or before hi
	if firstWhole >= lastWhole {
		for i := lo; i < hi; i++ {
			acc = b.f.combine(acc, item(i))
		}
		return acc
	}
	for i := lo; i < firstWhole*b.size; i++ {
		acc = b.f.combine(acc, item(i))
	}
	acc = b.f.combine(acc, b.f.Query(firstWhole, lastWhole))
	for i := lastWhole * b.size; i < hi; i++ {
		acc = b.f.combine(acc, item(i))
	}
	return acc
}
