package stackinput_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"

	"github.com/pctab/pctab/stackinput"
)

// Any source of symbolized stacks can fill a corpus; here, two samples of
// one stack whose middle frame has an inlined call.
func ExampleCorpus() {
	c := stackinput.NewCorpus("example")
	leaf := stackinput.Location{PC: 0x401234, Lines: []stackinput.Line{{Func: "main.work", File: "main.go", Line: 12}}}
	mid := stackinput.Location{PC: 0x401100, Lines: []stackinput.Line{
		{Func: "main.helper", File: "main.go", Line: 30}, // inlined into main.main
		{Func: "main.main", File: "main.go", Line: 40},
	}}
	c.Add(1, 7, 0, []stackinput.Location{leaf, mid})
	c.Add(1, 7, 0, []stackinput.Location{leaf, mid})
	fmt.Println(len(c.Samples), "samples of", c.NumStacks(), "distinct stack")

	lines := stackinput.NewLineFrames()
	text := stackinput.TextOffsetFrames{Base: 0x401000}
	for _, m := range []stackinput.FrameMapper{stackinput.PCFrames{}, text, lines} {
		var frames []uint64
		for _, l := range c.Stack(0) {
			frames, _ = m.AppendFrames(frames, c.Locations[l])
		}
		fmt.Printf("%-4s %#x\n", m.Name(), frames)
	}
	l, _ := lines.Line(1)
	fmt.Println("line frame 1 is", l.Func, l.Line)
	// Output:
	// 2 samples of 1 distinct stack
	// pc   [0x401234 0x401100]
	// text [0x234 0x100]
	// line [0x0 0x1 0x2]
	// line frame 1 is main.helper 30
}

// ParsePprof refuses a compressed profile that would cost more than
// MaxCost of its size: here 64 MiB of zeros, gzipped to about 64 KB.
func ExampleParsePprof() {
	var bomb bytes.Buffer
	w := gzip.NewWriter(&bomb)
	w.Write(make([]byte, 64<<20))
	w.Close()
	_, err := stackinput.ParsePprof(&bomb)
	fmt.Println(errors.Is(err, stackinput.ErrTooLarge))
	// Output:
	// true
}
