package toolchain

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
	"github.com/pctab/pctab/verify"
)

const maxExamples = 20

// Check compares a binary built with the patched toolchain (linear tables)
// to its twin (the same program built by the twin GOROOT: the same code at
// the same addresses, varint tables). Both must have the same functions at
// the same entry PCs. For every table of every function, the stored linear
// bytes must be exactly linearpc's encoding, in the binary's variant, of the
// twin's table as the linker extends it: with -1 up to the function's
// longest table, then (derived lengths) its last value carried on to the
// next function's entry. A lookup at every PC the tables cover must give
// the twin's value, or that carried value past the twin's tables.
//
// With l.PCLnVarint (build tag pctab_varln), the pcln tables must be the
// twin's varint tables, byte for byte.
//
// Unlike rewrite.Check it does not require the whole pctab to be laid out
// as rewrite-binary would: the linker stores each distinct encoding once,
// in its own order.
func Check(lin, twin *objscan.File) (*verify.Result, error) {
	l := lin.Linear
	if l == nil || l.Mode != "replace" {
		return nil, errors.New("toolchain.Check: the patched binary has no linear pclntab")
	}
	if twin.Linear != nil {
		return nil, errors.New("toolchain.Check: the twin is itself in the linear format")
	}
	if len(lin.Funcs) != len(twin.Funcs) || len(l.Funcs) != len(twin.Funcs) {
		return nil, fmt.Errorf("toolchain.Check: %d functions (%d with linear tables), the twin has %d", len(lin.Funcs), len(l.Funcs), len(twin.Funcs))
	}
	if lin.PCQuantum != twin.PCQuantum || lin.PCQuantum == 0 {
		return nil, fmt.Errorf("toolchain.Check: PC quantum %d, the twin's is %d", lin.PCQuantum, twin.PCQuantum)
	}
	v, err := linearpc.VariantByName(l.Variant)
	if err != nil {
		return nil, fmt.Errorf("toolchain.Check: %w", err)
	}
	res := &verify.Result{}
	fail := func(format string, args ...any) {
		res.Mismatches++
		if len(res.Examples) < maxExamples {
			res.Examples = append(res.Examples, fmt.Sprintf(format, args...))
		}
	}
	type key struct{ varint, twinLen, n, linear uint32 }
	seen := map[key]bool{}
	decoded := map[uint32]pcvalue.Table{}
	q := uint64(lin.PCQuantum)
	for i := range twin.Funcs {
		ft, fl, lf := &twin.Funcs[i], &lin.Funcs[i], &l.Funcs[i]
		if ft.Name != fl.Name || ft.Entry != fl.Entry {
			fail("function %d: %s at %#x, the twin has %s at %#x", i, fl.Name, fl.Entry, ft.Name, ft.Entry)
			continue
		}
		if uint64(lf.Len)*q != ft.Size && !(l.Derived && uint64(lf.Len)*q >= ft.Size) {
			fail("function %s: length %d units, the twin's tables cover %d bytes", fl.Name, lf.Len, ft.Size)
			continue
		}
		twinLen := uint32(ft.Size / q)
		vos := append([]uint32{ft.PCSP, ft.PCFile, ft.PCLn}, ft.PCData...)
		los := lf.Offsets()
		for j := range max(len(vos), len(los)) {
			var vo, off uint32
			if j < len(vos) {
				vo = vos[j]
			}
			if j < len(los) {
				off = los[j]
			}
			if vo == 0 || lf.Len == 0 {
				if off != 0 {
					fail("function %s: table %d at linear offset %#x, the twin has none", fl.Name, j, off)
				}
				continue
			}
			k := key{vo, twinLen, lf.Len, off}
			if seen[k] {
				continue
			}
			seen[k] = true
			res.Tables++
			if j == 2 && l.PCLnVarint {
				checkVarintPCLn(res, fail, twin, l, fl.Name, vo, off, int64(lf.Len))
				continue
			}
			t, ok := decoded[vo]
			if !ok {
				tab := twin.Table(vo)
				if tab == nil {
					return nil, fmt.Errorf("toolchain.Check: function %s: table %d at twin pctab offset %#x is not in objscan's table set", ft.Name, j, vo)
				}
				var err error
				if t, _, err = varintpc.Decode(tab.Data); err != nil {
					return nil, fmt.Errorf("toolchain.Check: twin table at pctab offset %#x: %w", vo, err)
				}
				decoded[vo] = t
			}
			t = Extend(t, twinLen)
			t.Len = lf.Len // the last value runs on over the padding
			enc := v.Encode(t)
			if uint64(off)+uint64(len(enc)) > uint64(len(l.Data)) || !bytes.Equal(l.Data[off:int(off)+len(enc)], enc) {
				fail("function %s: table %d at linear offset %#x is not linearpc's %d-byte %s encoding of the twin's table at %#x", fl.Name, j, off, len(enc), v.Name, vo)
				continue
			}
			// The bytes are linearpc's own encoding, so its lookup trusts
			// them; it checks the decoder against the twin's table.
			for pc := range lf.Len {
				want, _ := t.Lookup(pc)
				got := v.Lookup(l.Data[off:], lf.Len, pc)
				res.PCs++
				res.Lookups++
				if got != want {
					fail("function %s: table %d at PC +%#x: linear %d, twin %d", fl.Name, j, uint64(pc)*q, got, want)
					break
				}
			}
		}
	}
	return res, nil
}

// checkVarintPCLn checks that the varint pcln table at off in l is the
// twin's table at vo, byte for byte, and counts the n PC units of the
// function as checked (the same bytes answer every lookup as the twin's
// do); it makes no lookups, so it counts none.
func checkVarintPCLn(res *verify.Result, fail func(string, ...any), twin *objscan.File, l *objscan.Linear, name string, vo, off uint32, n int64) {
	tab := twin.Table(vo)
	if tab == nil {
		fail("function %s: pcln at twin pctab offset %#x is not in objscan's table set", name, vo)
		return
	}
	if uint64(off)+uint64(len(tab.Data)) > uint64(len(l.Data)) || !bytes.Equal(l.Data[off:int(off)+len(tab.Data)], tab.Data) {
		fail("function %s: pcln at offset %#x is not the twin's %d-byte varint table at %#x", name, off, len(tab.Data), vo)
		return
	}
	res.PCs += n
}

// Extend returns t covering n units, the units past t.Len holding -1 (what
// Go's varint decoder returns there). The patched linker stores every table
// of a function at the length of its longest.
func Extend(t pcvalue.Table, n uint32) pcvalue.Table {
	if t.Len >= n {
		return t
	}
	runs := linearpc.Canonical(t).Runs
	if len(runs) == 0 || runs[len(runs)-1].Value != -1 {
		runs = append(runs, pcvalue.Run{PC: t.Len, Value: -1})
	}
	return pcvalue.Table{Runs: runs, Len: n}
}
