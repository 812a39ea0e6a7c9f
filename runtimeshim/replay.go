package runtimeshim

import (
	"fmt"
	"runtime"
	"time"
)

// A Workload is one of the things the runtime does with a stack, each a
// different mix of table lookups (see the package documentation).
type Workload uint8

// The workloads, in increasing order of work per frame, except GCScan.
const (
	Unwind    Workload = iota // findfunc + pcsp per physical frame
	Callers                   // Unwind + inline expansion (runtime.Callers)
	Symbolize                 // Callers + name, file and line of every logical frame, + ArgLiveIndex
	GCScan                    // Unwind + StackMapIndex at continpc-1 (GC stack scanning)
	numWorkloads
)

var workloadNames = [numWorkloads]string{"unwind", "callers", "symbolize", "gcscan"}

// String returns the workload's name as reports print it.
func (w Workload) String() string {
	if w < numWorkloads {
		return workloadNames[w]
	}
	return fmt.Sprintf("Workload(%d)", uint8(w))
}

// Workloads returns every workload, in order.
func Workloads() []Workload {
	return []Workload{Unwind, Callers, Symbolize, GCScan}
}

// ParseWorkload returns the workload called name.
func ParseWorkload(name string) (Workload, error) {
	for i, n := range workloadNames {
		if n == name {
			return Workload(i), nil
		}
	}
	return 0, fmt.Errorf("runtimeshim: unknown workload %q (want unwind, callers, symbolize or gcscan)", name)
}

// A Stack is one physical stack to replay.
type Stack struct {
	// PCs are the physical frames, innermost first, each given by its
	// return PC: the PC the unwinder holds for the frame, one past the call
	// instruction.
	PCs []uint64
	// Trap reports that the innermost frame was interrupted by a signal
	// (a CPU profiling sample): PCs[0] is the interrupted instruction's PC
	// plus one, as the runtime stores it, and the unwinder holds
	// PCs[0]-1 for that frame (unwinder.symPC with unwindTrap).
	Trap bool
	// M is the simulated M that walks the stack: the index of the pcvalue
	// cache the varint+cache encoding uses.
	M int
}

// Counts describes one replay pass over a list of stacks. Everything but
// Hits and Misses is the same for every encoding of a binary; Sum is a
// checksum of every value the lookups returned, so equal sums mean the
// encodings gave the same answers.
type Counts struct {
	Stacks        int
	Frames        uint64 // physical frames replayed
	Unresolved    uint64 // frames whose PC is in no function (skipped after findfunc)
	LogicalFrames uint64 // logical frames produced (Callers, Symbolize)
	Lookups       uint64 // pcvalue calls that reached a table
	Hits, Misses  uint64 // of the pcvalue cache (varint+cache only)
	Errors        uint64 // strict lookups past the end of a table, where the runtime throws
	Sum           uint64
}

// Walks returns the number of lookups that decoded a table: all of them
// without a cache, the misses with one.
func (c Counts) Walks() uint64 {
	if c.Hits+c.Misses > 0 {
		return c.Misses
	}
	return c.Lookups
}

// HitRate returns the fraction of the cache's lookups that hit, or 0 without
// a cache.
func (c Counts) HitRate() float64 {
	if c.Hits+c.Misses == 0 {
		return 0
	}
	return float64(c.Hits) / float64(c.Hits+c.Misses)
}

// Replay runs workload w once over stacks and returns what it did. Every
// M's cache is emptied first, so that the result does not depend on
// earlier replays.
func (s *Shim) Replay(w Workload, stacks []Stack) Counts {
	s.ResetCaches()
	s.lookups, s.errors, s.sink = 0, 0, 0
	var c Counts
	c.Stacks = len(stacks)
	for i := range stacks {
		st := &stacks[i]
		if st.M < len(s.caches) {
			s.cache = s.caches[st.M]
		} else {
			s.SetM(st.M)
		}
		l, u := s.replayStack(w, st.PCs, st.Trap)
		c.LogicalFrames += uint64(l)
		c.Unresolved += uint64(u)
		c.Frames += uint64(len(st.PCs))
	}
	c.Lookups, c.Errors, c.Sum = s.lookups, s.errors, s.sink
	c.Hits, c.Misses = s.CacheStats()
	return c
}

// replayStack walks one stack as the runtime's unwinder does, doing the
// per-frame work of workload w.
func (s *Shim) replayStack(w Workload, pcs []uint64, trap bool) (logical, unresolved int) {
	md := s.md
	calleeID := uint8(0) // FuncIDNormal
	s.pcbuf = s.pcbuf[:0]
	for i, pc := range pcs {
		trapped := trap && i == 0 && pc > 0
		if trapped {
			pc-- // the interrupted instruction, which the unwinder holds
		}
		// The unwinder: findfunc for the frame, then its SP delta at the
		// frame's PC to find the caller's frame.
		f := s.findfunc(pc)
		if !f.valid() {
			unresolved++
			calleeID = 0
			continue
		}
		s.sink += uint64(uint32(s.funcspdelta(f, pc)))

		switch w {
		case Callers, Symbolize:
			// tracebackPCs (and traceback2): the logical frames at the
			// frame's symbolic PC.
			sym := pc
			if !trapped && !md.isInjected(calleeID) && pc > f.entry() {
				sym = pc - 1 // unwinder.symPC for a regular call
			}
			iu, uf := s.newInlineUnwinder(f, sym)
			steps := len(iu.inlTree) + 1
			for ; uf.valid() && steps > 0; uf = iu.next(uf) {
				steps--
				sf := iu.srcFunc(uf)
				if md.isWrapper(sf.funcID) && md.elideWrapperCalling(calleeID) {
					// elided wrapper
				} else {
					logical++
					s.pcbuf = append(s.pcbuf, uf.pc+1)
					if w == Symbolize {
						name := sf.name()
						file, line := iu.fileLine(uf)
						s.sink += uint64(len(name)) + uint64(len(file)) + uint64(line)
						if !iu.isInlined(uf) {
							s.printArgs(f, sym)
						}
					}
				}
				calleeID = sf.funcID
			}
		case GCScan:
			// resolveInternal's continpc, then getStackMap.
			continpc := pc
			if uint16(calleeID) == md.ids.sigpanic {
				if f.deferreturn != 0 {
					continpc = f.entry() + uint64(f.deferreturn) + 1
				} else {
					continpc = 0
				}
			}
			s.getStackMap(f, continpc)
		}
		calleeID = f.funcID
	}
	if n := len(s.pcbuf); n > 0 {
		s.sink += s.pcbuf[n-1]
	}
	return logical, unresolved
}

// tracebackPCs returns the PCs the Callers workload writes for one
// physical stack: one per logical frame, as runtime.Callers returns them.
// The result aliases the shim's buffer until the next replay.
func (s *Shim) tracebackPCs(pcs []uint64) []uint64 {
	s.replayStack(Callers, pcs, false)
	return s.pcbuf
}

// printArgs does the lookups of runtime.printArgs: the ArgInfo and
// ArgLiveInfo funcdata and, when there is ArgInfo, the ArgLiveIndex at pc.
func (s *Shim) printArgs(f funcInfo, pc uint64) {
	if funcdata(f, funcdataArgInfo) == 0 {
		return
	}
	liveInfo := funcdata(f, funcdataArgLiveInfo)
	liveIdx := s.pcdatavalue(f, pcdataArgLiveIndex, pc)
	s.sink += liveInfo + uint64(uint32(liveIdx))
}

// getStackMap does the lookups of stkframe.getStackMap: the StackMapIndex
// at continpc-1 (none at the entry, none for a dead frame) and the
// references to the locals and args pointer maps and the stack objects.
// The frame's sizes are not known here, so the locals map is fetched when
// the function has a frame (its SP delta table) and the args map when it
// has arguments.
func (s *Shim) getStackMap(f funcInfo, continpc uint64) {
	if continpc == 0 {
		return
	}
	pcdata := int32(-1)
	if continpc != f.entry() {
		pcdata = s.pcdatavalue(f, pcdataStackMapIndex, continpc-1)
	}
	if pcdata == -1 {
		pcdata = 0
	}
	s.sink += uint64(uint32(pcdata))
	if f.pcsp.n != 0 {
		s.sink += funcdata(f, funcdataLocalsPointerMaps)
	}
	if f.args > 0 {
		s.sink += funcdata(f, funcdataArgsPointerMaps)
	}
	s.sink += funcdata(f, funcdataStackObjects)
}

// SliceFrames is the number of frames Compare replays with one encoding
// before it switches to the next.
const SliceFrames = 4096

// Compare times workload w over stacks with every shim, side by side.
// Each of rounds passes cuts the stacks into slices of about SliceFrames
// frames and replays each slice with every shim in turn (starting with a
// different shim for each slice) before moving on, so that all encodings
// run under the same machine conditions. Each shim's caches carry over from
// one slice to the next as in a single pass, and are emptied at the start
// of a pass. The clock is the replaying thread's CPU time where the system
// reports it (see Timer), so that time other processes hold the CPU is not
// counted. It returns the counts of one untimed pass per shim and, per
// shim, the time of each timed pass.
func Compare(shims []*Shim, w Workload, stacks []Stack, rounds int) ([]Counts, [][]time.Duration) {
	counts := make([]Counts, len(shims))
	for i, s := range shims {
		counts[i] = s.Replay(w, stacks)
	}
	// Slice boundaries, on stack boundaries.
	var cuts []int
	n := 0
	for i := range stacks {
		if n >= SliceFrames {
			cuts = append(cuts, i)
			n = 0
		}
		n += len(stacks[i].PCs)
	}
	cuts = append(cuts, len(stacks))
	times := make([][]time.Duration, len(shims))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for r := 0; r < rounds; r++ {
		for _, s := range shims {
			s.ResetCaches()
		}
		elapsed := make([]time.Duration, len(shims))
		lo := 0
		for ci, hi := range cuts {
			part := stacks[lo:hi]
			for k := range shims {
				j := (k + ci + r) % len(shims)
				s := shims[j]
				start := threadTime()
				s.replaySlice(w, part)
				elapsed[j] += threadTime() - start
			}
			lo = hi
		}
		for j := range shims {
			times[j] = append(times[j], elapsed[j])
		}
	}
	return counts, times
}

// replaySlice is Replay without resetting the caches or the counters.
func (s *Shim) replaySlice(w Workload, stacks []Stack) {
	for i := range stacks {
		st := &stacks[i]
		if st.M < len(s.caches) {
			s.cache = s.caches[st.M]
		} else {
			s.SetM(st.M)
		}
		s.replayStack(w, st.PCs, st.Trap)
	}
}
