package rewrite

import (
	"fmt"
	"math/bits"
)

// alignFloor is the largest alignment accepted whatever the file's size:
// 2 MiB, the largest page size binaries are aligned to (the default
// max-page-size of older x86-64 GNU linkers). Real section and segment
// alignments of Go binaries are at most 64 KiB.
const alignFloor = 2 << 20

// maxAlign is the largest alignment accepted in a file of size bytes: the
// file's size, or alignFloor if that is larger. An alignment costs at most
// itself in padding wherever the rewrite honors it, so a larger one could
// make a small input write a huge output.
func maxAlign(size uint64) uint64 { return max(size, alignFloor) }

// checkAlign checks an alignment field: 0 or a power of two (0 and 1 mean
// no alignment) no larger than maxAlign of the file's size. what names the
// field for the error.
func checkAlign(what string, a, size uint64) error {
	if a&(a-1) != 0 {
		return fmt.Errorf("%s %#x is not a power of two", what, a)
	}
	if a > maxAlign(size) {
		return fmt.Errorf("%s %#x is larger than the %d-byte file (at most %#x is accepted)", what, a, size, maxAlign(size))
	}
	return nil
}

// checkAlignLog checks an alignment stored as a power of two's exponent
// (Mach-O's section align), as checkAlign does.
func checkAlignLog(what string, log2 uint32, size uint64) error {
	if uint64(log2) > uint64(bits.Len64(maxAlign(size)))-1 {
		return fmt.Errorf("%s 2^%d is larger than the %d-byte file (at most %#x is accepted)", what, log2, size, maxAlign(size))
	}
	return nil
}

// inFile reports whether n bytes at offset off lie inside a file of size
// bytes, in arithmetic that cannot wrap.
func inFile(off, n, size uint64) bool { return off <= size && n <= size-off }
