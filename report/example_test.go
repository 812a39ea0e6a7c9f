package report_test

import (
	"fmt"
	"log"
	"os"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
)

// This example computes the size report of the running test binary and
// checks two of its invariants.
func ExampleCompute() {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	f, err := objscan.Open(exe)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r, err := report.Compute(f, report.Options{Variants: true})
	if err != nil {
		log.Fatal(err)
	}
	var varint int64
	for _, k := range r.Kinds {
		varint += k.VarintBytes
	}
	fmt.Println("kind rows add up to the total:", varint == r.Tables.VarintBytes)
	fmt.Println("spec variant row equals the linear total:", r.Variants[0].Name == "spec" && r.Variants[0].Bytes == r.Tables.LinearBytes)
	// Output:
	// kind rows add up to the total: true
	// spec variant row equals the linear total: true
}
