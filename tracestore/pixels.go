package tracestore

import "math/bits"

// PixelStart returns where pixel p of [t0, t1), cut into px equal pixels,
// starts: t0 + ⌊(t1-t0)·p/px⌋, exact for every t0 < t1, however wide (the
// product is taken in 128 bits). p may be px, for the range's end. It
// panics unless 0 < px and 0 <= p <= px.
func PixelStart(t0, t1, px, p int64) int64 {
	if px <= 0 || p < 0 || p > px {
		panic("tracestore: PixelStart: pixel out of range")
	}
	w := uint64(t1) - uint64(t0) // t1-t0 without overflow, for t0 < t1
	hi, lo := bits.Mul64(w, uint64(p))
	q, _ := bits.Div64(hi, lo, uint64(px)) // q <= w: hi < px
	return int64(uint64(t0) + q)
}

// PixelOf returns the pixel of [t0, t1), cut into px equal pixels, that
// holds t: the last p with PixelStart(t0, t1, px, p) <= t, which is
// ⌊((t-t0+1)·px-1)/(t1-t0)⌋, exact for every t0 <= t < t1. Times outside
// the range give the first or the last pixel.
func PixelOf(t0, t1, px, t int64) int64 {
	if t < t0 || t1 <= t0 {
		return 0
	}
	if t >= t1 {
		return px - 1
	}
	w := uint64(t1) - uint64(t0)
	hi, lo := bits.Mul64(uint64(t)-uint64(t0)+1, uint64(px)) // t-t0+1 <= w
	lo, borrow := bits.Sub64(lo, 1, 0)
	hi -= borrow
	q, _ := bits.Div64(hi, lo, w) // q < px: hi < w
	return int64(q)
}

// share returns ⌊busy·255/w⌋ for 0 <= busy <= w, in 128 bits: the
// covered share of a range of w nanoseconds, 0-255.
func share(busy int64, w uint64) uint8 {
	if busy <= 0 {
		return 0
	}
	w = max(w, 1)
	hi, lo := bits.Mul64(uint64(busy), 255)
	if hi >= w {
		return 255
	}
	q, _ := bits.Div64(hi, lo, w)
	return uint8(min(q, 255))
}
