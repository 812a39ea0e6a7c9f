package objscan_test

import (
	"fmt"
	"log"
	"os"

	"github.com/pctab/pctab/objscan"
)

// This example opens the running test binary itself and looks at the tables
// of runtime.main.
func Example() {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	f, err := objscan.Open(exe)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if fn.Name != "runtime.main" {
			continue
		}
		pcsp := f.Table(fn.PCSP)
		fmt.Println("found", fn.Name)
		fmt.Println("pcsp covers the function:", uint64(pcsp.Len)*uint64(f.PCQuantum) == fn.Size)
		fmt.Println("pcsp table referenced:", len(pcsp.Refs) > 0)
	}
	// Output:
	// found runtime.main
	// pcsp covers the function: true
	// pcsp table referenced: true
}
