// Package verify checks pctab's codecs against the tables of a real binary.
//
// For every distinct PC-value table of every function it checks, at every PC
// of the table in PC-quantum steps, that the decoded runs, the runtime-style
// varint lookup, the spec linear lookup and every linearpc variant give the
// same value; that re-encoding the decoded table reproduces the linker's bytes
// exactly; and that PCs past the table's end (where a function's tables have
// different lengths) are reported as not covered by every encoding.
package verify

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"

	"github.com/pctab/pctab/internal/par"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// Result summarizes a verification run.
type Result struct {
	Tables     int   `json:"tables"`     // distinct tables checked
	PCs        int64 `json:"pcs"`        // (table, PC) pairs checked, variants not counted separately
	Lookups    int64 `json:"lookups"`    // lookups compared, all encodings included
	Mismatches int64 `json:"mismatches"` // disagreements found
	// VarintSampled counts the tables whose varint lookups were checked
	// at run ends only, not at every PC (maxVarintWalk).
	VarintSampled int      `json:"varint_sampled_tables,omitempty"`
	Examples      []string `json:"examples,omitempty"` // the first few mismatches, described
}

// OK reports whether the run found no mismatch.
func (r *Result) OK() bool { return r.Mismatches == 0 }

const maxExamples = 20

// maxVarintWalk bounds the work of one table's varint lookups, in table
// entries walked. A lookup walks the table from its start, the runtime's
// way, so a lookup at every PC costs PCs × runs / 2 steps: hours for the
// pcln table of a generated function of megabytes (3,642,223 PCs and
// 365,436 runs: 6.7e11 steps). A table over the bound is checked by the
// varint lookup at the first and last PC of every k-th run (and of the
// last), k chosen to keep within it, and by every other decoder at every
// PC; past its end, at its first and last uncovered PC.
var maxVarintWalk uint64 = 1 << 30

// File verifies every distinct table of f. workers <= 0 means GOMAXPROCS.
func File(f *objscan.File, workers int) (*Result, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	variants := linearpc.Variants()
	// Pooled variants address tables inside a Set; build one set per variant
	// with every table, as a binary would store them.
	sets := make([]*linearpc.Set, len(variants))
	offs := make([][]uint32, len(variants))
	tabs := make([]pcvalue.Table, len(f.Tabs))
	for i := range f.Tabs {
		t, n, err := varintpc.Decode(f.Tabs[i].Data)
		if err != nil {
			return nil, fmt.Errorf("verify: table at pctab offset %#x: %w", f.Tabs[i].Offset, err)
		}
		if n != len(f.Tabs[i].Data) {
			return nil, fmt.Errorf("verify: table at pctab offset %#x: decoder used %d bytes, objscan found %d", f.Tabs[i].Offset, n, len(f.Tabs[i].Data))
		}
		tabs[i] = t
	}
	for v := range variants {
		sets[v] = linearpc.NewSet(variants[v])
		offs[v] = make([]uint32, len(tabs))
		for i := range tabs {
			offs[v][i] = sets[v].Add(tabs[i])
		}
	}
	// The longest table of each function bounds the PCs checked past a
	// table's end.
	funcLen := make([]uint32, len(f.Tabs))
	for i := range f.Tabs {
		for _, ref := range f.Tabs[i].Refs {
			funcLen[i] = max(funcLen[i], uint32(f.Funcs[ref.Func].Size/uint64(f.PCQuantum)))
		}
	}

	results := make([]Result, workers)
	par.For(len(tabs), workers, func(w, i int) error {
		checkTable(&results[w], f, i, tabs[i], funcLen[i], variants, sets, offs)
		return nil
	})
	total := &Result{Tables: len(tabs)}
	for _, r := range results {
		total.PCs += r.PCs
		total.Lookups += r.Lookups
		total.Mismatches += r.Mismatches
		total.VarintSampled += r.VarintSampled
		for _, e := range r.Examples {
			if len(total.Examples) < maxExamples {
				total.Examples = append(total.Examples, e)
			}
		}
	}
	return total, nil
}

func (r *Result) fail(format string, args ...any) {
	r.Mismatches++
	if len(r.Examples) < maxExamples {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

func checkTable(res *Result, f *objscan.File, i int, t pcvalue.Table, funcLen uint32, variants []linearpc.Variant, sets []*linearpc.Set, offs [][]uint32) {
	tab := &f.Tabs[i]
	name := fmt.Sprintf("table %#x (%s of %s)", tab.Offset, tab.Refs[0].Kind, f.Funcs[tab.Refs[0].Func].Name)
	if enc := varintpc.Encode(t); !bytes.Equal(enc, tab.Data) {
		res.fail("%s: varint re-encoding differs from the linker's bytes:\n\tlinker % x\n\tours   % x", name, tab.Data, enc)
	}
	spec := linearpc.Encode(t)
	if back, err := linearpc.Decode(spec, t.Len); err != nil {
		res.fail("%s: checked decoder rejects our own encoding: %v", name, err)
	} else if !sameValues(back, t) {
		res.fail("%s: checked decoder does not round-trip", name)
	}
	// Standalone encodings of the variants that share nothing between tables.
	standalone := make([][]byte, len(variants))
	for vi, vr := range variants {
		if !vr.Pooled() {
			standalone[vi] = vr.Encode(t)
		}
	}
	q := uint32(f.PCQuantum)
	runs := uint64(len(t.Runs))
	stride := uint64(1) // check the varint lookup at the ends of every stride-th run
	full := uint64(t.Len)*runs/2 <= maxVarintWalk
	fullPast := funcLen <= t.Len || uint64(funcLen-t.Len)*runs <= maxVarintWalk
	if !full {
		stride = (runs*runs/2 + maxVarintWalk - 1) / maxVarintWalk
	}
	if !full || !fullPast {
		res.VarintSampled++
	}
	ri := 0
	for pc := uint32(0); pc < t.Len; pc++ {
		for ri+1 < len(t.Runs) && t.Runs[ri+1].PC <= pc {
			ri++
		}
		want := t.Runs[ri].Value
		res.PCs++
		if full || (uint64(ri)%stride == 0 || ri == len(t.Runs)-1) && (pc == t.Runs[ri].PC || ri+1 == len(t.Runs) && pc == t.Len-1 || ri+1 < len(t.Runs) && pc == t.Runs[ri+1].PC-1) {
			v, _, err := varintpc.Lookup(tab.Data, uintptr(pc*q), q, true)
			res.Lookups++
			if err != nil || v != want {
				res.fail("%s pc %#x: varint lookup %d (%v), runs say %d", name, pc*q, v, err, want)
			}
		}
		if got := linearpc.Lookup(spec, t.Len, pc); got != want {
			res.fail("%s pc %#x: spec linear lookup %d, runs say %d", name, pc*q, got, want)
		}
		res.Lookups++
		for vi, vr := range variants {
			if got, ok := sets[vi].LookupIn(offs[vi][i], t.Len, pc); !ok || got != want {
				res.fail("%s pc %#x: variant %s set lookup %d (covered %v), runs say %d", name, pc*q, vr.Name, got, ok, want)
			}
			res.Lookups++
			if standalone[vi] != nil {
				if got, ok := vr.LookupIn(standalone[vi], t.Len, pc); !ok || got != want {
					res.fail("%s pc %#x: variant %s lookup %d, runs say %d", name, pc*q, vr.Name, got, want)
				}
				res.Lookups++
			}
		}
	}
	// Past the table's end, up to the function's longest table: not covered.
	for pc := t.Len; pc < funcLen; pc++ {
		if fullPast || pc == t.Len || pc == funcLen-1 {
			v, _, err := varintpc.Lookup(tab.Data, uintptr(pc*q), q, true)
			if !errors.Is(err, varintpc.ErrNotCovered) {
				res.fail("%s pc %#x past the table's end: varint strict lookup gave %d, %v; want not covered", name, pc*q, v, err)
			}
			if v, _, _ := varintpc.Lookup(tab.Data, uintptr(pc*q), q, false); v != -1 {
				res.fail("%s pc %#x past the table's end: varint non-strict lookup gave %d, want -1", name, pc*q, v)
			}
			res.Lookups += 2
		}
		if _, err := linearpc.LookupChecked(spec, t.Len, pc); !errors.Is(err, linearpc.ErrRange) {
			res.fail("%s pc %#x past the table's end: checked linear lookup gave %v, want ErrRange", name, pc*q, err)
		}
		res.Lookups++
		for vi, vr := range variants {
			if v, ok := sets[vi].LookupIn(offs[vi][i], t.Len, pc); ok {
				res.fail("%s pc %#x past the table's end: variant %s set lookup gave %d, want not covered", name, pc*q, vr.Name, v)
			}
			res.Lookups++
			if standalone[vi] != nil {
				if v, ok := vr.LookupIn(standalone[vi], t.Len, pc); ok {
					res.fail("%s pc %#x past the table's end: variant %s lookup gave %d, want not covered", name, pc*q, vr.Name, v)
				}
				res.Lookups++
			}
		}
	}
}

// sameValues reports whether a and b give the same value at every PC.
func sameValues(a, b pcvalue.Table) bool {
	if a.Len != b.Len {
		return false
	}
	for pc := uint32(0); pc < a.Len; pc++ {
		va, _ := a.Lookup(pc)
		vb, _ := b.Lookup(pc)
		if va != vb {
			return false
		}
	}
	return true
}
