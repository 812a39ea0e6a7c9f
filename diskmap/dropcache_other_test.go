//go:build !linux

package diskmap

import "errors"

func dropCache(path string) error { return errors.New("not supported on this platform") }
