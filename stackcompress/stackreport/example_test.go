package stackreport_test

import (
	"fmt"
	"log"

	"github.com/pctab/pctab/stackcompress"
	"github.com/pctab/pctab/stackcompress/stackreport"
	"github.com/pctab/pctab/stackinput"
)

func ExampleMeasure() {
	c := stackinput.NewCorpus("example")
	loc := func(pc uint64, fn string) stackinput.Location {
		return stackinput.Location{PC: pc, Lines: []stackinput.Line{{Func: fn, File: "x.go", Line: int64(pc & 0xff)}}}
	}
	main, foo := loc(0x401010, "main.main"), loc(0x402020, "main.foo")
	for i := range 1000 {
		leaf := loc(0x402000+uint64(i%16), "main.foo")
		c.Add(1, 1, 1, []stackinput.Location{leaf, foo, main})
	}
	r, err := stackreport.Measure(c, stackreport.Options{Variants: []stackreport.Variant{
		{Frames: stackreport.FramesPC, Layout: stackcompress.LayoutSeed()},
		{Frames: stackreport.FramesPC, Layout: stackcompress.LayoutPacked()},
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d stacks, %d frames, raw %d B, %d unique, dedup %d B\n", r.Stacks, r.Frames, r.RawBytes, r.UniqueStacks, r.DedupBytes)
	for _, v := range r.Variants {
		fmt.Printf("%s: %d nodes, %d B, %.0f%% of lookups saved, %d verified\n", v.Name, v.Nodes, v.DAGBytes, 100*v.CacheSaved, v.Verified)
	}
	// Output:
	// 1000 stacks, 3000 frames, raw 24000 B, 16 unique, dedup 1664 B
	// pc/f64-absolute: 19 nodes, 232 B, 67% of lookups saved, 1000 verified
	// pc/fpack-chain-dict: 19 nodes, 152 B, 67% of lookups saved, 1000 verified
}
