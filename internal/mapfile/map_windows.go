//go:build windows && !pctab_nommap

package mapfile

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Supported says whether Map maps files in this build.
const Supported = true

// mapFile maps a read-only view of f. The view holds the file mapping
// object open, so its handle is closed at once.
func mapFile(f *os.File, size int) (*Mapping, error) {
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY, uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(h)
	view, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	if err != nil {
		return nil, err
	}
	b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&view))), size)
	return &Mapping{data: b, unmap: func() error { return windows.UnmapViewOfFile(view) }}, nil
}

// dontNeed removes b's pages from the working set: VirtualUnlock of pages
// that are not locked does that, and fails with ERROR_NOT_LOCKED.
func dontNeed(b []byte) { _ = windows.VirtualUnlock(addr(b), uintptr(len(b))) }
