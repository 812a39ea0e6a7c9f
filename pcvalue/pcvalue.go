// Package pcvalue defines the decoded form of a Go PC-value table, shared by
// every encoding in pctab (varintpc, linearpc and their variants).
//
// A PC-value table maps each PC of a function to an int32. Decoded, it is a
// list of runs: each run starts at a PC offset from the function entry and
// holds its value up to the start of the next run, or up to the end of the
// table. PC offsets in this package are in PC-quantum units (the byte offset
// divided by the architecture's minimum instruction size), exactly as the
// varint encoding stores PC deltas, so that tables are independent of the
// architecture they came from.
package pcvalue

import "fmt"

// Run is a maximal range of PCs that share one value.
type Run struct {
	PC    uint32 // first PC of the run, in PC-quantum units from the function entry
	Value int32  // value at every PC of the run
}

// Table is a decoded PC-value table.
type Table struct {
	// Runs lists the runs in non-decreasing PC order. Runs[0].PC is 0 when
	// the table is not empty. A run may be empty (the next run starts at the
	// same PC): real tables never have one, but the varint format can express
	// it, and keeping it lets an encoder reproduce its input byte for byte.
	Runs []Run
	// Len is the number of PC-quantum units the table covers: the value of
	// the table is defined for 0 <= pc < Len.
	Len uint32
}

// Lookup returns the value at pc (in PC-quantum units) and whether pc is
// covered by the table. It is the reference semantics every encoding must
// match: ranges are half-open, and a PC at or beyond Len is not covered.
func (t *Table) Lookup(pc uint32) (int32, bool) {
	if pc >= t.Len || len(t.Runs) == 0 {
		return -1, false
	}
	// Binary search for the last run with Runs[i].PC <= pc.
	lo, hi := 0, len(t.Runs)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if t.Runs[m].PC <= pc {
			lo = m
		} else {
			hi = m
		}
	}
	return t.Runs[lo].Value, true
}

// Validate reports whether the table is well formed: runs start at PC 0,
// are in non-decreasing PC order, and start within Len.
func (t *Table) Validate() error {
	for i, r := range t.Runs {
		if i == 0 && r.PC != 0 {
			return fmt.Errorf("pcvalue: first run starts at pc %d, not 0", r.PC)
		}
		if i > 0 && r.PC < t.Runs[i-1].PC {
			return fmt.Errorf("pcvalue: run %d starts at pc %d, before pc %d", i, r.PC, t.Runs[i-1].PC)
		}
		if r.PC > t.Len {
			return fmt.Errorf("pcvalue: run %d starts at pc %d, past the table length %d", i, r.PC, t.Len)
		}
	}
	return nil
}
