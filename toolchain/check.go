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
	v, err := checkPair(lin, twin)
	if err != nil {
		return nil, err
	}
	c := &checker{
		twin: twin, l: lin.Linear, v: v, q: uint64(lin.PCQuantum),
		res:     &verify.Result{},
		seen:    map[tableKey]bool{},
		decoded: map[uint32]pcvalue.Table{},
	}
	for i := range twin.Funcs {
		ft, fl, lf := &twin.Funcs[i], &lin.Funcs[i], &c.l.Funcs[i]
		if ft.Name != fl.Name || ft.Entry != fl.Entry {
			c.fail("function %d: %s at %#x, the twin has %s at %#x", i, fl.Name, fl.Entry, ft.Name, ft.Entry)
			continue
		}
		if uint64(lf.Len)*c.q != ft.Size && !(c.l.Derived && uint64(lf.Len)*c.q >= ft.Size) {
			c.fail("function %s: length %d units, the twin's tables cover %d bytes", fl.Name, lf.Len, ft.Size)
			continue
		}
		if err := c.checkFunc(ft, lf); err != nil {
			return nil, err
		}
	}
	return c.res, nil
}

// checkPair checks that lin and twin can be compared, and returns lin's
// variant.
func checkPair(lin, twin *objscan.File) (linearpc.Variant, error) {
	l := lin.Linear
	if l == nil || l.Mode != "replace" {
		return linearpc.Variant{}, errors.New("toolchain.Check: the patched binary has no linear pclntab")
	}
	if twin.Linear != nil {
		return linearpc.Variant{}, errors.New("toolchain.Check: the twin is itself in the linear format")
	}
	if len(lin.Funcs) != len(twin.Funcs) || len(l.Funcs) != len(twin.Funcs) {
		return linearpc.Variant{}, fmt.Errorf("toolchain.Check: %d functions (%d with linear tables), the twin has %d", len(lin.Funcs), len(l.Funcs), len(twin.Funcs))
	}
	if lin.PCQuantum != twin.PCQuantum || lin.PCQuantum == 0 {
		return linearpc.Variant{}, fmt.Errorf("toolchain.Check: PC quantum %d, the twin's is %d", lin.PCQuantum, twin.PCQuantum)
	}
	v, err := linearpc.VariantByName(l.Variant)
	if err != nil {
		return linearpc.Variant{}, fmt.Errorf("toolchain.Check: %w", err)
	}
	return v, nil
}

// tableKey identifies one check of a table: the twin's varint table, at
// the twin's length, against a linear encoding of a length at an offset.
type tableKey struct{ varint, twinLen, n, linear uint32 }

// checker holds what Check has found and decoded so far.
type checker struct {
	twin    *objscan.File
	l       *objscan.Linear
	v       linearpc.Variant
	q       uint64 // the PC quantum
	res     *verify.Result
	seen    map[tableKey]bool
	decoded map[uint32]pcvalue.Table // the twin's tables by pctab offset
}

// fail counts a mismatch and keeps the first maxExamples of them.
func (c *checker) fail(format string, args ...any) {
	c.res.Mismatches++
	if len(c.res.Examples) < maxExamples {
		c.res.Examples = append(c.res.Examples, fmt.Sprintf(format, args...))
	}
}

// checkFunc checks every table of one function, ft in the twin and lf in
// the patched binary, each distinct (table, length, offset) once.
func (c *checker) checkFunc(ft *objscan.Func, lf *objscan.LinearFunc) error {
	twinLen := uint32(ft.Size / c.q)
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
				c.fail("function %s: table %d at linear offset %#x, the twin has none", ft.Name, j, off)
			}
			continue
		}
		k := tableKey{vo, twinLen, lf.Len, off}
		if c.seen[k] {
			continue
		}
		c.seen[k] = true
		c.res.Tables++
		if j == 2 && c.l.PCLnVarint {
			checkVarintPCLn(c.res, c.fail, c.twin, c.l, ft.Name, vo, off, int64(lf.Len))
			continue
		}
		t, err := c.twinTable(ft.Name, j, vo)
		if err != nil {
			return err
		}
		c.checkTable(ft.Name, j, Extend(t, twinLen), vo, off, lf.Len)
	}
	return nil
}

// twinTable returns the twin's table at pctab offset vo, decoded once.
func (c *checker) twinTable(name string, j int, vo uint32) (pcvalue.Table, error) {
	if t, ok := c.decoded[vo]; ok {
		return t, nil
	}
	tab := c.twin.Table(vo)
	if tab == nil {
		return pcvalue.Table{}, fmt.Errorf("toolchain.Check: function %s: table %d at twin pctab offset %#x is not in objscan's table set", name, j, vo)
	}
	t, _, err := varintpc.Decode(tab.Data)
	if err != nil {
		return pcvalue.Table{}, fmt.Errorf("toolchain.Check: twin table at pctab offset %#x: %w", vo, err)
	}
	c.decoded[vo] = t
	return t, nil
}

// checkTable checks that the linear bytes at off are the variant's
// encoding of t (the twin's table at vo, extended) over n units, and that
// a lookup at every PC gives t's value.
func (c *checker) checkTable(name string, j int, t pcvalue.Table, vo, off, n uint32) {
	t.Len = n // the last value runs on over the padding
	enc := c.v.Encode(t)
	data := c.l.Data
	if uint64(off)+uint64(len(enc)) > uint64(len(data)) || !bytes.Equal(data[off:int(off)+len(enc)], enc) {
		c.fail("function %s: table %d at linear offset %#x is not linearpc's %d-byte %s encoding of the twin's table at %#x", name, j, off, len(enc), c.v.Name, vo)
		return
	}
	// The bytes are linearpc's own encoding, so its lookup trusts them;
	// it checks the decoder against the twin's table.
	for pc := range n {
		want, _ := t.Lookup(pc)
		got := c.v.Lookup(data[off:], n, pc)
		c.res.PCs++
		c.res.Lookups++
		if got != want {
			c.fail("function %s: table %d at PC +%#x: linear %d, twin %d", name, j, uint64(pc)*c.q, got, want)
			return
		}
	}
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
