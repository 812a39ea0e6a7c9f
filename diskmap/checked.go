package diskmap

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"
)

// A checked file holds a map in the seed's layout followed by a CRC-32C
// (Castagnoli) of each bucket and a trailer:
//
//	[map: M bytes][sum of bucket 0] ... [sum of bucket N-1][M: uint32][magic: "pctabdm1"]
//
// The sum of bucket i covers its offset, the next bucket's offset (none for
// the last) and the bucket's bytes: everything a lookup in it reads. The
// seed's layout cannot see every corruption (a page number changed to
// another that keeps the order, a truncated last bucket); a lookup in a
// checked file checks the sum of its bucket, so that any change to what it
// reads answers "every page", never a false negative. It costs 4 bytes per
// bucket (half a byte per key) and one CRC of a bucket the first time a
// lookup reads it.
const magic = "pctabdm1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteChecked writes the map and its bucket sums, as Open reads them.
func (b *Builder) WriteChecked(w io.Writer) (int64, error) {
	return b.write(w, true)
}

// NewChecked returns the map of a checked file's bytes, as WriteChecked
// writes them. If the trailer is missing or inconsistent, every lookup of
// the map answers "every page".
func NewChecked(data []byte) *Map {
	if len(data) < 12 || string(data[len(data)-8:]) != magic {
		return &Map{corrupt: true}
	}
	mlen := binary.LittleEndian.Uint32(data[len(data)-12:])
	if uint64(mlen) > uint64(len(data)-12) {
		return &Map{corrupt: true}
	}
	m := &Map{data: data[:mlen]}
	nb := m.buckets()
	if nb == 0 || uint64(mlen)+4*uint64(nb) != uint64(len(data)-12) {
		return &Map{corrupt: true}
	}
	m.sums = data[mlen : len(data)-12]
	m.verified = make([]atomic.Uint64, (nb+63)/64)
	return m
}

// bucketSum returns the CRC-32C of what a lookup in bucket i of nb reads:
// the two offsets that bound it and its bytes. The offsets must be in
// bounds (i < nb, nb from buckets).
func (m *Map) bucketSum(i, nb uint32) uint32 {
	lo := 4 * i
	hi := min(4*(i+2), 4*nb)
	s := crc32.Update(0, castagnoli, m.data[lo:hi])
	start := m.u32(4 * i)
	end := uint32(len(m.data))
	if i+1 < nb {
		end = m.u32(4 * (i + 1))
	}
	if start <= end && uint64(end) <= uint64(len(m.data)) {
		s = crc32.Update(s, castagnoli, m.data[start:end])
	}
	return s
}

// checkBucket reports whether bucket i's sum matches, for a checked map;
// true for a map without sums. A bucket is checked once: the map's bytes
// do not change while it is used (New's contract), so a bucket that
// matched its sum still does.
func (m *Map) checkBucket(i, nb uint32) bool {
	if m.sums == nil {
		return true
	}
	word, bit := &m.verified[i/64], uint64(1)<<(i%64)
	if word.Load()&bit != 0 {
		return true
	}
	if binary.LittleEndian.Uint32(m.sums[4*i:]) != m.bucketSum(i, nb) {
		return false
	}
	word.Or(bit)
	return true
}

// Verify checks every bucket of a checked map against its sum and returns
// an error naming the first that does not match; nil for a good map, and
// for a map without sums whose structure is sound.
func (m *Map) Verify() error {
	if m.corrupt {
		return fmt.Errorf("diskmap: not a checked map (trailer missing or inconsistent)")
	}
	nb := m.buckets()
	if nb == 0 {
		return fmt.Errorf("diskmap: bucket offsets corrupt at offset 0")
	}
	for i := range nb {
		if _, _, ok := m.bucket(i, nb); !ok {
			return fmt.Errorf("diskmap: bucket %d: offset %#x out of order or out of bounds", i, 4*i)
		}
		if !m.checkBucket(i, nb) {
			return fmt.Errorf("diskmap: bucket %d (offset %#x): checksum mismatch", i, m.u32(4*i))
		}
	}
	if m.Len() < 0 {
		return fmt.Errorf("diskmap: corrupt keys")
	}
	return nil
}
