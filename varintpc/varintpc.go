// Package varintpc implements Go's varint-delta PC-value table format, the
// format the linker writes into runtime.pctab and the runtime walks in
// runtime.pcvalue (Go 1.2 through at least Go 1.26).
//
// # Format
//
// A table is the byte stream
//
//	v0 p0 v1 p1 ... vn pn 0x00
//
// where each vi is a zig-zag (signed) varint holding the change of the value
// and each pi is an unsigned varint holding the length of the run in
// PC-quantum units. The decoder starts with value -1 at PC 0: the value
// -1+v0+...+vi holds for PCs in [p0+...+p(i-1), p0+...+pi). A zero value
// delta ends the table, except while the decoder is still at PC 0: there a
// zero byte is a delta (the value stays -1, which is how most PCDATA tables
// start). The runtime tests "still at PC 0" as "the PC equals the function
// entry" before every step, so a table whose first run has length 0 may
// carry a second zero delta; Decode and Lookup both follow the runtime here.
//
// Varints are little-endian base-128, 7 bits per byte, with the 0x80 bit set
// on every byte but the last. The runtime accumulates them in a uint32 and
// multiplies PC deltas by the PC quantum in uint32 arithmetic.
//
// # API
//
// [Decode] and [Encode] convert between the byte stream and a
// [pcvalue.Table]; Encode writes the bytes the linker
// (cmd/internal/obj.funcpctab) writes, so Encode(Decode(x)) == x for every
// table the linker produces. [Lookup] answers one query the way
// runtime.pcvalue does, without decoding the whole table, and [Cache] adds
// the runtime's per-M pcvalue cache on top of it.
package varintpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/pctab/pctab/pcvalue"
)

// MaxVarintLen is the longest varint Decode accepts: a uint32 needs at most
// 5 bytes of 7 bits.
const MaxVarintLen = 5

// ErrNotCovered is returned (wrapped) by strict lookups when the table ends
// before the requested PC. The runtime throws "invalid runtime symbol table"
// in that case.
var ErrNotCovered = errors.New("varintpc: table does not cover pc")

// ErrTruncated is returned (wrapped) when the data ends in the middle of a
// table.
var ErrTruncated = errors.New("varintpc: truncated table")

// Decode decodes the table that starts at data[0]. It returns the table and
// the number of bytes it occupies, including the terminating zero byte.
// Bytes after the terminator are ignored.
//
// Decode accepts exactly the canonical encodings: every varint must be
// minimal, at most [MaxVarintLen] bytes long and fit in a uint32, and the PC
// deltas must add up to at most math.MaxUint32. Under these rules
// Encode(t) reproduces data[:n] byte for byte. Zero-length runs are kept.
// The first value delta belongs to PC 0 (see the package documentation for
// the one case where a later delta does too).
func Decode(data []byte) (t pcvalue.Table, n int, err error) {
	// Count the records first so that Runs is allocated once, at its final
	// size; this also validates the stream.
	nruns, _, _, _, err := decode(nil, data, false)
	if err != nil {
		return pcvalue.Table{}, 0, err
	}
	return AppendDecode(make([]pcvalue.Run, 0, nruns), data)
}

// AppendDecode is [Decode] appending the table's runs to runs, like
// append: the returned table's Runs is the appended part, in runs' backing
// array when its capacity suffices and in a new one otherwise, and its
// capacity extends to the end of that array, so that a caller decoding
// many tables into one buffer can pass t.Runs[:0] back for the next table.
// It reads the table once. On error nothing is appended.
func AppendDecode(runs []pcvalue.Run, data []byte) (t pcvalue.Table, n int, err error) {
	start := len(runs)
	_, runs, tlen, n, err := decode(runs, data, true)
	if err != nil {
		return pcvalue.Table{}, 0, err
	}
	return pcvalue.Table{Runs: runs[start:], Len: tlen}, n, nil
}

// decode reads the table at data[0]: with emit it appends its runs to
// runs, without it only checks the table. It returns the number of runs,
// runs, the table's length in PC-quantum units and its length in bytes.
func decode(runs []pcvalue.Run, data []byte, emit bool) (nruns int, _ []pcvalue.Run, tlen uint32, n int, err error) {
	var (
		i   int
		pc  uint64
		val = int32(-1)
	)
	for {
		if i >= len(data) {
			return 0, runs, 0, 0, fmt.Errorf("%w: value delta %d at offset %d: data ends (len %d)", ErrTruncated, nruns, i, len(data))
		}
		if data[i] == 0 && pc != 0 {
			i++
			break
		}
		// Most varints are one byte, always canonical: read those inline.
		var uv, pd uint32
		if b := data[i]; b < 0x80 {
			uv = uint32(b)
			i++
		} else {
			var k int
			if uv, k, err = readCanonical(data, i); err != nil {
				return 0, runs, 0, 0, fmt.Errorf("varintpc: value delta %d: %w", nruns, err)
			}
			i = k
		}
		val += zigzag(uv)
		if i >= len(data) {
			return 0, runs, 0, 0, fmt.Errorf("%w: pc delta %d at offset %d: data ends (len %d)", ErrTruncated, nruns, i, len(data))
		}
		k := i + 1
		if b := data[i]; b < 0x80 {
			pd = uint32(b)
		} else if pd, k, err = readCanonical(data, i); err != nil {
			return 0, runs, 0, 0, fmt.Errorf("varintpc: pc delta %d: %w", nruns, err)
		}
		if emit {
			runs = append(runs, pcvalue.Run{PC: uint32(pc), Value: val})
		}
		pc += uint64(pd)
		if pc > math.MaxUint32 {
			return 0, runs, 0, 0, fmt.Errorf("varintpc: pc delta %d at offset %d: table length %d exceeds 32 bits", nruns, i, pc)
		}
		i = k
		nruns++
	}
	return nruns, runs, uint32(pc), i, nil
}

// readCanonical reads a minimal varint of at most 5 bytes that fits in a
// uint32, starting at data[i]. It returns the value and the offset just
// past it.
func readCanonical(data []byte, i int) (v uint32, next int, err error) {
	start := i
	var shift uint
	for {
		if i >= len(data) {
			return 0, 0, fmt.Errorf("%w: varint at offset %d: data ends at %d", ErrTruncated, start, len(data))
		}
		b := data[i]
		i++
		if i-start == MaxVarintLen && b > 0x0f {
			return 0, 0, fmt.Errorf("varintpc: varint at offset %d overflows uint32 (byte %#02x at offset %d)", start, b, i-1)
		}
		v |= uint32(b&0x7f) << shift
		if b&0x80 == 0 {
			if b == 0 && i-start > 1 {
				return 0, 0, fmt.Errorf("varintpc: varint at offset %d is not minimal (%d bytes, last byte 0)", start, i-start)
			}
			return v, i, nil
		}
		shift += 7
	}
}

// zigzag maps the runtime's unsigned value delta to the signed delta.
func zigzag(uv uint32) int32 {
	return int32(-(uv & 1) ^ (uv >> 1))
}

// Encode returns the varint-delta encoding of t, byte-identical to what the
// linker writes for a function whose table has these runs. See
// [AppendEncode].
func Encode(t pcvalue.Table) []byte {
	return AppendEncode(nil, t)
}

// AppendEncode appends the encoding of t to dst and returns the extended
// slice. t must be valid ([pcvalue.Table.Validate]); an invalid table gives
// meaningless bytes but no panic.
//
// A table without runs encodes to nothing: the linker stores no bytes for
// it (the function's offset is 0). A run after the first whose value equals
// the previous run's value cannot be represented unless it starts at PC 0,
// because its zero value delta reads as the terminator; the linker never
// emits such runs, and Encode writes them anyway (the result decodes to a
// shorter table).
func AppendEncode(dst []byte, t pcvalue.Table) []byte {
	if len(t.Runs) == 0 {
		return dst
	}
	prevVal := int32(-1)
	var prevPC uint32
	for i, r := range t.Runs {
		if i > 0 {
			dst = binary.AppendUvarint(dst, uint64(r.PC-prevPC))
			prevPC = r.PC
		}
		// The linker computes the delta in int32 and then widens it, so
		// the zig-zag code always fits in 32 bits.
		dst = binary.AppendVarint(dst, int64(r.Value-prevVal))
		prevVal = r.Value
	}
	dst = binary.AppendUvarint(dst, uint64(t.Len-prevPC))
	return append(dst, 0)
}
