package pcgen

import (
	"math/rand/v2"
	"testing"
)

// TestTable checks that generated tables are what the linker writes:
// valid, with positive-length runs whose consecutive values differ.
func TestTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		tab := Table(r)
		if err := tab.Validate(); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(tab.Runs); i++ {
			if tab.Runs[i].PC == tab.Runs[i-1].PC || tab.Runs[i].Value == tab.Runs[i-1].Value {
				t.Fatalf("runs %d and %d: %+v %+v", i-1, i, tab.Runs[i-1], tab.Runs[i])
			}
		}
		if last := tab.Runs[len(tab.Runs)-1]; last.PC >= tab.Len {
			t.Fatalf("last run at %d, table length %d", last.PC, tab.Len)
		}
	}
}
