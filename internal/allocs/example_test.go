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
