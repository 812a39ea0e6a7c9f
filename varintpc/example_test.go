package varintpc_test

import (
	"fmt"

	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

func Example() {
	// A PCDATA-style table: -1 for the first 3 units, then 1 for 2 units.
	data := []byte{0x00, 0x03, 0x04, 0x02, 0x00}
	t, n, err := varintpc.Decode(data)
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Runs, t.Len, n)
	fmt.Printf("% x\n", varintpc.Encode(t))
	// Output:
	// [{0 -1} {3 1}] 5 5
	// 00 03 04 02 00
}

func ExampleLookup() {
	data := varintpc.Encode(pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 0}, {PC: 4, Value: 8}}, Len: 10})
	// On arm64 (PC quantum 4) unit 4 is byte offset 16.
	for _, off := range []uintptr{0, 15, 16, 39, 40} {
		v, start, err := varintpc.Lookup(data, off, 4, false)
		fmt.Println(off, v, start, err)
	}
	// Output:
	// 0 0 0 <nil>
	// 15 0 0 <nil>
	// 16 8 16 <nil>
	// 39 8 16 <nil>
	// 40 -1 0 <nil>
}

func ExampleCache() {
	data := varintpc.Encode(pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 0}, {PC: 4, Value: 8}}, Len: 10})
	c := varintpc.NewCache(1)
	const entry, off = 0x401000, 0x1234 // function entry, table offset in pctab
	for range 3 {
		v, start, _ := c.Lookup(off, data, entry, entry+6, 1, true)
		fmt.Printf("%d %#x\n", v, start)
	}
	fmt.Println(c.Hits, c.Misses)
	// Output:
	// 8 0x401004
	// 8 0x401004
	// 8 0x401004
	// 2 1
}
