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
