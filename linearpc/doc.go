// Package linearpc implements the "linear index" PC-value table format
// proposed in golang/go#61984, exactly as specified, plus experimental
// variants of it.
//
// All PCs and lengths are in PC-quantum units. A table does not record its
// length: the caller passes it (textLen) to every lookup and decoder.
//
// # The spec format
//
// A table of length L is cut into ceil(L/256) chunks of 256 units. The
// encoding is a chunk index followed by the chunks.
//
// The index holds, for chunks 1..n-1, the offset of the chunk's encoding
// relative to the end of the index (chunk 0 is at offset 0 and is not
// listed; a one-chunk table has an empty index). It is a list of bytes if
// every offset is at most 0xff and the first is below 0xfe; otherwise the
// byte 0xfe followed by little-endian uint16s if every offset is at most
// 0xffff; otherwise 0xff followed by little-endian uint32s.
//
// A chunk is
//
//	n    uint8          number of value changes inside the chunk
//	pcs  [n]byte        pc&0xff of each change, ascending; a change at the
//	                    chunk's first PC is not listed
//	vlen [n+1]uint2     width codes, LSB first, padded with 0 bits to a
//	                    byte: 01 = 1 byte, 10 = 2, 11 = 4
//	vals [n+1]          little-endian int8/int16/int32: vals[0] is the
//	                    value at the chunk's first PC, vals[i] the value
//	                    after pcs[i-1] minus vals[0] (int32 arithmetic)
//
// Each value uses the smallest width that holds it. A chunk without
// changes whose start value equals that of an earlier such chunk of the
// same table is not stored again: its index entry repeats the earlier
// offset. [Encode] writes this format; its sizes reproduce the reference
// implementation's byte for byte (TestRealSizes pins them on a real
// binary).
//
// # Lookups
//
// [Lookup] and [Set.Lookup] are the hot paths for trusted encodings. In the
// common case they read a window of [SetPad] bytes from the table start
// without data-dependent branches: the index entry of the chunk is loaded and
// masked to zero for chunk 0 (so one-chunk tables need no test), the first
// eight listed PCs are compared with the target at once (SWAR), and the
// value's offset and width come from a table of value byte lengths, so a
// target before the first change needs no early return. Tables with a 2- or
// 4-byte index, and chunks whose first eight PCs all lie at or below the
// target, take branchy paths. [Set] keeps SetPad bytes of padding after its
// last table so every window is in bounds; [Lookup] takes the fast path only
// when its slice is that long, and otherwise a bounded version: neither reads
// outside its slice. [Decode] and [LookupChecked] are checked versions for
// untrusted input.
//
// # Which lookup is fastest
//
// Two spec lookups read the same bytes: [Set.Lookup] (lookupFast, mostly
// branch-free) and [Set.LookupBranchy] (branchy.go, which turns data into
// predicted branches: see that file). Each has a leaf twin for speed,
// [Set.TryLookup] and [Set.TryLookupBranchy] (try.go: no calls, so no stack
// frame), which the caller pairs with the general lookup for what it
// leaves.
//
// Which to use, per pattern:
//
//   - the branchy lookup where the same lookups repeat in the same order (a
//     branch predictor learns them: the golang/go#61984 benchmark's
//     pattern, a loop over a fixed set of PCs), and at PC 0 and PC 4096 in
//     any order (few PCs to count).
//   - the branch-free lookup (or compact-fast's) for random PCs and return
//     addresses in a changing order or over the whole table set, which is
//     what tracebacks, profilers and tracers see. There the branchy lookup
//     mispredicts, while the branch-free one's cost hardly depends on the
//     pattern.
//
// The repository's docs/lookup-speed.md has the timings behind this advice
// (pctab-stats -bench on real binaries).
//
// # Porting to the runtime
//
// Set.LookupBranchy and lookupPlain (branchy.go), with the vlenSum, partLen
// and sxShift tables, are self-contained and are the code to port for the
// runtime's learned paths; lookupFast (fast.go) for the general one. The
// leaf twins (try.go) show the shape that pays in Go: the common path with
// no call in it, and the rare paths in a separate function. The
// branchy lookup's window is only a bounds-check device: its loads stay
// inside the chunk except the 4-byte value loads, which may read 3 bytes
// past it, so with unchecked loads the runtime needs 3 bytes of padding
// after its last table; lookupFast reads through a 1 KiB window and needs
// that much.
//
// # Variants
//
// [Variants] lists the spec and the experimental formats. Each is exact:
// it answers every lookup like the spec encoding (the tests check this on
// generated tables and at every PC of the local go command). pctab-stats
// reports each variant's size on any binary.
//
// spec-128 and spec-512 keep the spec's chunk layout with other chunk
// sizes. In spec-512 the count is a uint16 followed by a byte counting the
// PCs in the first 256 units, and each PC is stored as its low byte; the
// lookup counts within the half that holds the target.
//
// spec-pool stores, within a [Set], each distinct chunk encoding once:
// the index entries of a table may point to a chunk of any earlier table,
// as a signed offset from the end of the index (so its 2- and 4-byte index
// forms are signed, and chunk 0 is always the table's own). The encoder
// tries storing every chunk, referring to every pooled duplicate, and
// referring only to duplicates within reach of a 2-byte index, and keeps
// the shortest. Outside constant chunks, chunks rarely repeat across
// tables, and far references widen the index.
//
// compact changes the chunk layout to remove the spec's per-chunk
// overheads (the vlen array, the count byte, wide start values):
//
//	h      uint8    header, decoded by a 256-entry table into the number of
//	                changes (1..14 inline), the start value's width code
//	                (0, 1, 2, 4 bytes) and the delta mode
//	[n]    uint8    the count, for escaped headers (more than 14 changes,
//	                or mixed mode)
//	start  0-4 B    start value minus a reference: -1 for chunk 0, chunk
//	                0's start value for the others (width 0: equal)
//	pcs    [n]byte  as in the spec
//	[vlen]          mixed mode only: n 2-bit codes, as in the spec
//	deltas          value after each change minus the start value: all in
//	                signed nibbles (two per byte, low first), all in 1, 2
//	                or 4 bytes, or (mixed) each in its own width
//
// The encoder picks the smaller of the uniform and mixed forms per chunk.
// The index is the spec's, and so is constant-chunk sharing except that
// chunk 0 (whose start value has a different reference) is not shared.
// Uniform widths make the value's offset a multiplication, so a lookup
// does no code summing; a lookup in chunk 1 or later also reads chunk 0's
// header and start value.
//
// compact-fast trades some of compact's size for a lookup like the spec's
// ([Set.Lookup] reads one chunk through the same fixed window, with the
// same masked index entry and SWAR PC count, and adds one data-dependent
// branch, for escaped counts):
//
//	h      uint8    n<<4 | w0<<2 | mode: n = 0..14 changes, 15 if escaped;
//	                w0 the start value's width code (0, 1, 2, 4 bytes);
//	                mode the width of every delta (nibble, 1, 2, 4 bytes)
//	pcs    [n]byte  as in the spec; an escaped count (n > 14) is a byte
//	                between pcs[7] and pcs[8]
//	start  0-4 B    start value + 1 (width 0: the start value is -1)
//	deltas          value after each change minus the start value, all in
//	                the width of mode (nibbles two per byte, low first)
//
// Values are stored with the sign bit of their width flipped (excess-K),
// so a lookup decodes one with a mask and a subtraction taken from tables
// indexed by the width. Start values are absolute, so a lookup reads no
// other chunk, and every constant chunk (chunk 0 too) is shared as in the
// spec. The first 8 PCs are at a fixed offset from the header, so they load
// in parallel with it; delta i-1 is at bit (i-1)*4<<mode of the deltas,
// and is masked to 0 when the target precedes the first change. There is
// no mixed-width form: a chunk with one wide delta stores all its deltas
// wide. Relative start values would make a lookup read chunk 0's start
// value too.
//
// cf-palette keeps compact-fast's layout and lookup, but gives delta mode 3
// (4-byte deltas in compact-fast) to a palette: the chunk's distinct deltas
// are stored once, and each change holds a 1-, 2-, 4- or 8-bit index into
// them:
//
//	mode 3: desc   uint8    pw | ib<<2: the palette's width (nibbles, 1,
//	                        2 or 4 bytes) and the index width, 1<<ib bits
//	        idx    [n]      each change's palette index, LSB first, padded
//	                        to a byte
//	        pal    [k]      the distinct deltas, in order of first use
//
// The encoder picks the smaller of the uniform and the palette form per
// chunk. A lookup in a palette chunk loads the index before the value and
// takes one data-dependent branch ([Set.TryLookupPalette] is its leaf
// lookup).
//
// cf-palette-short adds a whole-table form for tables of two or more chunks
// with at most 7 changes after PC 0 and at most 32,768 units: the byte 0xfd
// (which no 1-byte index of these variants starts with), a compact-fast
// header, the changes' PCs as uint16s, the start value and the deltas. A
// lookup compares the target with 4 PCs per 64-bit word.
//
// cfps-offset is cf-palette-short with one more palette form, the offset
// palette (bit 4 of desc set): the chunk's deltas, sorted, fall into
// clusters that each span at most 255; the palette holds each cluster's
// lowest delta, ascending, and each change its cluster's index and, after
// all the indexes, a byte to add to the entry:
//
//	mode 3: desc   uint8    pw | ib<<2 | 0x10
//	        idx    [n]      each change's cluster, 1<<ib bits, LSB first,
//	                        padded to a byte
//	        off    [n]byte  each change's delta minus its cluster's entry
//	        pal    [k]      the clusters' lowest deltas
//
// Inlined code makes a pcln table's values jump between the caller's lines
// and each callee's: a few clusters of nearby lines, which compact-fast
// stores in 2 bytes per change and an offset palette in about 1. The
// encoder keeps the smallest of the uniform, palette and offset palette
// forms (in that order on ties); a lookup in an offset palette adds one
// byte load to the palette's path. A palette or a short table must also
// save enough to pay for the branch a lookup takes to its code, which
// mispredicts where such lookups are few: 6 bytes for each lookup it
// takes off the uniform chunks' path, each table looked up alike and its
// PCs uniformly (palette.go, "The rare forms").
package linearpc

// ChunkUnits is the number of PC-quantum units one chunk of the spec
// format covers.
const ChunkUnits = 256
