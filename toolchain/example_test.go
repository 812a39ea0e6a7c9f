package toolchain_test

import (
	"fmt"
	"strings"

	"github.com/pctab/pctab/toolchain"
)

// Three rounds of stock against the default flavour in two random
// function layouts: the order rotates each round, and each round runs
// every flavour in the same layout.
func ExampleRoundFlavours() {
	fls := []toolchain.Flavour{{Name: "stock", Stock: true}, {Name: "default"}}
	for r := range 3 {
		var line []string
		for _, fl := range toolchain.RoundFlavours(fls, 2, r) {
			line = append(line, fmt.Sprintf("%s %q", fl.Name, fl.BuildFlags()))
		}
		fmt.Println(strings.Join(line, ", "))
	}
	// Output:
	// stock ["-ldflags=-randlayout=1"], default ["-ldflags=-randlayout=1"]
	// default ["-ldflags=-randlayout=2"], stock ["-ldflags=-randlayout=2"]
	// stock ["-ldflags=-randlayout=1"], default ["-ldflags=-randlayout=1"]
}
