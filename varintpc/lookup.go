package varintpc

import (
	"fmt"
	"math/bits"
)

// Lookup returns the value of the table in data at the PC pcOff bytes past
// the function entry, and the byte offset (from the entry) at which that
// value starts, exactly as runtime.pcvalue computes them for a table at a
// non-zero pctab offset: PC deltas are multiplied by quantum (the
// architecture's PC quantum: 1, 2 or 4) in uint32 arithmetic, ranges are
// half-open, and varints are read like the runtime's readvarint (any length,
// 7 bits per byte, shifts taken modulo 32).
//
// If the table ends before it covers pcOff, Lookup returns -1 and start 0
// when strict is false, and an error wrapping [ErrNotCovered] when strict is
// true (where the runtime would throw). If data ends in the middle of the
// table, Lookup returns an error wrapping [ErrTruncated] (where the runtime
// would read past the table). Lookup does not allocate unless it returns an
// error.
func Lookup(data []byte, pcOff uintptr, quantum uint32, strict bool) (val int32, start uintptr, err error) {
	val, start, ok, errOff := walk(data, 0, pcOff, quantum)
	if ok {
		return val, start, nil
	}
	return notFound(data, errOff, 0, pcOff, strict)
}

// notFound builds the result of a walk that did not find its PC.
func notFound(data []byte, errOff int, entry, target uintptr, strict bool) (int32, uintptr, error) {
	if errOff >= 0 {
		return -1, 0, fmt.Errorf("%w: data ends at offset %d (len %d) looking up pc %#x (entry %#x)", ErrTruncated, errOff, len(data), target, entry)
	}
	if strict {
		return -1, 0, fmt.Errorf("%w: pc %#x (entry %#x)", ErrNotCovered, target, entry)
	}
	return -1, 0, nil
}

// walk is the runtime's pcvalue loop over data for a function at entry.
// It returns ok=false with errOff<0 when the table ends before target, and
// ok=false with errOff>=0 when the data is truncated at errOff.
func walk(data []byte, entry, target uintptr, quantum uint32) (val int32, prevpc uintptr, ok bool, errOff int) {
	pc := entry
	prevpc = pc
	val = -1
	i := 0
	for {
		// One step of runtime.step. The common case is a one-byte value
		// delta and a one-byte pc delta.
		if i >= len(data) {
			return -1, 0, false, i
		}
		uv := uint32(data[i])
		if uv == 0 && pc != entry {
			return -1, 0, false, -1
		}
		i++
		if uv&0x80 != 0 {
			var good bool
			uv, i, good = readvarint(data, i-1)
			if !good {
				return -1, 0, false, i
			}
		}
		val += int32(-(uv & 1) ^ (uv >> 1))
		if i >= len(data) {
			return -1, 0, false, i
		}
		pd := uint32(data[i])
		i++
		if pd&0x80 != 0 {
			var good bool
			pd, i, good = readvarint(data, i-1)
			if !good {
				return -1, 0, false, i
			}
		}
		pc += uintptr(pd * quantum)
		if target < pc {
			return val, prevpc, true, -1
		}
		prevpc = pc
	}
}

// readvarint reads a varint at data[i] the way the runtime's readvarint
// does. It returns ok=false, and the offset where the data ended, if the
// varint is not terminated within data.
func readvarint(data []byte, i int) (v uint32, next int, ok bool) {
	var shift uint32
	for i < len(data) {
		b := data[i]
		i++
		v |= uint32(b&0x7f) << (shift & 31)
		if b&0x80 == 0 {
			return v, i, true
		}
		shift += 7
	}
	return 0, i, false
}

// CacheWays is the number of entries in each set of a [Cache], and
// CacheSets the number of sets, as in the runtime's pcvalueCache.
const (
	CacheWays = 8
	CacheSets = 2
)

// cacheEnt mirrors runtime.pcvalueCacheEnt.
type cacheEnt struct {
	targetpc uintptr // key, with off
	off      uint32  // key: the table's offset in pctab
	val      int32   // the value at targetpc
	valPC    uintptr // the PC at which val starts
}

// A Cache is a model of the runtime's per-M pcvalue cache
// (runtime.pcvalueCache) in front of [Lookup]: two sets of eight entries
// keyed by the exact target PC and the table's pctab offset. The set is
// (targetpc/PtrSize)%2; a lookup probes its set linearly, and a miss that
// finds its value inserts it at slot 0 after moving the old slot 0 entry
// over a random slot. The random choices come from a PRNG owned by the
// Cache, so runs are reproducible for a given seed.
//
// The zero Cache is ready to use, with pointer size 8 and seed 0. A Cache
// must not be used by several goroutines at once.
type Cache struct {
	// PtrSize is the pointer size of the modelled architecture, 4 or 8,
	// used to choose a set. Zero means 8; other values are taken as 8.
	PtrSize uintptr
	// Hits and Misses count the lookups answered from the cache and the
	// lookups that had to walk the table. Lookups of table offset 0 bypass
	// the cache and count as neither.
	Hits, Misses uint64

	entries [CacheSets][CacheWays]cacheEnt
	rng     uint64
}

// NewCache returns an empty cache whose random replacement is seeded with
// seed.
func NewCache(seed uint64) *Cache {
	return &Cache{rng: seed}
}

// Reset empties the cache, zeroes the counters and reseeds the PRNG.
func (c *Cache) Reset(seed uint64) {
	ptr := c.PtrSize
	*c = Cache{PtrSize: ptr, rng: seed}
}

// randn returns a pseudo-random number in [0, n), reducing a 32-bit random
// number the way the runtime's cheaprandn does (multiply and shift).
func (c *Cache) randn(n uint32) uint32 {
	// wyrand: a 64-bit state stepped by a constant, mixed by a 128-bit
	// multiply.
	c.rng += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(c.rng, c.rng^0xe7037ed1a0b428db)
	r := uint32(hi ^ lo)
	return uint32((uint64(r) * uint64(n)) >> 32)
}

// Lookup is runtime.pcvalue with this cache: it returns the value of the
// table at pctab offset off, whose bytes are data (pctab[off:]), at the
// absolute PC targetpc of a function that starts at entry, and the absolute
// PC at which that value starts. Offset 0 means the function has no such
// table: the result is -1, 0 and the cache is not consulted. Otherwise the
// cache is probed for (targetpc, off); on a miss the table is walked as by
// [Lookup] and, if the PC is covered, the result is inserted. Strictness and
// errors are as for [Lookup].
func (c *Cache) Lookup(off uint32, data []byte, entry, targetpc uintptr, quantum uint32, strict bool) (int32, uintptr, error) {
	if off == 0 {
		return -1, 0, nil
	}
	set := c.set(targetpc)
	for i := range set {
		ent := &set[i]
		if ent.off == off && ent.targetpc == targetpc {
			c.Hits++
			return ent.val, ent.valPC, nil
		}
	}
	c.Misses++
	val, start, ok, errOff := walk(data, entry, targetpc, quantum)
	if !ok {
		return notFound(data, errOff, entry, targetpc, strict)
	}
	ci := c.randn(CacheWays)
	set[ci] = set[0]
	set[0] = cacheEnt{targetpc: targetpc, off: off, val: val, valPC: start}
	return val, start, nil
}

// set returns the cache set of targetpc, as runtime.pcvalueCacheKey
// chooses it.
func (c *Cache) set(targetpc uintptr) *[CacheWays]cacheEnt {
	// The runtime divides by the constant goarch.PtrSize; a shift keeps
	// this model as cheap.
	sh := uint(3)
	if c.PtrSize == 4 {
		sh = 2
	}
	return &c.entries[(targetpc>>sh)%CacheSets]
}
