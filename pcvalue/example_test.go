package pcvalue_test

import (
	"fmt"

	"github.com/pctab/pctab/pcvalue"
)

// A pcsp table of a 24-unit function: the frame is 0 bytes at the entry,
// 8 after the 4-unit prologue, and 0 again from the return at unit 20.
// Past the end, Lookup gives -1, as the runtime's pcvalue does.
func ExampleTable_Lookup() {
	t := pcvalue.Table{
		Runs: []pcvalue.Run{{PC: 0, Value: 0}, {PC: 4, Value: 8}, {PC: 20, Value: 0}},
		Len:  24,
	}
	if err := t.Validate(); err != nil {
		panic(err)
	}
	for _, pc := range []uint32{0, 3, 4, 19, 20, 23, 24} {
		v, ok := t.Lookup(pc)
		fmt.Println(pc, v, ok)
	}
	// Output:
	// 0 0 true
	// 3 0 true
	// 4 8 true
	// 19 8 true
	// 20 0 true
	// 23 0 true
	// 24 -1 false
}

// Validate rejects a table whose runs are out of order.
func ExampleTable_Validate() {
	t := pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 1}, {PC: 8, Value: 2}, {PC: 4, Value: 3}}, Len: 16}
	fmt.Println(t.Validate() != nil)
	// Output: true
}
