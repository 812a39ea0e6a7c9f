//go:build !linux

package pagecache

func drop(string) error { return ErrUnsupported }
