package objscan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by Open's error for a path that is not a
// regular file: a directory, a named pipe, a device or a socket. Open
// refuses them before reading a byte: a named pipe would block until a
// writer came, and a device such as /dev/zero has no size and no end.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens the regular file at path for reading and returns it
// with its size. It opens without waiting for a writer (a named pipe
// would otherwise block the open itself) and checks the type of what it
// opened, so a path replaced between the two checks is still refused.
func openRegular(path string) (*os.File, int64, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, 0, err
	} else if !st.Mode().IsRegular() {
		return nil, 0, notRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, notRegular(path, st.Mode())
	}
	return f, st.Size(), nil
}

// ReadFile reads the regular file at path whole, as os.ReadFile does, but
// refuses what Open refuses (see [ErrNotRegular]) before reading: a named
// pipe would block it, and /dev/zero would fill memory.
func ReadFile(path string) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("reading %s: %d bytes: %w", path, size, err)
	}
	return b, nil
}

// notRegular is the error for path, of the given mode, that is not a
// regular file.
func notRegular(path string, mode fs.FileMode) error {
	return fmt.Errorf("%s: %w (%s): pctab reads binaries from regular files", path, ErrNotRegular, fileKind(mode))
}

// fileKind names the type of a file that is not regular.
func fileKind(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + mode.String()
}
