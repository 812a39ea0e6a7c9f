package diskmap_test

import (
	"bytes"
	"fmt"
	"os"

	"github.com/pctab/pctab/diskmap"
)

func Example() {
	// Index which pages of a log mention which function.
	b := diskmap.NewBuilder()
	b.Add([]byte("main.main"), 0)
	b.Add([]byte("net/http.(*conn).serve"), 0)
	b.Add([]byte("net/http.(*conn).serve"), 7)
	b.Add([]byte("main.main"), 3)

	var file bytes.Buffer
	if _, err := b.WriteChecked(&file); err != nil {
		panic(err)
	}
	m := diskmap.NewChecked(file.Bytes()) // or diskmap.Open(path), memory-mapped
	pages, all := m.Lookup([]byte("net/http.(*conn).serve"))
	fmt.Println(pages, all)
	pages, all = m.Lookup([]byte("main.f"))
	fmt.Println(pages, all)

	// A corrupt map answers "every page": false positives, never false
	// negatives.
	data := bytes.Clone(file.Bytes())
	data[9] ^= 1
	_, all = diskmap.NewChecked(data).Lookup([]byte("main.main"))
	fmt.Println(all)
	// Output:
	// [0 7] false
	// [] false
	// true
}

func ExampleNewSpillBuilder() {
	// An index that holds about 1 KiB in memory and spills sorted runs
	// to a temporary file beyond it; the map written is the same as the
	// in-memory builder's.
	dir, _ := os.MkdirTemp("", "spill")
	defer os.RemoveAll(dir)
	b := diskmap.NewSpillBuilder(dir, 1<<10)
	defer b.Close()
	for page := range uint32(100) {
		b.Add([]byte("main.main"), page)
		b.Add([]byte(fmt.Sprint("main.f", page%7)), page)
	}
	var file bytes.Buffer
	if _, err := b.WriteChecked(&file); err != nil {
		panic(err)
	}
	pages, _ := diskmap.NewChecked(file.Bytes()).Lookup([]byte("main.f3"))
	fmt.Println(b.Spilled() > 1, pages)
	// Output: true [3 10 17 24 31 38 45 52 59 66 73 80 87 94]
}
