package allocs_test

import (
	"fmt"

	"github.com/pctab/pctab/internal/allocs"
)

var buf []byte

func ExampleBytes() {
	n := allocs.Bytes(func() { buf = make([]byte, 4<<20) })
	fmt.Println(n >= 4<<20)
	// Output: true
}

func ExampleLeast() {
	decode := func() { buf = make([]byte, 1<<20) }
	n := allocs.Least(3, decode)
	fmt.Println(n >= 1<<20 && n < 2<<20)
	// Output: true
}
