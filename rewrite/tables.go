package rewrite

import (
	"fmt"
	"sort"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// VariantByName returns the linearpc variant with the given name ("" means
// the spec variant).
func VariantByName(name string) (linearpc.Variant, error) {
	v, err := linearpc.VariantByName(name)
	if err == nil && len(v.Name) > objscan.LinearVariantLen {
		return v, fmt.Errorf("variant name %q is longer than the %d bytes the header holds", name, objscan.LinearVariantLen)
	}
	return v, err
}

// ResolveVariant resolves a -variant name: a linearpc variant, or
// objscan.LinearVarintPCLnName, the pctab toolchain's pctab_varln tables:
// cf-palette-short, with the pcln tables left in Go's varint format
// (pclnVarint).
func ResolveVariant(name string) (v linearpc.Variant, pclnVarint bool, err error) {
	if name == objscan.LinearVarintPCLnName {
		v, err = VariantByName(objscan.LinearVarintPCLnVariant)
		return v, true, err
	}
	v, err = VariantByName(name)
	return v, false, err
}

// tableKey identifies one linear encoding: a varint table, encoded for a
// function of the given length. Functions whose tables all have the same
// length (every function of the corpus's amd64 and arm64 binaries) encode
// each varint table once; a table shorter than its function's longest table
// is extended to that length with the value -1, which is what the runtime's
// non-strict lookup returns past a varint table's end.
type tableKey struct {
	varintOff uint32
	len       uint32
	ext       uint32 // units up to which a shorter table is extended with -1 (len, but for derived lengths)
}

// linearTables is the linear encoding of every PC-value table of a binary.
type linearTables struct {
	variant linearpc.Variant
	derived bool // function lengths derived from the functab (objscan.LinearDerivedMagic)
	// pclnVarint stores the pcln tables in Go's varint format, byte for
	// byte, after the set's encodings (objscan.LinearVarintPCLnName).
	pclnVarint bool
	varintLn   int64 // bytes of the varint pcln tables stored
	set        *linearpc.Set
	funcLen    []uint32   // per function: PC-quantum units its tables cover
	offs       [][]uint32 // per function: pcsp, pcfile, pcln, pcdata... offsets in data; 0 = none
	index      []indexEntry
	data       []byte // a pad byte, the set's encodings, objscan.LinearPad zero bytes

	varintBytes int64 // bytes of the distinct varint tables, terminators included
	padded      int   // encodings of tables extended to their function's length
	emptyRefs   int   // table references of functions that cover no PCs (stored as 0)
}

// indexEntry maps a (varint table, function length) pair to its encoding.
type indexEntry struct {
	key    tableKey
	linear uint32
}

// funcOffsets returns fn's varint table offsets: pcsp, pcfile, pcln, then
// the PCDATA tables by id.
func funcOffsets(fn *objscan.Func) []uint32 {
	return append([]uint32{fn.PCSP, fn.PCFile, fn.PCLn}, fn.PCData...)
}

// buildTables encodes every table of f in variant v, in functab order and,
// within a function, in the order pcsp, pcfile, pcln, PCDATA 0, 1, ... .
// Identical encodings are stored once ([linearpc.Set]), so tables shared in
// the varint pctab stay shared, and so do distinct varint tables whose
// linear encodings coincide.
//
// With derived set, every table of a function covers the units up to the
// next function's entry (objscan.LinearDerivedMagic): extended with -1 to
// the function's longest table, then its last value carried over the
// padding, as the pctab toolchain's linker does.
//
// With pclnVarint set, each distinct pcln table is stored as its varint
// bytes after the set's encodings, in functab order (a table that is also
// another kind's is stored both ways).
func buildTables(f *objscan.File, v linearpc.Variant, derived, pclnVarint bool) (*linearTables, error) {
	if f.Linear != nil && f.Linear.Mode == "replace" {
		return nil, fmt.Errorf("the pclntab is already in the linear format (variant %s)", f.Linear.Variant)
	}
	decoded := make(map[uint32]pcvalue.Table, len(f.Tabs))
	lt := &linearTables{variant: v, derived: derived, pclnVarint: pclnVarint, set: linearpc.NewSet(v)}
	var ln []byte               // the varint pcln tables stored
	lnAt := map[uint32]uint32{} // their varint offset -> offset in ln
	var lnRefs [][2]int         // (function, slot) of references into ln
	for i := range f.Tabs {
		tab := &f.Tabs[i]
		t, n, err := varintpc.Decode(tab.Data)
		if err != nil {
			return nil, fmt.Errorf("decoding the varint table at pctab offset %#x: %w", tab.Offset, err)
		}
		if n != len(tab.Data) || t.Len != tab.Len {
			return nil, fmt.Errorf("varint table at pctab offset %#x: decoded %d bytes covering %d units, objscan found %d bytes covering %d", tab.Offset, n, t.Len, len(tab.Data), tab.Len)
		}
		decoded[tab.Offset] = t
		lt.varintBytes += int64(len(tab.Data))
	}
	q := uint64(f.PCQuantum)
	at := map[tableKey]uint32{}
	lt.funcLen = make([]uint32, len(f.Funcs))
	lt.offs = make([][]uint32, len(f.Funcs))
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if fn.Size%q != 0 || fn.Size/q > 1<<32-1 {
			return nil, fmt.Errorf("function %s: size %d is not a whole number of %d-byte PC units", fn.Name, fn.Size, q)
		}
		n := uint32(fn.Size / q)
		ext := n
		if derived {
			// Whole units up to the next entry, rounded down as the
			// runtime divides; objscan bounds Size by the extent.
			n = uint32(min((fn.End-fn.Entry)/q, 1<<32-1))
		}
		lt.funcLen[i] = n
		varint := funcOffsets(fn)
		offs := make([]uint32, len(varint))
		for j, off := range varint {
			if off == 0 {
				continue
			}
			if n == 0 || ext == 0 {
				// No code is covered (with derived lengths, only the
				// padding after a function whose tables cover nothing):
				// no table, which lookups read as -1, the varint value.
				lt.emptyRefs++
				continue
			}
			if pclnVarint && j == 2 {
				pos, ok := lnAt[off]
				if !ok {
					tab := f.Table(off)
					if tab == nil {
						return nil, fmt.Errorf("function %s: pcln table at pctab offset %#x is not in objscan's table set", fn.Name, off)
					}
					pos = uint32(len(ln))
					lnAt[off] = pos
					ln = append(ln, tab.Data...)
				}
				offs[j] = pos
				lnRefs = append(lnRefs, [2]int{i, j})
				continue
			}
			k := tableKey{off, n, ext}
			lin, ok := at[k]
			if !ok {
				t, ok := decoded[off]
				if !ok {
					return nil, fmt.Errorf("function %s: table %d at pctab offset %#x is not in objscan's table set", fn.Name, j, off)
				}
				if t.Len < ext {
					t = extend(t, ext)
					lt.padded++
				}
				t.Len = n               // the last value runs on to the next entry
				lin = lt.set.Add(t) + 1 // data[0] is a pad byte: offset 0 means "no table"
				at[k] = lin
				lt.index = append(lt.index, indexEntry{k, lin})
			}
			offs[j] = lin
		}
		lt.offs[i] = offs
	}
	sort.Slice(lt.index, func(a, b int) bool {
		x, y := lt.index[a].key, lt.index[b].key
		return x.varintOff < y.varintOff || x.varintOff == y.varintOff && (x.len < y.len || x.len == y.len && x.ext < y.ext)
	})
	// The varint pcln tables follow the set: their offsets become offsets
	// in data.
	base := uint64(1 + lt.set.Size())
	if base+uint64(len(ln)) > 1<<32-1 {
		return nil, fmt.Errorf("linear and varint tables take %d bytes, more than 32-bit offsets can address", base+uint64(len(ln)))
	}
	for _, r := range lnRefs {
		lt.offs[r[0]][r[1]] += uint32(base)
	}
	lt.varintLn = int64(len(ln))
	lt.data = make([]byte, 0, 1+lt.set.Size()+len(ln)+objscan.LinearPad)
	lt.data = append(lt.data, 0)
	lt.data = append(lt.data, lt.set.Bytes()...)
	lt.data = append(lt.data, ln...)
	lt.data = append(lt.data, make([]byte, objscan.LinearPad)...)
	if uint64(len(lt.data)) > 1<<32-1 {
		return nil, fmt.Errorf("linear tables take %d bytes, more than 32-bit offsets can address", len(lt.data))
	}
	return lt, nil
}

// pctabNote describes the new pctab of a replace-mode rewrite, rounded to
// ps bytes.
func (lt *linearTables) pctabNote(ps uint64) string {
	ln := ""
	if lt.pclnVarint {
		ln = fmt.Sprintf(" and %d bytes of varint pcln tables", lt.varintLn)
	}
	return fmt.Sprintf("%d bytes of varint tables -> %d bytes of linear encodings%s, plus a pad byte first, %d after, and rounding to %d", lt.varintBytes, lt.set.Size(), ln, objscan.LinearPad, ps)
}

// name is the variant name the header records.
func (lt *linearTables) name() string {
	if lt.pclnVarint {
		return objscan.LinearVarintPCLnName
	}
	return lt.variant.Name
}

// extend returns t lengthened to n units, the new PCs holding -1.
func extend(t pcvalue.Table, n uint32) pcvalue.Table {
	runs := linearpc.Canonical(t).Runs // no runs at or past t.Len
	if len(runs) == 0 || runs[len(runs)-1].Value != -1 {
		runs = append(runs, pcvalue.Run{PC: t.Len, Value: -1})
	}
	return pcvalue.Table{Runs: runs, Len: n}
}
