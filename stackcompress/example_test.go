package stackcompress_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pctab/pctab/stackcompress"
)

// Stacks go in leaf first, as runtime.Callers returns them, and come back
// exactly. Stacks that share callers share nodes.
func ExampleBuilder() {
	b, err := stackcompress.NewBuilder(stackcompress.Options{Layout: stackcompress.LayoutPacked()})
	if err != nil {
		log.Fatal(err)
	}
	const thread = 1
	main, foo, x, y := uint64(0x401000), uint64(0x402000), uint64(0x402010), uint64(0x402020)
	idX, _ := b.Insert(thread, []uint64{x, foo, main})
	idY, _ := b.Insert(thread, []uint64{y, foo, main})
	idX2, _ := b.Insert(thread, []uint64{x, foo, main})
	stack, _ := b.Stack(idY, nil)
	fmt.Printf("ID of first stack: %d, again: %d\n", idX, idX2)
	fmt.Printf("stack %d: %#x\n", idY, stack)
	st := b.Stats()
	fmt.Printf("nodes: %d, frames: %d, map lookups: %d, cache saved: %.0f%%\n", b.Len(), st.Frames, st.Lookups, 100*st.CacheSaved())
	// Output:
	// ID of first stack: 3, again: 3
	// stack 4: [0x402020 0x402000 0x401000]
	// nodes: 5, frames: 9, map lookups: 5, cache saved: 44%
}

// GetOrInsert is the primitive: one frame under one parent node.
func ExampleBuilder_GetOrInsert() {
	b, _ := stackcompress.NewBuilder(stackcompress.Options{Layout: stackcompress.LayoutSeed()})
	a, _ := b.GetOrInsert(0xa, 0) // child of the root
	c, _ := b.GetOrInsert(0xc, a)
	again, _ := b.GetOrInsert(0xc, a)
	s, _ := b.Stack(c, nil)
	fmt.Println(a, c, again, s)
	// Output: 1 2 2 [12 10]
}

// A DAG file is read in place, page by page, within a memory budget.
func ExampleOpen() {
	b, _ := stackcompress.NewBuilder(stackcompress.Options{PageNodes: 4})
	var ids []uint64
	for i := range uint64(10) {
		id, _ := b.Insert(0, []uint64{100 + i, 2, 1})
		ids = append(ids, id)
	}
	dir, _ := os.MkdirTemp("", "dag")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "stacks.dag")
	var buf bytes.Buffer
	b.WriteTo(&buf)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}

	r, err := stackcompress.Open(path, stackcompress.ReaderOptions{MemoryBudget: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	for _, id := range ids[len(ids)-2:] {
		s, err := r.Stack(id, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(id, s)
	}
	st := r.Stats()
	fmt.Printf("%d pages; resident at most %d bytes of a 256-byte budget\n", r.Pages(), st.PeakResident)
	// Output:
	// 11 [108 2 1]
	// 12 [109 2 1]
	// 4 pages; resident at most 232 bytes of a 256-byte budget
}
