package lookupbench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// PairsMagic starts a file written by [Bench.WritePairs].
const PairsMagic = "pctab-pairs/1\n"

// WritePairs writes the spec-encoded tables and n (table, PC) pairs drawn
// under rule p (the pairs Run times for a set of that size) to w, so that a
// decoder outside this module can be timed on exactly the same bytes and
// pairs. The format, all integers little-endian uint32 unless noted:
//
//	magic    "pctab-pairs/1\n"
//	size     byte length of the encodings
//	data     [size]byte: the linearpc.Set of every distinct table of the
//	         binary in the spec encoding (linearpc.Set.Bytes, no padding)
//	n        number of pairs
//	pairs    [n] of { off, text_len, pc, want int32 }: the table's offset in
//	         data, its length and the PC looked up (both in PC-quantum
//	         units), and the value the decoded table holds there
//
// The pairs are in sampling order, the order of the "hot" (or "cold") set.
func (b *Bench) WritePairs(w io.Writer, p PCs, n int) error {
	if n <= 0 || n&(n-1) != 0 {
		return fmt.Errorf("lookupbench: %d pairs: want a power of two", n)
	}
	samples, err := b.Sample(p, n, b.opt.Seed^uint64(n))
	if err != nil {
		return err
	}
	ref, _, err := b.reference(samples)
	if err != nil {
		return err
	}
	v := -1
	for i := range b.variants {
		if b.variants[i].IsSpec() {
			v = i
		}
	}
	if v < 0 {
		return fmt.Errorf("lookupbench: no spec variant")
	}
	data := b.sets[v].Bytes()
	bw := bufio.NewWriter(w)
	bw.WriteString(PairsMagic)
	u32 := func(x uint32) { bw.Write(binary.LittleEndian.AppendUint32(nil, x)) }
	u32(uint32(len(data)))
	bw.Write(data)
	u32(uint32(n))
	for i, s := range samples {
		u32(b.offs[v][s.Tab])
		u32(b.f.Tabs[s.Tab].Len)
		u32(s.PC / b.q)
		u32(uint32(ref[i]))
	}
	return bw.Flush()
}
