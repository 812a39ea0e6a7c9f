//go:build !unix

package testenv

import (
	"errors"
	"testing"
)

// Mkfifo reports that there are no named pipes here; see the Unix
// version.
func Mkfifo(t testing.TB, path string) error {
	return errors.New("no named pipes on this system")
}
