package linearpc_test

import (
	"fmt"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/pcvalue"
)

func Example() {
	// Value 5 for PCs 0-2, 7 for 3-9, 300 for 10-19.
	t := pcvalue.Table{Len: 20, Runs: []pcvalue.Run{{PC: 0, Value: 5}, {PC: 3, Value: 7}, {PC: 10, Value: 300}}}
	data := linearpc.Encode(t)
	fmt.Printf("% x\n", data)
	for _, pc := range []uint32{0, 3, 9, 10, 19} {
		fmt.Println(pc, linearpc.Lookup(data, t.Len, pc))
	}
	dec, err := linearpc.Decode(data, t.Len)
	fmt.Println(dec.Runs, err)
	// Output:
	// 02 03 0a 25 05 02 27 01
	// 0 5
	// 3 7
	// 9 7
	// 10 300
	// 19 300
	// [{0 5} {3 7} {10 300}] <nil>
}

func ExampleSet() {
	s := linearpc.NewSet(linearpc.Spec())
	a := pcvalue.Table{Len: 600, Runs: []pcvalue.Run{{PC: 0, Value: -1}, {PC: 280, Value: 2}}}
	b := pcvalue.Table{Len: 40, Runs: []pcvalue.Run{{PC: 0, Value: 0}}}
	offA, offB := s.Add(a), s.Add(b)
	fmt.Println(offA, offB, s.Size(), s.Add(b) == offB)
	fmt.Println(s.Lookup(offA, a.Len, 279), s.Lookup(offA, a.Len, 280), s.Lookup(offB, b.Len, 39))
	// Output:
	// 0 13 16 true
	// -1 2 0
}

// The leaf lookup with its fallback, on a set read back from its bytes.
func ExampleSet_TryLookup() {
	s := linearpc.NewSet(linearpc.Spec())
	a := pcvalue.Table{Len: 600, Runs: []pcvalue.Run{{PC: 0, Value: -1}, {PC: 280, Value: 2}}}
	off := s.Add(a)
	r := linearpc.NewSetOf(linearpc.Spec(), s.Bytes())
	for _, pc := range []uint32{279, 280} {
		v, ok := r.TryLookup(off, a.Len, pc)
		if !ok {
			v = r.Lookup(off, a.Len, pc)
		}
		fmt.Println(pc, v, ok)
	}
	// Output:
	// 279 -1 true
	// 280 2 true
}

func ExampleVariants() {
	t := pcvalue.Table{Len: 1000, Runs: []pcvalue.Run{{PC: 0, Value: 100}, {PC: 5, Value: 101}, {PC: 700, Value: 99}}}
	for _, v := range linearpc.Variants() {
		enc := v.Encode(t)
		fmt.Println(v.Name, len(enc), v.Lookup(enc, t.Len, 4), v.Lookup(enc, t.Len, 699), v.Lookup(enc, t.Len, 999))
	}
	// Output:
	// spec 19 100 101 99
	// spec-128 23 100 101 99
	// spec-512 15 100 101 99
	// spec-pool 19 100 101 99
	// compact 15 100 101 99
	// compact-fast 15 100 101 99
	// cf-palette 15 100 101 99
	// cf-palette-short 8 100 101 99
	// cfps-offset 8 100 101 99
}

func ExampleLookupChecked() {
	_, err := linearpc.LookupChecked([]byte{0x01, 0x03}, 10, 5)
	fmt.Println(err)
	// Output:
	// linearpc: malformed table: chunk 0 at offset 0: vlen at offset 2 runs past the data (len 2)
}
