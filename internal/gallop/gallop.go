// Package gallop is a galloping (exponential) search: a binary search that
// starts from where the last one ended, for the increasing positions a
// sweep looks up one after another (the pixel boundaries of a timeline
// row). Such a search reads a few cache lines near the last position
// instead of a path from the middle of a large array.
package gallop

import "sort"

// Search returns the smallest k in [lo, n) with f(k) true, or n if there is
// none, for f false then true over [0, n) and false below lo. It looks at
// lo, lo+1, lo+3, lo+7, ... and then binary-searches the last gap, so it
// costs O(log(k-lo)) calls of f.
func Search(n, lo int, f func(int) bool) int {
	step := 1
	hi := lo
	for hi < n && !f(hi) {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, n)
	return lo + sort.Search(hi-lo, func(i int) bool { return f(lo + i) })
}
