package runtimeshim

import (
	"encoding/binary"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/stackcompress/stackinput"
)

// FuzzShimPCs looks up arbitrary PCs, in and around the text, with every
// encoding: nothing may panic, and every encoding must give the same
// frames, the same replay counts and the same checksums.
func FuzzShimPCs(f *testing.F) {
	_, _, m := openModule(f, testbuild.Config{Archive: "features"})
	shims := allShims(f, m)
	f.Add([]byte{0, 0, 0, 0, 16, 0, 0, 0, 255, 255, 255, 255})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	span := m.maxpc - m.minpc
	f.Fuzz(func(t *testing.T, data []byte) {
		var pcs []uint64
		for len(data) >= 4 {
			// Offsets from 64 bytes below the text to 64 bytes past it.
			x := uint64(binary.LittleEndian.Uint32(data)) % (span + 128)
			pcs = append(pcs, m.minpc-64+x)
			data = data[4:]
		}
		stacks := []Stack{{PCs: pcs}, {PCs: pcs, M: 2}}
		for _, w := range Workloads() {
			ref := shims[0].Replay(w, stacks)
			for _, s := range shims[1:] {
				c := s.Replay(w, stacks)
				c.Hits, c.Misses = 0, 0
				if c != ref {
					t.Fatalf("%s: %s gives %+v, varint %+v", w, s.enc.Name, c, ref)
				}
			}
		}
		var want []Frame
		ci := shims[0].CallersFrames(pcs)
		for {
			fr, more := ci.Next()
			want = append(want, fr)
			if !more {
				break
			}
		}
		for _, s := range shims[1:] {
			ci := s.CallersFrames(pcs)
			for i := 0; ; i++ {
				fr, more := ci.Next()
				if i >= len(want) || fr.PC != want[i].PC || fr.Function != want[i].Function || fr.File != want[i].File || fr.Line != want[i].Line {
					t.Fatalf("%s: frame %d differs from varint's", s.enc.Name, i)
				}
				if !more {
					break
				}
			}
		}
		c := stackinput.NewCorpus("fuzz")
		var locs []uint32
		for _, pc := range pcs {
			locs = append(locs, c.AddLocation(stackinput.Location{PC: pc, Lines: []stackinput.Line{{Func: "main.main"}}}))
		}
		if st, err := c.AddStack(locs); err == nil {
			c.Samples = append(c.Samples, stackinput.Sample{Stack: st})
		}
		if slide, err := shims[0].FindSlide(c.Locations); err == nil {
			shims[0].CheckTrace(c, slide, 1)
			shims[0].CheckPprof(c, slide, 1)
			shims[0].StacksFromCorpus(c, slide)
		}
	})
}
