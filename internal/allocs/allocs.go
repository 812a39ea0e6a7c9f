// Package allocs measures what a function allocates, for the tests that
// assert a ceiling on the memory hostile input may cost.
package allocs

import "runtime"

// Bytes returns the bytes fn allocates on the heap
// (runtime.MemStats.TotalAlloc), counting every allocation, collected or
// not, by any goroutine while fn runs. Tests that use it must not run in
// parallel with others.
func Bytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Least calls fn runs times (at least once) and returns the fewest bytes
// one call allocated, as Bytes measures them. For an fn that allocates
// the same on every call, such as a decoder given the same input and no
// state kept between calls, that is what fn itself allocates, even when
// another goroutine (a finalizer, the runtime, a test's leftover
// goroutine) allocates during some of the calls.
func Least(runs int, fn func()) uint64 {
	least := Bytes(fn)
	for range runs - 1 {
		least = min(least, Bytes(fn))
	}
	return least
}
