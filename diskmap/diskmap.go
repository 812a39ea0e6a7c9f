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

// A Builder collects the pages of every key in memory and writes the map
// once.
type Builder struct {
	pages map[uint32][]uint32
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{pages: make(map[uint32][]uint32)}
}

// Add records that key has a hit on page.
func (b *Builder) Add(key []byte, page uint32) { b.AddHash(Hash(key), page) }

// AddHash records that the key with hash h has a hit on page.
func (b *Builder) AddHash(h uint32, page uint32) {
	p := b.pages[h]
	if n := len(p); n > 0 && p[n-1] == page {
		return // the common case of many hits on one page in a row
	}
	b.pages[h] = append(p, page)
}

// Keys returns the number of distinct key hashes added.
func (b *Builder) Keys() int { return len(b.pages) }

// Size returns the number of bytes WriteTo writes.
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
	if size := b.Size(); size >= 1<<32 {
		return 0, &SizeError{Size: size}
	}
	nb := buckets(len(b.pages))
	byBucket := make([][]uint32, nb)
	for h, p := range b.pages {
		slices.Sort(p)
		b.pages[h] = slices.Compact(p)
		byBucket[h%uint32(nb)] = append(byBucket[h%uint32(nb)], h)
	}
	for _, hs := range byBucket {
		slices.Sort(hs)
	}
	buf := make([]byte, 0, 4*nb)
	off := uint32(4 * nb)
	for _, hs := range byBucket {
		buf = binary.LittleEndian.AppendUint32(buf, off)
		off += 8 * uint32(len(hs))
		for _, h := range hs {
			off += 4 * uint32(len(b.pages[h]))
		}
	}
	var written int64
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	if err := flush(); err != nil {
		return written, err
	}
	off = uint32(4 * nb)
	for _, hs := range byBucket {
		v := off + 8*uint32(len(hs))
		for _, h := range hs {
			buf = binary.LittleEndian.AppendUint32(buf, v)
			v += 4 * uint32(len(b.pages[h]))
		}
		for _, h := range hs {
			buf = binary.LittleEndian.AppendUint32(buf, h)
		}
		for _, h := range hs {
			for _, p := range b.pages[h] {
				buf = binary.LittleEndian.AppendUint32(buf, p)
			}
		}
		off = v
		if len(buf) >= 1<<16 {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	return written, flush()
}

// A SizeError reports a map too large for 32-bit offsets.
type SizeError struct{ Size int64 }

func (e *SizeError) Error() string {
	return fmt.Sprintf("diskmap: a map of %d bytes passes the 4 GiB that 32-bit offsets address", e.Size)
}
