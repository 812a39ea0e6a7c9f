//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBuildLabelsNamedPipe checks that build -labels refuses a named pipe
// as it refuses a pipe (TestBuildFromPipe): opening one waits for a
// writer, so it waited forever before it refused it.
func TestBuildLabelsNamedPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trace.fifo")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Skip(err)
	}
	hist := filepath.Join(dir, "history.json")
	os.WriteFile(hist, []byte(`{"schema_version":1,"trampolines":1024,"bindings":[]}`), 0o666)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"build", "-labels", hist, fifo, filepath.Join(dir, "store")}, &stdout, &stderr)
	}()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(stderr.String(), "regular file") {
			t.Errorf("build -labels from a named pipe: exit %d, stderr:\n%s", code, &stderr)
		}
	case <-time.After(time.Minute):
		t.Error("build -labels from a named pipe without a writer did not return")
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // let it go on
			w.Close()
		}
		<-done
	}
}
