package diskmap_test

import (
	"bytes"
	"fmt"

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
