//go:build unix

package testenv

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Mkfifo makes a named pipe at path, for tests of code that must refuse
// one. Code that opens it to read blocks until a writer comes: a writer
// started here lets such code go on, so that the test fails instead of
// hanging. Code that does not block leaves the writer waiting; the
// test's cleanup lets it go. It returns an error where there are no named
// pipes.
func Mkfifo(t testing.TB, path string) error {
	if err := unix.Mkfifo(path, 0o644); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
	}()
	t.Cleanup(func() {
		if r, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
	})
	return nil
}
