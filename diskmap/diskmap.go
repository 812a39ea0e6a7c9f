// Package diskmap is a write-once hash map from 32-bit key hashes to sets of
// 32-bit page numbers, laid out so that a memory-mapped file is read in
// place with no decoding step: the disk-backed hash map index of the
// disk-backed-hashmap-index seed (Seq's high-cardinality index), byte for
// byte.
//
// Everything in a map is a little-endian uint32:
//
//	map:    [bucket offset 0] ... [bucket offset N-1] [bucket 0] ... [bucket N-1]
//	bucket: [values offset 0] ... [values offset K-1] [hash 0] ... [hash K-1] [values]
//	values: the sorted page numbers of key 0, then of key 1, ...
//
// Every offset is from the start of the map. The first bucket offset is
// also the length of the offsets, so the number of buckets is that offset
// divided by 4; bucket i runs to bucket i+1's offset (the last to the end
// of the map), and an empty bucket holds nothing. A bucket's first values
// offset tells how many keys it holds: (values offset 0 - bucket offset) / 8.
// Key k's pages run from its values offset to the next key's (the last
// key's to the end of its bucket). A key is in bucket hash % N.
//
// Keys are stored as their 32-bit hash only (Hash, 32-bit FNV-1a): two keys
// with one hash share the union of their pages. The map thus answers with
// false positives but never with false negatives; callers re-check what
// they read. A map that is corrupt where a lookup reads answers "every
// page", for the same reason.
package diskmap

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// BucketKeys is the number of keys a bucket holds on average: one vector
// of 32-bit hashes as AVX2 compares them (the seed targets 8 on x86 and 4
// on ARM). A map of K keys has ceil(K/BucketKeys) buckets, at least one.
const BucketKeys = 8

// Hash returns the 32-bit FNV-1a hash of key: the hash a map stores. It is
// part of the format: fixed, unseeded and the same on every platform.
func Hash(key []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// A Builder collects the pages of every key and writes the map once.
//
// A Builder from NewBuilder holds everything in memory. One from
// NewSpillBuilder holds about a limit's bytes and writes the rest to a
// temporary file (see NewSpillBuilder); both write the same map for the
// same keys and pages.
type Builder struct {
	pages map[uint32][]uint32
	spill // a spilling Builder's state; zero for NewBuilder's
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{pages: make(map[uint32][]uint32)}
}

// Add records that key has a hit on page.
func (b *Builder) Add(key []byte, page uint32) { b.AddHash(Hash(key), page) }

// AddHash records that the key with hash h has a hit on page.
func (b *Builder) AddHash(h uint32, page uint32) {
	p, ok := b.pages[h]
	if n := len(p); n > 0 && p[n-1] == page {
		return // the common case of many hits on one page in a row
	}
	c := cap(p)
	p = append(p, page)
	b.pages[h] = p
	if b.limit > 0 {
		if !ok {
			b.held += keyBytes
		}
		if b.held += 4 * int64(cap(p)-c); b.held > b.limit {
			b.spillRun()
		}
	}
}

// Keys returns the number of distinct key hashes added. For a Builder that
// has spilled, it counts only those it holds in memory.
func (b *Builder) Keys() int { return len(b.pages) }

// Size returns the number of bytes WriteTo writes. For a Builder that has
// spilled, it counts only the keys it holds in memory.
func (b *Builder) Size() int64 {
	n := int64(4 * buckets(len(b.pages)))
	for _, p := range b.pages {
		n += 8 + 4*int64(countUnique(p))
	}
	return n
}

func buckets(keys int) int { return max(1, (keys+BucketKeys-1)/BucketKeys) }

func countUnique(p []uint32) int {
	s := slices.Clone(p)
	slices.Sort(s)
	return len(slices.Compact(s))
}

// WriteTo writes the map to w. It returns an error if the map would pass
// 4 GiB, which 32-bit offsets cannot address.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	return b.write(w, false)
}

// write writes the map to w, followed by its bucket sums and trailer if
// checked.
func (b *Builder) write(w io.Writer, checked bool) (int64, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.runs != nil {
		return b.writeSpilled(w, checked)
	}
	nb := buckets(len(b.pages))
	byBucket := make([][]uint32, nb)
	sizes := make([]uint32, nb)
	var size int64 = 4 * int64(nb)
	for h, p := range b.pages {
		slices.Sort(p)
		p = slices.Compact(p)
		b.pages[h] = p
		byBucket[h%uint32(nb)] = append(byBucket[h%uint32(nb)], h)
		size += 8 + 4*int64(len(p))
		if size >= 1<<32 {
			return 0, &SizeError{Size: size}
		}
		sizes[h%uint32(nb)] += 8 + 4*uint32(len(p))
	}
	for _, hs := range byBucket {
		slices.Sort(hs)
	}
	var bk, k int
	next := func() (uint32, []uint32, bool, error) {
		for bk < nb && k == len(byBucket[bk]) {
			bk, k = bk+1, 0
		}
		if bk == nb {
			return 0, nil, false, nil
		}
		h := byBucket[bk][k]
		k++
		return h, b.pages[h], true, nil
	}
	return emit(w, sizes, next, checked)
}

// emit writes a map of len(sizes) buckets, bucket i of sizes[i] bytes, to
// w: next returns its keys and their pages (sorted, distinct) in bucket
// order, each bucket's by hash. With checked, the bucket sums and the
// trailer follow. The map's size must be below 4 GiB.
func emit(w io.Writer, sizes []uint32, next func() (uint32, []uint32, bool, error), checked bool) (int64, error) {
	nb := uint32(len(sizes))
	var size uint64 = 4 * uint64(nb)
	for _, s := range sizes {
		size += uint64(s)
	}
	if size >= 1<<32 || checked && size+4*uint64(nb)+12 >= 1<<32 {
		return 0, &SizeError{Size: int64(size)}
	}
	var written int64
	buf := make([]byte, 0, 1<<16)
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	// The offsets, and each bucket's sum from them on the way.
	var sums []uint32
	if checked {
		sums = make([]uint32, nb)
	}
	off := 4 * nb
	var pair [8]byte
	for i, s := range sizes {
		buf = binary.LittleEndian.AppendUint32(buf, off)
		if checked {
			binary.LittleEndian.PutUint32(pair[:], off)
			binary.LittleEndian.PutUint32(pair[4:], off+s)
			n := 8
			if uint32(i)+1 == nb {
				n = 4
			}
			sums[i] = crc32.Update(0, castagnoli, pair[:n])
		}
		off += s
		if len(buf) >= 1<<16 {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	if err := flush(); err != nil {
		return written, err
	}
	// The buckets, a bucket's keys gathered before it is written.
	var hs, vals []uint32
	var ends []int
	h, p, ok, err := next()
	off = 4 * nb
	for i := range nb {
		hs, vals, ends = hs[:0], vals[:0], ends[:0]
		for ; ok && h%nb == i; h, p, ok, err = next() {
			hs = append(hs, h)
			vals = append(vals, p...)
			ends = append(ends, len(vals))
		}
		if err != nil {
			return written, err
		}
		start := len(buf)
		v := off + 8*uint32(len(hs))
		for k := range hs {
			buf = binary.LittleEndian.AppendUint32(buf, v+4*uint32(k0(ends, k)))
		}
		for _, x := range hs {
			buf = binary.LittleEndian.AppendUint32(buf, x)
		}
		for _, x := range vals {
			buf = binary.LittleEndian.AppendUint32(buf, x)
		}
		if n := len(buf) - start; uint64(n) != uint64(sizes[i]) {
			return written, fmt.Errorf("diskmap: bucket %d has %d bytes, %d counted", i, n, sizes[i])
		}
		if checked {
			sums[i] = crc32.Update(sums[i], castagnoli, buf[start:])
		}
		off += sizes[i]
		if len(buf) >= 1<<16 {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	if ok || err != nil {
		if err == nil {
			err = fmt.Errorf("diskmap: key %#x out of bucket order", h)
		}
		return written, err
	}
	if checked {
		for _, s := range sums {
			buf = binary.LittleEndian.AppendUint32(buf, s)
			if len(buf) >= 1<<16 {
				if err := flush(); err != nil {
					return written, err
				}
			}
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(size))
		buf = append(buf, magic...)
	}
	return written, flush()
}

// k0 returns where key k's values start among its bucket's: 0 for the
// first, else where key k-1's end.
func k0(ends []int, k int) int {
	if k == 0 {
		return 0
	}
	return ends[k-1]
}

// A SizeError reports a map too large for 32-bit offsets.
type SizeError struct{ Size int64 }

// Error gives the map's size and the 4 GiB limit.
func (e *SizeError) Error() string {
	return fmt.Sprintf("diskmap: a map of %d bytes passes the 4 GiB that 32-bit offsets address", e.Size)
}
