//go:build !unix

package objscan

import (
	"errors"
	"testing"
)

// mkfifo reports that there are no named pipes to test with.
func mkfifo(t *testing.T, path string) error { return errors.New("no named pipes on this system") }
