//go:build !linux

package testenv

// notice says nothing where a test binary cannot reach the go command's
// standard error; go test -v shows the skip messages.
func notice() {}
