package runtimeshim

import (
	"bytes"

	"encoding/binary"
	"github.com/pctab/pctab/objscan"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/stackinput"
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

// FuzzNewModule builds a module from arbitrary binaries (seeded with
// synthetic ELF binaries of every pclntab layout, in
// testdata/fuzz/FuzzNewModule) and looks up PCs across its text with every
// encoding: nothing may panic, and the encodings must agree.
func FuzzNewModule(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		of, err := objscan.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		m, err := NewModule(of)
		if err != nil {
			return
		}
		var pcs []uint64
		for _, fn := range of.Funcs {
			pcs = append(pcs, fn.Entry, fn.Entry+1, fn.End-1)
			if len(pcs) > 300 {
				break
			}
		}
		var ref []Frame
		for i, e := range Encodings() {
			s, err := m.NewShim(e)
			if err != nil {
				return // an encoding that cannot hold these tables
			}
			var got []Frame
			ci := s.CallersFrames(pcs)
			for {
				fr, more := ci.Next()
				got = append(got, fr)
				if !more || len(got) > 10*len(pcs)+10 {
					break
				}
			}
			if i == 0 {
				ref = got
				continue
			}
			if len(got) != len(ref) {
				t.Fatalf("%s: %d frames, %s %d", e.Name, len(got), Encodings()[0].Name, len(ref))
			}
			for j := range got {
				if got[j].PC != ref[j].PC || got[j].Function != ref[j].Function || got[j].File != ref[j].File || got[j].Line != ref[j].Line {
					t.Fatalf("%s: frame %d %+v, %s %+v", e.Name, j, got[j], Encodings()[0].Name, ref[j])
				}
			}
		}
	})
}
