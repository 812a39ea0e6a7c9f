//go:build !linux

package forest

// reserve reserves nothing where no mapping is used: the forest grows on
// the Go heap.
func reserve(size int) ([]byte, func() error, error) { return nil, nil, nil }
