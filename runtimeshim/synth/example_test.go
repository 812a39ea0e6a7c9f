package synth_test

import (
	"fmt"
	"os"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/runtimeshim"
	"github.com/pctab/pctab/runtimeshim/synth"
)

// Stacks draws synthetic stacks from a binary's call graph; here the
// running test binary's (on amd64 or arm64). The stacks replay like real
// ones, and debug/gosym agrees with the shim on every frame.
func ExampleGraph_Stacks() {
	exe, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := objscan.Open(exe)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	g, err := synth.Build(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	stacks, err := g.Stacks(100, synth.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	inRange := true
	for _, st := range stacks {
		inRange = inRange && len(st.PCs) >= 1 && len(st.PCs) <= 40
	}
	m, err := runtimeshim.NewModule(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	enc, _ := runtimeshim.EncodingByName("linear")
	s, err := m.NewShim(enc)
	if err != nil {
		fmt.Println(err)
		return
	}
	check, err := s.CheckGosym(stacks, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := s.Replay(runtimeshim.Symbolize, stacks)
	fmt.Printf("%d stacks of 1 to 40 frames: %v\n", len(stacks), inRange)
	fmt.Printf("frames debug/gosym disagrees on: %d\n", check.Mismatched)
	fmt.Printf("logical frames at least physical frames: %v\n", c.LogicalFrames >= c.Frames)
	// Output:
	// 100 stacks of 1 to 40 frames: true
	// frames debug/gosym disagrees on: 0
	// logical frames at least physical frames: true
}
