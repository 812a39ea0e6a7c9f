package stackcompress

import (
	"hash/maphash"
	"math/bits"
)

// slots is the array of an open-addressing hash table that stores only
// values, never keys: node indices for the node map, dictionary indices
// plus one for the dictionary map. The value 0 marks an empty slot, which is
// free because the root, node 0, is never looked up.
//
// Values below wideAt are stored in 32 bits; once a table must hold a value
// at or above wideAt it is rebuilt with 64-bit slots. wideAt is 1<<32 except
// in tests, which lower it to exercise the wide form.
//
// A table of 1<<k slots holds values below 1<<k, so a slot's bits above the
// low k are free. They hold a fingerprint: the top bits of the key's hash.
// A probe reads a key back from the pages only when the fingerprint
// matches, so that nearly every key read is the one that confirms a hit.
type slots struct {
	s32     []uint32
	s64     []uint64
	mask    uint64
	idxBits uint   // k
	fpShift uint   // 64 minus the fingerprint bits: hash >> fpShift is the fingerprint
	idxMask uint64 // 1<<k - 1
}

func newSlots(n uint64, wide bool) slots {
	k := uint(bits.TrailingZeros64(n))
	s := slots{mask: n - 1, idxBits: k, idxMask: n - 1}
	width := uint(32)
	if wide {
		s.s64 = make([]uint64, n)
		width = 64
	} else {
		s.s32 = make([]uint32, n)
	}
	s.fpShift = 64 - (width - min(k, width)) // a shift of 64 gives fingerprint 0
	return s
}

// tag returns the fingerprint of hash h, in slot position.
func (s *slots) tag(h uint64) uint64 { return h >> s.fpShift << s.idxBits }

func (s *slots) get(i uint64) uint64 {
	if s.s64 != nil {
		return s.s64[i]
	}
	return uint64(s.s32[i])
}

func (s *slots) set(i, v uint64) {
	if s.s64 != nil {
		s.s64[i] = v
	} else {
		s.s32[i] = uint32(v)
	}
}

// len returns the number of slots.
func (s *slots) len() uint64 { return s.mask + 1 }

// bytes returns the size of the slot array.
func (s *slots) bytes() uint64 {
	return 8*uint64(len(s.s64)) + 4*uint64(len(s.s32))
}

// insertNew stores v, whose key has hash h and is known to be absent, at
// the first empty slot from h. Rehashing uses it.
func (s *slots) insertNew(h, v uint64) {
	i := h & s.mask
	for s.get(i) != 0 {
		i = (i + 1) & s.mask
	}
	s.set(i, v|s.tag(h))
}

// hasher hashes keys with a per-builder random seed (hash/maphash), so that
// no input, however crafted, can predict which keys share a probe sequence:
// frames come from traces and profiles, which an adversary can write, and
// with a fixed hash a few thousand colliding frames would make every insert
// probe every earlier one. The seed is not part of any file: the maps live
// only while a Builder builds.
type hasher struct{ seed maphash.Seed }

func newHasher() hasher { return hasher{maphash.MakeSeed()} }

// hash2 hashes a node key: a stored frame and a parent index.
func (h hasher) hash2(frame, parent uint64) uint64 {
	return maphash.Comparable(h.seed, [2]uint64{frame, parent})
}

// hash1 hashes a frame for the dictionary.
func (h hasher) hash1(frame uint64) uint64 {
	return maphash.Comparable(h.seed, frame)
}
