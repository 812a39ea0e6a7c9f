package verify_test

import (
	"fmt"
	"os"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/verify"
)

// Verify every table of this test binary: every codec at every PC against
// the runtime-style varint lookup.
func ExampleFile() {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	f, err := objscan.Open(exe)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r, err := verify.File(f, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.OK(), r.Mismatches, r.Tables > 1000)
	// Output: true 0 true
}
