//go:build unix

package objscan

import (
	"os"
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path. Code that opens it to read blocks
// until a writer comes: a writer started here lets such code go on, to
// fail the test instead of hanging it. An open that does not block leaves
// the writer waiting; the cleanup lets it go.
func mkfifo(t *testing.T, path string) error {
	if err := syscall.Mkfifo(path, 0o644); err != nil {
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
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
	})
	return nil
}
