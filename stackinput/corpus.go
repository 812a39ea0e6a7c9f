// Package stackinput reads real Go stacks, for the stackcompress DAG and for
// runtimeshim's replays: every stack of a Go execution trace (golang.org/x/exp/trace), every sample of a
// pprof profile (github.com/google/pprof/profile), or stacks that another
// source, such as a symbolizer, adds one by one. It also maps their frames
// to the integers a DAG stores, in three ways: raw PCs, 32-bit offsets
// into the binary's text, and logical frames interned by function, file
// and line.
package stackinput

import (
	"encoding/binary"
	"fmt"
)

// A Line is one logical frame at a location: a function and a source line.
type Line struct {
	Func string
	File string
	Line int64
}

// A Location is one frame as a source records it: a PC and the logical
// frames at it, innermost first. An execution trace records one logical
// frame per PC (inlined calls get PCs of their own); a pprof location
// lists the inlined calls at its address.
type Location struct {
	PC    uint64
	Lines []Line
}

// A Sample is one recorded stack: which goroutine and thread it was
// recorded on, in which trace generation, and which of the corpus's
// distinct stacks it is.
type Sample struct {
	Goroutine  int64  // goroutine ID, or -1 if none
	Thread     int64  // thread ID, or -1 if none
	Generation uint32 // trace generation (0 for pprof)
	Stack      uint32 // index of the stack in the corpus
	// CPU marks a CPU profiling sample in an execution trace. The runtime
	// stores those stacks as logical PCs, already inline-expanded, and
	// other trace stacks as physical return PCs.
	CPU bool
	// Trap marks a stack whose innermost frame is the instruction a
	// signal interrupted, not a return address: the CPU profiling samples
	// of an execution trace and every sample of a pprof CPU profile. The
	// runtime stores every frame as its symbolic PC plus one
	// (tracebackPCs in runtime/traceback.go); for a trapped frame the
	// symbolic PC is the interrupted instruction itself (unwinder.symPC),
	// so its stored PC can be one past its function's last instruction.
	Trap bool
	// Time is the event's time in an execution trace, in nanoseconds on
	// the trace's clock (the runtime's nanotime, CLOCK_MONOTONIC on
	// Linux); 0 for pprof.
	Time int64
}

// A Corpus holds the stacks of one input: each distinct stack once, as a
// list of distinct locations, and the samples that refer to them.
type Corpus struct {
	Source    string     // what the stacks came from, for reports
	Locations []Location // distinct locations
	Samples   []Sample   // stacks in the order they were recorded

	stackLocs []uint32 // location indices of all stacks, leaf first
	stackOff  []uint32 // stack i is stackLocs[stackOff[i]:stackOff[i+1]]
	stackIdx  map[string]uint32
	locIdx    map[locKey]uint32
	keyBuf    []byte
}

type locKey struct {
	pc    uint64
	lines string // the lines, encoded; empty for a location without lines
}

// NewCorpus returns an empty corpus.
func NewCorpus(source string) *Corpus {
	return &Corpus{
		Source:   source,
		stackOff: []uint32{0},
		stackIdx: make(map[string]uint32),
		locIdx:   make(map[locKey]uint32),
	}
}

// AddLocation interns loc and returns its index in c.Locations.
func (c *Corpus) AddLocation(loc Location) uint32 {
	k := locKey{pc: loc.PC}
	if len(loc.Lines) > 0 {
		b := c.keyBuf[:0]
		for _, l := range loc.Lines {
			b = binary.AppendUvarint(b, uint64(len(l.Func)))
			b = append(b, l.Func...)
			b = binary.AppendUvarint(b, uint64(len(l.File)))
			b = append(b, l.File...)
			b = binary.AppendVarint(b, l.Line)
		}
		c.keyBuf = b
		k.lines = string(b)
	}
	if i, ok := c.locIdx[k]; ok {
		return i
	}
	i := uint32(len(c.Locations))
	c.Locations = append(c.Locations, Location{PC: loc.PC, Lines: append([]Line(nil), loc.Lines...)})
	c.locIdx[k] = i
	return i
}

// AddStack interns a stack given as location indices, leaf first, and
// returns its index. It fails if an index is not a location of c.
func (c *Corpus) AddStack(locs []uint32) (uint32, error) {
	b := c.keyBuf[:0]
	for _, l := range locs {
		if l >= uint32(len(c.Locations)) {
			return 0, fmt.Errorf("stackinput: location index %d out of range (%d locations)", l, len(c.Locations))
		}
		b = binary.LittleEndian.AppendUint32(b, l)
	}
	c.keyBuf = b
	if i, ok := c.stackIdx[string(b)]; ok {
		return i, nil
	}
	i := uint32(len(c.stackOff) - 1)
	c.stackLocs = append(c.stackLocs, locs...)
	c.stackOff = append(c.stackOff, uint32(len(c.stackLocs)))
	c.stackIdx[string(b)] = i
	return i, nil
}

// Add records a sample of a stack of locations, leaf first.
func (c *Corpus) Add(goroutine, thread int64, generation uint32, stack []Location) {
	idx := make([]uint32, len(stack))
	for i, l := range stack {
		idx[i] = c.AddLocation(l)
	}
	s, _ := c.AddStack(idx) // indices come from AddLocation
	c.Samples = append(c.Samples, Sample{Goroutine: goroutine, Thread: thread, Generation: generation, Stack: s})
}

// NumStacks returns the number of distinct stacks.
func (c *Corpus) NumStacks() int { return len(c.stackOff) - 1 }

// Stack returns the location indices of stack i, leaf first. The result
// aliases the corpus and must not be modified.
func (c *Corpus) Stack(i uint32) []uint32 {
	return c.stackLocs[c.stackOff[i]:c.stackOff[i+1]]
}
