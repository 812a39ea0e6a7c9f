package forest

import "cmp"

// A Span is an aggregate for "the longest span in a range, and which": a
// duration and an identifier.
type Span struct {
	Dur int64
	ID  uint64
}

// NoSpan is the identity of Longest: shorter than any span.
var NoSpan = Span{Dur: -1}

// Longest combines two Spans into the longer one; of two equally long
// spans it keeps the one with the smaller ID, so that the result does not
// depend on how a query splits the range. Its identity is NoSpan.
func Longest(a, b Span) Span {
	if b.Dur > a.Dur || (b.Dur == a.Dur && b.ID < a.ID) {
		return b
	}
	return a
}

// Max returns the larger of a and b: the aggregate of a range maximum. Its
// identity is the smallest value of T.
func Max[T cmp.Ordered](a, b T) T { return max(a, b) }

// Sum returns a + b: the aggregate of a range sum (and, over leaves of 1, a
// count). Its identity is 0.
func Sum[T int | int32 | int64 | uint | uint32 | uint64 | float64](a, b T) T { return a + b }
