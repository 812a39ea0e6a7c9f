//go:build !unix

package objscan

// openNonblock is 0 where there are no named pipes to block an open.
const openNonblock = 0
