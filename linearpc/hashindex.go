package linearpc

import "math/bits"

// hashIndex maps 64-bit hashes to uint32 values below 1<<32-1, for a Set's lookups by
// hash: an open-addressing table probed linearly, each slot a key and its
// value in one 16-byte entry, so that a lookup in a large set costs about
// one cache miss. It grows by doubling at 3/4 load. The zero hashIndex is
// empty and ready to use.
type hashIndex struct {
	slots []hashSlot
	n     int  // keys stored
	shift uint // 64 - log2(len(slots))
}

type hashSlot struct {
	key uint64
	val uint32 // value + 1; 0 marks an empty slot
}

// newHashIndex returns an index sized for n keys.
func newHashIndex(n int) hashIndex {
	var h hashIndex
	h.alloc(n)
	return h
}

// alloc gives h empty room for n keys at 3/4 load at most.
func (h *hashIndex) alloc(n int) {
	size := 1 << bits.Len(uint(max(8, n+n/3)))
	h.slots = make([]hashSlot, size)
	h.shift = uint(64 - bits.TrailingZeros(uint(size)))
}

// pos is the first slot to probe for key: the top bits of key times a
// 64-bit odd constant, which mixes weak low bits (FNV) into them.
func (h *hashIndex) pos(key uint64) uint64 {
	return (key * 0x9e3779b97f4a7c15) >> h.shift
}

// get returns the value stored for key.
func (h *hashIndex) get(key uint64) (uint32, bool) {
	if h.n == 0 {
		return 0, false
	}
	mask := uint64(len(h.slots) - 1)
	for p := h.pos(key); ; p = (p + 1) & mask {
		s := &h.slots[p]
		if s.val == 0 {
			return 0, false
		}
		if s.key == key {
			return s.val - 1, true
		}
	}
}

// add stores val for key unless key is stored already, and reports
// whether it stored it.
func (h *hashIndex) add(key uint64, val uint32) bool {
	if 4*(h.n+1) > 3*len(h.slots) {
		h.grow()
	}
	mask := uint64(len(h.slots) - 1)
	for p := h.pos(key); ; p = (p + 1) & mask {
		s := &h.slots[p]
		if s.val == 0 {
			*s = hashSlot{key, val + 1}
			h.n++
			return true
		}
		if s.key == key {
			return false
		}
	}
}

// grow doubles the table (or allocates a first one) and reinserts the keys.
func (h *hashIndex) grow() {
	old := h.slots
	h.alloc(max(16, 2*h.n))
	mask := uint64(len(h.slots) - 1)
	for _, s := range old {
		if s.val == 0 {
			continue
		}
		p := h.pos(s.key)
		for h.slots[p].val != 0 {
			p = (p + 1) & mask
		}
		h.slots[p] = s
	}
}
