package linearpc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pctab/pctab/pcvalue"
)

// ErrFormat is wrapped by every error about malformed encodings.
var ErrFormat = errors.New("linearpc: malformed table")

// ErrRange is wrapped by the error [LookupChecked] returns for a PC at or
// past the end of the table.
var ErrRange = errors.New("linearpc: pc out of range")

// index describes a parsed chunk index.
type index struct {
	form int // 1, 2 or 4: bytes per stored offset (1 also when empty)
	nc   int // number of chunks
	end  int // offset of the end of the index (= chunk 0)
}

// parseIndex checks the index of a table of length textLen at the start
// of data.
func parseIndex(data []byte, textLen uint32) (index, error) {
	nc := int((uint64(textLen) + ChunkUnits - 1) / ChunkUnits)
	ix := index{form: 1, nc: nc}
	if nc <= 1 {
		return ix, nil
	}
	if len(data) == 0 {
		return ix, fmt.Errorf("%w: chunk index of %d entries at offset 0: no data", ErrFormat, nc-1)
	}
	start := 0
	switch data[0] {
	case 0xfe:
		ix.form, start = 2, 1
	case 0xff:
		ix.form, start = 4, 1
	}
	ix.end = start + ix.form*(nc-1)
	if ix.end > len(data) {
		return ix, fmt.Errorf("%w: chunk index of %d %d-byte entries ends at offset %d, past the data (len %d)", ErrFormat, nc-1, ix.form, ix.end, len(data))
	}
	return ix, nil
}

// chunkAt returns the offset of chunk c's encoding.
func (ix index) chunkAt(data []byte, c int) (int, error) {
	if c == 0 {
		return ix.end, nil
	}
	var off uint64
	switch ix.form {
	case 1:
		off = uint64(data[c-1])
	case 2:
		off = uint64(binary.LittleEndian.Uint16(data[2*c-1:]))
	default:
		off = uint64(binary.LittleEndian.Uint32(data[4*c-3:]))
	}
	p := uint64(ix.end) + off
	if p >= uint64(len(data)) {
		return 0, fmt.Errorf("%w: chunk %d at offset %d (index entry %d), past the data (len %d)", ErrFormat, c, p, off, len(data))
	}
	return int(p), nil
}

// chunk is a parsed chunk: its start value and its changes, with PCs
// relative to the chunk.
type chunk struct {
	pcs  []byte
	v0   int32
	vals []byte // values 1..n, at the widths codes gives
	vl   []byte // vlen
}

// parseChunk checks the chunk at data[p:], which covers limit PC units
// (at most ChunkUnits).
func parseChunk(data []byte, p int, c int, limit uint32) (chunk, error) {
	if p >= len(data) {
		return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: past the data (len %d)", ErrFormat, c, p, len(data))
	}
	n := int(data[p])
	q := p + 1
	if q+n > len(data) {
		return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: %d pcs run past the data (len %d)", ErrFormat, c, p, n, len(data))
	}
	pcs := data[q : q+n]
	prev := 0
	for k, x := range pcs {
		if int(x) <= prev || uint32(x) >= limit {
			return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: pc %d (%d) at offset %d is not in ascending order in 1..%d", ErrFormat, c, p, k, x, q+k, limit-1)
		}
		prev = int(x)
	}
	vl := q + n
	vb := (n + 4) / 4
	if vl+vb > len(data) {
		return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: vlen at offset %d runs past the data (len %d)", ErrFormat, c, p, vl, len(data))
	}
	total := 0
	for k := 0; k < 4*vb; k++ {
		code := (data[vl+k/4] >> (uint(k%4) * 2)) & 3
		switch {
		case k <= n && code == 0:
			return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: value %d has width code 0 (vlen byte at offset %d)", ErrFormat, c, p, k, vl+k/4)
		case k > n && code != 0:
			return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: vlen padding is not zero (byte at offset %d)", ErrFormat, c, p, vl+k/4)
		}
		total += codeLen(code)
	}
	vals := vl + vb
	if vals+total > len(data) {
		return chunk{}, fmt.Errorf("%w: chunk %d at offset %d: %d value bytes at offset %d run past the data (len %d)", ErrFormat, c, p, total, vals, len(data))
	}
	c0 := data[vl] & 3
	return chunk{
		pcs:  pcs,
		v0:   readVal(data, vals, c0),
		vals: data[vals+codeLen(c0) : vals+total],
		vl:   data[vl : vl+vb],
	}, nil
}

// values calls f with the value after each change of the chunk, in order.
func (ch chunk) values(f func(k int, v int32)) {
	off := 0
	for k := range ch.pcs {
		i := k + 1
		code := (ch.vl[i/4] >> (uint(i%4) * 2)) & 3
		f(k, ch.v0+readVal(ch.vals, off, code))
		off += codeLen(code)
	}
}

// Decode decodes the spec encoding of a table of length textLen at the
// start of data, checking it completely: the index form and its entries,
// every chunk's count, PCs (strictly ascending, inside the chunk and the
// table), width codes (00 is invalid for a value, padding must be 0) and
// value bytes must lie inside data. Bytes that no chunk uses are ignored.
// The result is canonical (see [Canonical]). Decode never panics, and it
// allocates at most 256 runs per byte of data.
func Decode(data []byte, textLen uint32) (pcvalue.Table, error) {
	t := pcvalue.Table{Len: textLen}
	if textLen == 0 {
		return t, nil
	}
	ix, err := parseIndex(data, textLen)
	if err != nil {
		return pcvalue.Table{}, err
	}
	for c := range ix.nc {
		p, err := ix.chunkAt(data, c)
		if err != nil {
			return pcvalue.Table{}, err
		}
		start := uint32(c) * ChunkUnits
		ch, err := parseChunk(data, p, c, min(ChunkUnits, textLen-start))
		if err != nil {
			return pcvalue.Table{}, err
		}
		if len(t.Runs) == 0 || t.Runs[len(t.Runs)-1].Value != ch.v0 {
			t.Runs = append(t.Runs, pcvalue.Run{PC: start, Value: ch.v0})
		}
		ch.values(func(k int, v int32) {
			if t.Runs[len(t.Runs)-1].Value != v {
				t.Runs = append(t.Runs, pcvalue.Run{PC: start + uint32(ch.pcs[k]), Value: v})
			}
		})
	}
	return t, nil
}

// LookupChecked is [Lookup] for untrusted input: it returns the value at pc
// of the spec-encoded table of length textLen at the start of data, or an
// error if pc is not below textLen or if the parts of the encoding the
// lookup reads (the index and the chunk holding pc) are malformed, with
// the same checks as [Decode]. It never panics.
func LookupChecked(data []byte, textLen, pc uint32) (int32, error) {
	if pc >= textLen {
		return -1, fmt.Errorf("%w: pc %d, table length %d", ErrRange, pc, textLen)
	}
	ix, err := parseIndex(data, textLen)
	if err != nil {
		return -1, err
	}
	c := int(pc / ChunkUnits)
	p, err := ix.chunkAt(data, c)
	if err != nil {
		return -1, err
	}
	start := uint32(c) * ChunkUnits
	ch, err := parseChunk(data, p, c, min(ChunkUnits, textLen-start))
	if err != nil {
		return -1, err
	}
	v := ch.v0
	lo := byte(pc - start)
	ch.values(func(k int, x int32) {
		if ch.pcs[k] <= lo {
			v = x
		}
	})
	return v, nil
}
