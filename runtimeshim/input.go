package runtimeshim

import (
	"encoding/binary"
	"fmt"

	"github.com/pctab/pctab/stackinput"
)

// pageSize is the granularity of a position-independent binary's load
// address assumed when looking for its slide.
const pageSize = 4096

// slideSample is the number of locations FindSlide scores each candidate
// slide with.
const slideSample = 256

// FindSlide returns the load offset (slide) of a position-independent
// binary: the amount to subtract from the PCs recorded in locs, run-time
// addresses from an execution trace or a profile of the binary, to get the
// binary's own addresses. It tries slide 0 and then every page-aligned
// slide that puts a recorded PC inside a function of the recorded name,
// scores each by how many of up to 256 recorded locations symbolize to the
// recorded innermost function name, and returns the best. It fails when no
// slide explains at least half of them.
func (s *Shim) FindSlide(locs []stackinput.Location) (uint64, error) {
	var sample []stackinput.Location
	for _, l := range locs {
		if l.PC != 0 && len(l.Lines) > 0 && l.Lines[0].Func != "" {
			sample = append(sample, l)
			if len(sample) == slideSample {
				break
			}
		}
	}
	if len(sample) == 0 {
		return 0, nil
	}
	score := func(slide uint64) int {
		n := 0
		for _, l := range sample {
			if l.PC < slide {
				continue
			}
			pc := l.PC - slide
			f := s.findfunc(pc)
			if !f.valid() {
				continue
			}
			u, uf := s.newInlineUnwinder(f, pc)
			if FuncNameForPrint(u.srcFunc(uf).name()) == FuncNameForPrint(l.Lines[0].Func) {
				n++
			}
		}
		return n
	}
	best, bestScore := uint64(0), score(0)
	if bestScore == len(sample) {
		return 0, nil
	}
	// Candidate slides from the physical functions named by the outermost
	// line of each location (an execution trace has one line per location,
	// which is the physical function for most of them).
	byName := map[string][]int{}
	for i, n := range s.md.names {
		byName[FuncNameForPrint(n)] = append(byName[FuncNameForPrint(n)], i)
	}
	tried := map[uint64]bool{0: true}
	for _, l := range sample {
		for _, fi := range byName[FuncNameForPrint(l.Lines[len(l.Lines)-1].Func)] {
			entry := s.md.text + uint64(s.md.ftab[fi].entryoff)
			end := s.md.text + uint64(s.md.ftab[fi+1].entryoff)
			if l.PC < entry {
				continue
			}
			lo := uint64(0)
			if l.PC >= end {
				lo = (l.PC - end + pageSize) / pageSize * pageSize
			}
			for slide := lo; slide <= l.PC-entry; slide += pageSize {
				if !tried[slide] {
					tried[slide] = true
					if sc := score(slide); sc > bestScore {
						best, bestScore = slide, sc
					}
				}
				if slide+pageSize < slide {
					break // the next slide would wrap around
				}
			}
		}
		if bestScore == len(sample) || len(tried) > 4096 {
			break
		}
	}
	if 2*bestScore < len(sample) {
		return 0, fmt.Errorf("runtimeshim: the recorded PCs do not fit the binary: the best slide %#x explains %d of %d locations", best, bestScore, len(sample))
	}
	return best, nil
}

// InputStats describes the conversion of recorded stacks into physical
// stacks.
type InputStats struct {
	Samples       int // recorded stacks (events or samples)
	LogicalFrames int // recorded frames
	Frames        int // physical frames made of them
	ZeroPCs       int // recorded frames without a PC, dropped
	Ms            int // distinct threads, each a simulated M
}

// StacksFromCorpus turns the recorded stacks of c, one per sample and in
// sample order, into physical stacks to replay. The recorded PCs are
// logical: a trace has a frame per inlined call, at the call site's PC, and
// a profile has a location per physical frame whose address is the PC
// looked up. A recorded PC minus slide starts a physical frame whose return
// PC is one more; the following recorded PCs that are the PCs of its inlined
// callers (entry plus the inline tree's parent PC) belong to the same frame.
// Each distinct thread of the samples is a simulated M; samples without a
// thread (profiles) all run on M 0.
func (s *Shim) StacksFromCorpus(c *stackinput.Corpus, slide uint64) ([]Stack, InputStats) {
	var st InputStats
	ms := map[int64]int{}
	cache := map[uint32][]uint64{} // corpus stack -> physical return PCs
	stacks := make([]Stack, 0, len(c.Samples))
	var pcs []uint64
	for _, smp := range c.Samples {
		locs := c.Stack(smp.Stack)
		st.Samples++
		st.LogicalFrames += len(locs)
		phys, ok := cache[smp.Stack]
		if !ok {
			pcs = pcs[:0]
			for _, li := range locs {
				pc := c.Locations[li].PC
				if pc == 0 {
					continue
				}
				pcs = append(pcs, pc-slide)
			}
			phys = s.physicalFrames(pcs, nil)
			cache[smp.Stack] = phys
		}
		for _, li := range locs {
			if c.Locations[li].PC == 0 {
				st.ZeroPCs++
			}
		}
		m, ok := ms[smp.Thread]
		if !ok {
			m = len(ms)
			ms[smp.Thread] = m
		}
		st.Frames += len(phys)
		stacks = append(stacks, Stack{PCs: phys, M: m, Trap: smp.Trap})
	}
	st.Ms = len(ms)
	return stacks, st
}

// physicalFrames groups logical PCs (PCs that were looked up) into
// physical frames and appends their return PCs to dst.
func (s *Shim) physicalFrames(pcs []uint64, dst []uint64) []uint64 {
	md := s.md
	for i := 0; i < len(pcs); {
		pc := pcs[i]
		i++
		dst = append(dst, pc+1)
		f := s.findfunc(pc)
		if !f.valid() {
			continue
		}
		iu, uf := s.newInlineUnwinder(f, pc)
		steps := len(iu.inlTree)
		for uf = iu.next(uf); uf.valid() && steps > 0; uf = iu.next(uf) {
			steps--
			if i < len(pcs) && pcs[i] == uf.pc {
				i++
				continue
			}
			if md.isWrapper(iu.srcFunc(uf).funcID) {
				continue // an elided wrapper leaves no PC
			}
			break
		}
	}
	return dst
}

// DistinctStacks returns each distinct stack of stacks once, in order of
// first appearance, all on M 0: a replay in which no stack repeats, so that
// the cache hits only where stacks share frames or recurse.
func DistinctStacks(stacks []Stack) []Stack {
	seen := map[string]bool{}
	var out []Stack
	var key []byte
	for _, st := range stacks {
		key = key[:0]
		if st.Trap {
			key = append(key, 1)
		}
		for _, pc := range st.PCs {
			key = binary.LittleEndian.AppendUint64(key, pc)
		}
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		out = append(out, Stack{PCs: st.PCs, Trap: st.Trap})
	}
	return out
}
