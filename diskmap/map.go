package diskmap

import (
	"encoding/binary"
	"sync/atomic"
)

// A Map reads a map in place, from memory or from a memory-mapped file.
// Its methods never panic and never read outside its bytes, whatever they
// hold: where the bytes a lookup reads are inconsistent, the lookup
// answers "every page".
type Map struct {
	data []byte
	sums []byte // per-bucket CRC-32Cs of a checked map, else nil
	// verified has a bit per bucket of a checked map whose sum matched.
	verified []atomic.Uint64
	corrupt  bool // a checked map whose trailer is wrong
	release  func() error
}

// New returns the map held in data, in the seed's layout (as WriteTo
// writes it), which it reads in place: there is no decoding step, and data
// must not change while the map is used. See NewChecked for maps that
// carry their checksums.
func New(data []byte) *Map { return &Map{data: data} }

// Close releases the file mapping of a map Open returned.
func (m *Map) Close() error {
	r := m.release
	m.release, m.data = nil, nil
	if r == nil {
		return nil
	}
	return r()
}

// Bytes returns the map's bytes.
func (m *Map) Bytes() []byte { return m.data }

func (m *Map) u32(off uint32) uint32 { return binary.LittleEndian.Uint32(m.data[off:]) }

// buckets returns the number of buckets, or 0 if the offsets are corrupt.
func (m *Map) buckets() uint32 {
	if m.corrupt || len(m.data) < 4 || uint64(len(m.data)) >= 1<<32 {
		return 0
	}
	first := m.u32(0)
	if first == 0 || first%4 != 0 || uint64(first) > uint64(len(m.data)) {
		return 0
	}
	return first / 4
}

// bucket returns the extent of bucket i of nb, or ok false if it is
// corrupt.
func (m *Map) bucket(i, nb uint32) (start, end uint32, ok bool) {
	start = m.u32(4 * i)
	end = uint32(len(m.data))
	if i+1 < nb {
		end = m.u32(4 * (i + 1))
	}
	if start < 4*nb || start > end || uint64(end) > uint64(len(m.data)) || start%4 != 0 || end%4 != 0 {
		return 0, 0, false
	}
	return start, end, true
}

// keys returns the number of keys of the bucket at [start, end), or ok
// false if its values offsets are corrupt: not increasing, or outside the
// bucket's values.
func (m *Map) keys(start, end uint32) (n uint32, ok bool) {
	if start == end {
		return 0, true
	}
	first := m.u32(start)
	if first <= start || (first-start)%8 != 0 || first > end {
		return 0, false
	}
	n = (first - start) / 8
	prev := first
	for k := uint32(1); k < n; k++ {
		v := m.u32(start + 4*k)
		if v < prev || v > end || v%4 != 0 {
			return 0, false
		}
		prev = v
	}
	return n, true
}

// Lookup returns the pages recorded for key: every page recorded for a key
// with key's hash. all is true when the map is corrupt where the lookup
// reads: the caller must then treat every page as a hit.
//
// A lookup checks everything the format lets it check on its path: the
// bucket's extent, its values offsets (increasing, inside the bucket), its
// hashes (sorted, distinct, and of this bucket) and the pages it returns
// (sorted and distinct). A change that keeps all of that consistent, such
// as a page number replaced by another in order, cannot be seen in the
// seed's format; a store that must see it checksums the file.
func (m *Map) Lookup(key []byte) (pages []uint32, all bool) {
	return m.AppendLookup(nil, key)
}

// LookupHash is Lookup for a key given by its Hash.
func (m *Map) LookupHash(h uint32) (pages []uint32, all bool) {
	return m.AppendLookupHash(nil, h)
}

// AppendLookup is Lookup appending the pages to dst: it allocates nothing
// when dst has room.
func (m *Map) AppendLookup(dst []uint32, key []byte) ([]uint32, bool) {
	return m.AppendLookupHash(dst, Hash(key))
}

// AppendLookupHash is LookupHash appending the pages to dst.
func (m *Map) AppendLookupHash(dst []uint32, h uint32) ([]uint32, bool) {
	nb := m.buckets()
	if nb == 0 {
		return dst, true
	}
	b := h % nb
	start, end, ok := m.bucket(b, nb)
	if !ok || !m.checkBucket(b, nb) {
		return dst, true
	}
	n, ok := m.keys(start, end)
	if !ok {
		return dst, true
	}
	hashes := m.data[start+4*n : start+8*n]
	base := len(dst)
	prevHash := int64(-1)
	for k := uint32(0); k < n; k++ {
		hk := binary.LittleEndian.Uint32(hashes[4*k:])
		if hk%nb != b || int64(hk) <= prevHash {
			// A bucket holds its own hashes, sorted and distinct.
			return dst[:base], true
		}
		prevHash = int64(hk)
		if hk != h {
			continue
		}
		vs := m.u32(start + 4*k)
		ve := end
		if k+1 < n {
			ve = m.u32(start + 4*(k+1))
		}
		if vs < start+8*n {
			return dst[:base], true
		}
		prev := int64(-1)
		for o := vs; o < ve; o += 4 {
			p := m.u32(o)
			if int64(p) <= prev {
				return dst[:base], true // pages are stored sorted and distinct
			}
			prev = int64(p)
			dst = append(dst, p)
		}
	}
	return dst, false
}

// Len returns the number of keys the map holds, or -1 if it is corrupt
// anywhere. It reads every bucket's keys.
func (m *Map) Len() int {
	nb := m.buckets()
	if nb == 0 {
		return -1
	}
	total := 0
	for i := range nb {
		start, end, ok := m.bucket(i, nb)
		if !ok {
			return -1
		}
		n, ok := m.keys(start, end)
		if !ok {
			return -1
		}
		total += int(n)
	}
	return total
}
