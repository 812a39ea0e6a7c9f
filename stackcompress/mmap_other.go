//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package stackcompress

import (
	"errors"
	"os"
)

// mapping is unavailable on this platform; Open falls back to ReadAt.
type mapping struct{}

func mmapFile(*os.File, int64) (*mapping, error) {
	return nil, errors.New("stackcompress: mmap is not supported on this platform")
}

func (*mapping) load(int64, int, []byte) ([]byte, error) {
	return nil, errors.New("stackcompress: mmap is not supported on this platform")
}

func (*mapping) release(int64, []byte) bool { return false }

func (*mapping) Close() error { return nil }
