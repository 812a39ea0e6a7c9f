package varintpc

// The runtime-shaped lookup.
//
// [Lookup] and [Cache.Lookup] walk a table in one inlined loop, which is
// faster than the code the runtime runs: runtime.pcvalue (Go 1.26.8,
// runtime/symtab.go) calls runtime.step once per table entry, and the
// compiler does not inline step into pcvalue (the go command's symbol table
// has runtime.step), so every entry costs a call that updates pc and val
// through pointers; readvarint is inlined into step. [PCValue] and
// [Cache.PCValue] copy that shape, so that a ratio against them speaks for
// the code the runtime runs today. The differences: the PC quantum is a
// parameter of step instead of the constant sys.PCQuantum (a multiplication
// off the loop's dependency chain), and the cache is this package's model,
// without acquirem and the inUse guard.

// PCValue is runtime.pcvalue without its cache, in the runtime's code shape:
// it returns the value at the absolute PC targetpc of the table at pctab[off:]
// of a function that starts at entry, and the PC at which that value starts.
// Offset 0 means that the function has no such table: the result is -1, 0.
// A table that ends before targetpc gives -1, 0, as the non-strict runtime
// does; ok is false in both cases (where the strict runtime throws).
//
// PCValue trusts its input as the runtime does: a table that runs off the end
// of pctab panics with an index error. Use [Lookup] for untrusted data.
func PCValue(pctab []byte, off uint32, entry, targetpc uintptr, quantum uint32) (val int32, start uintptr, ok bool) {
	if off == 0 {
		return -1, 0, false
	}
	return pcvalueWalk(pctab, off, entry, targetpc, quantum)
}

// pcvalueWalk is the table walk of runtime.pcvalue, after the cache probe;
// ok is false when the table ends before targetpc.
func pcvalueWalk(pctab []byte, off uint32, entry, targetpc uintptr, quantum uint32) (val int32, start uintptr, ok bool) {
	p := pctab[off:]
	pc := entry
	prevpc := pc
	val = -1
	for {
		var ok bool
		p, ok = step(p, &pc, &val, pc == entry, quantum)
		if !ok {
			break
		}
		if targetpc < pc {
			return val, prevpc, true
		}
		prevpc = pc
	}
	return -1, 0, false
}

// step is runtime.step: it advances to the next pc, value pair of the table
// at p, returning the rest of the table and false at its end.
//
//go:noinline
func step(p []byte, pc *uintptr, val *int32, first bool, quantum uint32) (newp []byte, ok bool) {
	// For both uvdelta and pcdelta, the common case (~70%)
	// is that they are a single byte. If so, avoid calling readvarint.
	uvdelta := uint32(p[0])
	if uvdelta == 0 && !first {
		return nil, false
	}
	n := uint32(1)
	if uvdelta&0x80 != 0 {
		n, uvdelta = readvarintRuntime(p)
	}
	*val += int32(-(uvdelta & 1) ^ (uvdelta >> 1))
	p = p[n:]

	pcdelta := uint32(p[0])
	n = 1
	if pcdelta&0x80 != 0 {
		n, pcdelta = readvarintRuntime(p)
	}
	p = p[n:]
	*pc += uintptr(pcdelta * quantum)
	return p, true
}

// readvarintRuntime is runtime.readvarint: it reads a varint from p and
// returns the number of bytes read and the value.
func readvarintRuntime(p []byte) (read uint32, val uint32) {
	var v, shift, n uint32
	for {
		b := p[n]
		n++
		v |= uint32(b&0x7F) << (shift & 31)
		if b&0x80 == 0 {
			break
		}
		shift += 7
	}
	return n, v
}

// PCValue is runtime.pcvalue with this cache, in the runtime's code shape
// (see [PCValue]): the cache is probed for (targetpc, off) and, on a miss,
// the table at pctab[off:] of the function at entry is walked with a
// non-inlined step per entry, and a covered result is inserted as
// [Cache.Lookup] inserts it. It trusts its input as [PCValue] does.
func (c *Cache) PCValue(pctab []byte, off uint32, entry, targetpc uintptr, quantum uint32) (val int32, start uintptr, ok bool) {
	if off == 0 {
		return -1, 0, false
	}
	set := c.set(targetpc)
	for i := range set {
		ent := &set[i]
		if ent.off == off && ent.targetpc == targetpc {
			c.Hits++
			return ent.val, ent.valPC, true
		}
	}
	c.Misses++
	val, start, ok = pcvalueWalk(pctab, off, entry, targetpc, quantum)
	if !ok {
		return val, start, false
	}
	ci := c.randn(CacheWays)
	set[ci] = set[0]
	set[0] = cacheEnt{targetpc: targetpc, off: off, val: val, valPC: start}
	return val, start, true
}
