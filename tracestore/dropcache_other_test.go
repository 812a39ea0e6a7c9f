//go:build !linux

package tracestore

import "errors"

func dropCache(string) error { return errors.New("not supported on this platform") }
