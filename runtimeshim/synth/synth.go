// Package synth draws synthetic stacks for binaries that cannot run here,
// such as binaries for other architectures or operating systems, from
// their static call graph.
//
// # The call graph
//
// [Build] disassembles every function of the binary with pctab's
// disassembler, internal/callsites (golang.org/x/arch: x86asm for amd64
// and 386, arm64asm for arm64), and keeps each direct call: a CALL with a
// relative target on x86, a BL on arm64. The call's return
// address is the PC after the instruction; its callee is the function that
// holds the target (a target inside a function, such as an entry into
// runtime.duffzero, counts as a call of that function). Indirect calls
// (through a register or memory: interface methods, closures, go
// statements) have no static target and are left out. Calls to
// runtime.morestack* (the stack-growth path of every prologue) and to
// runtime.panic* (bounds-check and other failure paths) are left out too:
// they are cold paths that real stacks almost never hold, and a uniform
// choice among call sites would otherwise walk into them at almost every
// step. So are functions without a pcsp table, and calls into them: the
// C code that a -race build or an internally linked cgo program lists in
// its pclntab (the race detector's ThreadSanitizer runtime), which no Go
// traceback can unwind.
//
// # How a stack is drawn
//
// [Graph.Stacks] draws each stack independently with a seeded PRNG:
//
//  1. A target depth D is drawn uniformly from [Options.MinDepth,
//     Options.MaxDepth] (default 4 to 40; the distinct stacks of real
//     traces of the go command and the compiler have a median physical
//     depth of 15 to 20 and a 90th percentile of 28 to 36).
//  2. The walk starts at a root drawn uniformly from the functions outside
//     the runtime that no direct call reaches and that make at least one
//     call: goroutine bodies, functions called through interfaces or
//     function values, and main.main's caller chain (all roots if none is
//     outside the runtime).
//  3. At each step it draws one of the current function's call sites,
//     records the site's return address as a frame and moves to the
//     callee. While the walk is outside the runtime (runtime.* and
//     internal/runtime/...) and more than RuntimeTail frames are wanted,
//     it draws only among the sites whose callee is outside the runtime
//     too, if there are any; otherwise among all sites. In both cases it
//     draws uniformly among the sites whose callee can still give the most
//     of the frames wanted (the longest walk from the callee over the same
//     kind of functions, capped at D), so that walks do not end early in
//     leaf functions (memmove, write barriers, ...).
//  4. The walk ends when it has D frames, when it reaches a function
//     without call sites, or when it has recorded RuntimeTail frames in
//     runtime functions.
//
// The runtime rules matter: almost every function calls into the runtime
// (allocation, maps, channels, write barriers) and the runtime's own call
// graph is deep and cyclic, so without them most frames of a walk land in
// small runtime functions. Real stacks run through user code and reach the
// runtime near the leaf, but through indirect calls too, which a static
// call graph does not see, so synthetic stacks stay shallower than real
// ones and hold smaller functions.
//
// The frames are then reversed, innermost first, as an unwinder sees them.
// Every stack runs on M 0. Stacks drawn this way have no temporal locality,
// so the pcvalue cache hits only where a stack recurses: compare them with
// the distinct stacks of a real trace, not with its event stream.
package synth

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/pctab/pctab/internal/callsites"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/runtimeshim"
)

// A Site is a direct call instruction.
type Site struct {
	Ret    uint64 // return address: the PC after the call instruction
	Callee int    // index in objscan.File.Funcs of the function called
}

// Stats counts what Build found.
type Stats struct {
	Funcs         int // functions disassembled
	Calls         int // direct calls kept
	Cold          int // direct calls to morestack and panic functions, left out
	OutsideText   int // direct calls whose target is in no function
	DecodeErrors  int // bytes (x86) or call-shaped words (arm64) that did not decode, skipped (callsites.Decoder.Calls)
	Roots         int // functions no direct call reaches, with call sites
	MissingFuncs  int // functions outside the text section read
	NoTables      int // functions without a pcsp table (C code such as the race runtime's), left out
	NoTableCalls  int // direct calls into them, left out
	TextBytes     int // bytes of code read (every executable section)
	LongestCalls  int // most call sites in one function
	FuncsWithCall int // functions with at least one call site
}

// A Graph is the static call graph of a binary.
type Graph struct {
	names      []string
	sites      [][]Site // per function
	height     []int32  // per function, the most frames a walk from it records, capped (see computeHeights)
	userHeight []int32  // the same for walks that stay outside the runtime
	hcap       int32    // the cap height was computed with
	roots      []int
	stats      Stats

	userRoots []int  // the roots outside the runtime
	runtime   []bool // per function, whether it belongs to the runtime
}

// Build builds the call graph of the binary f: its pclntab gives the
// functions, and its code (read through f, which must still be open) the
// call sites. It supports the architectures internal/callsites
// disassembles: amd64, 386 and arm64.
func Build(f *objscan.File) (*Graph, error) {
	if len(f.Funcs) == 0 {
		return nil, fmt.Errorf("synth: no functions")
	}
	dec := callsites.For(f.GOARCH)
	if dec == nil {
		return nil, fmt.Errorf("synth: disassembly of %s is not supported (amd64, 386 and arm64 are)", f.GOARCH)
	}
	secs, err := f.Code()
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	if objscan.CodeAt(secs, f.Funcs[0].Entry, f.Funcs[0].Entry+1) == nil {
		return nil, fmt.Errorf("synth: no executable section holds the first function's entry %#x", f.Funcs[0].Entry)
	}
	g := &Graph{names: make([]string, len(f.Funcs)), sites: make([][]Site, len(f.Funcs))}
	for _, sec := range secs {
		g.stats.TextBytes += len(sec.Data)
	}
	entries := make([]uint64, len(f.Funcs))
	for i := range f.Funcs {
		entries[i] = f.Funcs[i].Entry
		g.names[i] = f.Funcs[i].Name
	}
	last := f.Funcs[len(f.Funcs)-1].End
	funcAt := func(pc uint64) int {
		if pc < entries[0] || pc >= last {
			return -1
		}
		return sort.Search(len(entries), func(i int) bool { return entries[i] > pc }) - 1
	}
	called := make([]bool, len(f.Funcs))
	var calls []callsites.Call
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if fn.PCSP == 0 {
			g.stats.NoTables++
			continue
		}
		size := fn.Size
		if size == 0 {
			size = fn.End - fn.Entry
		}
		code := objscan.CodeAt(secs, fn.Entry, fn.Entry+size)
		if uint64(len(code)) != size {
			g.stats.MissingFuncs++
			continue
		}
		g.stats.Funcs++
		var bad int
		calls, bad = dec.Calls(calls[:0], code, fn.Entry)
		g.stats.DecodeErrors += bad
		for _, c := range calls {
			if !c.Direct {
				continue
			}
			callee := funcAt(c.Target)
			if callee < 0 {
				g.stats.OutsideText++
				continue
			}
			if f.Funcs[callee].PCSP == 0 {
				g.stats.NoTableCalls++
				continue
			}
			if cold(g.names[callee]) {
				g.stats.Cold++
				continue
			}
			g.sites[i] = append(g.sites[i], Site{Ret: c.Ret, Callee: callee})
			called[callee] = true
			g.stats.Calls++
		}
		if n := len(g.sites[i]); n > 0 {
			g.stats.FuncsWithCall++
			g.stats.LongestCalls = max(g.stats.LongestCalls, n)
		}
	}
	g.runtime = make([]bool, len(g.names))
	for i, name := range g.names {
		g.runtime[i] = isRuntime(name)
	}
	for i := range g.sites {
		if !called[i] && len(g.sites[i]) > 0 {
			g.roots = append(g.roots, i)
			if !g.runtime[i] {
				g.userRoots = append(g.userRoots, i)
			}
		}
	}
	g.stats.Roots = len(g.roots)
	if len(g.roots) == 0 {
		return nil, fmt.Errorf("synth: the call graph has no roots (%d direct calls)", g.stats.Calls)
	}
	return g, nil
}

// RuntimeTail is the number of innermost frames of a synthetic stack
// below which the walk stops preferring functions outside the runtime.
const RuntimeTail = 4

// isRuntime reports whether the named function belongs to the runtime.
func isRuntime(name string) bool {
	return strings.HasPrefix(name, "runtime.") || strings.HasPrefix(name, "internal/runtime/")
}

// cold reports whether calls to the named function are left out of the
// graph (see the package documentation).
func cold(name string) bool {
	return strings.HasPrefix(name, "runtime.morestack") || strings.HasPrefix(name, "runtime.panic")
}

// computeHeights sets height[f] to the largest number of frames a walk
// that starts in f can record, capped at limit: 0 for a function without
// call sites, else one more than the largest height of a callee. Cycles
// reach the cap. userHeight is the same for walks that stay outside the
// runtime.
func (g *Graph) computeHeights(limit int32) {
	if g.hcap == limit && g.height != nil {
		return
	}
	g.hcap = limit
	g.height = heights(g.sites, limit, nil)
	g.userHeight = heights(g.sites, limit, g.runtime)
}

// heights computes capped longest walks over the sites, leaving out the
// functions skip marks.
func heights(sites [][]Site, limit int32, skip []bool) []int32 {
	h := make([]int32, len(sites))
	for changed := true; changed; {
		changed = false
		for f, ss := range sites {
			if skip != nil && skip[f] {
				continue
			}
			best := int32(0)
			for _, s := range ss {
				if skip != nil && skip[s.Callee] {
					continue
				}
				best = max(best, min(limit, 1+h[s.Callee]))
			}
			if best > h[f] {
				h[f] = best
				changed = true
			}
		}
	}
	return h
}

// Stats returns what Build found.
func (g *Graph) Stats() Stats { return g.stats }

// Sites returns the direct call sites of function i (an index into
// objscan.File.Funcs), in address order.
func (g *Graph) Sites(i int) []Site {
	if i < 0 || i >= len(g.sites) {
		return nil
	}
	return g.sites[i]
}

// Roots returns the functions that stacks start from: those no direct call
// reaches that make at least one call.
func (g *Graph) Roots() []int { return g.roots }

// Options controls how stacks are drawn.
type Options struct {
	Seed     uint64 // seed of the PRNG
	MinDepth int    // smallest target depth; 0 means 4
	MaxDepth int    // largest target depth; 0 means 40
}

// Stacks draws n stacks from the call graph as the package documentation
// describes. The same options give the same stacks.
func (g *Graph) Stacks(n int, opt Options) ([]runtimeshim.Stack, error) {
	lo, hi := opt.MinDepth, opt.MaxDepth
	if lo == 0 {
		lo = 4
	}
	if hi == 0 {
		hi = max(40, lo)
	}
	if lo < 1 || hi < lo {
		return nil, fmt.Errorf("synth: bad depth range [%d, %d]", lo, hi)
	}
	if n < 0 {
		return nil, fmt.Errorf("synth: negative number of stacks %d", n)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	stacks := make([]runtimeshim.Stack, n)
	var walk []uint64
	var cand []Site
	g.computeHeights(int32(hi))
	for k := range stacks {
		d := lo + rng.IntN(hi-lo+1)
		roots := g.roots
		if len(g.userRoots) > 0 {
			roots = g.userRoots
		}
		fn := roots[rng.IntN(len(roots))]
		walk = walk[:0]
		inRuntime := 0 // frames recorded in runtime functions
		for len(walk) < d && len(g.sites[fn]) > 0 && inRuntime < RuntimeTail {
			// Draw among the sites whose callee can still give the
			// frames wanted after this one; failing that, among those
			// that give the most.
			want := int32(d - len(walk) - 1)
			userWant := want - RuntimeTail
			cand = cand[:0]
			best := int32(-1)
			if userWant >= 0 && !g.runtime[fn] {
				// Outside the runtime, stay outside while the tail is
				// not reached.
				for _, s := range g.sites[fn] {
					if g.runtime[s.Callee] {
						continue
					}
					score := min(g.userHeight[s.Callee], userWant)
					if score > best {
						best, cand = score, cand[:0]
					}
					if score == best {
						cand = append(cand, s)
					}
				}
			}
			if len(cand) == 0 {
				for _, s := range g.sites[fn] {
					score := min(g.height[s.Callee], want)
					if score > best {
						best, cand = score, cand[:0]
					}
					if score == best {
						cand = append(cand, s)
					}
				}
			}
			s := cand[rng.IntN(len(cand))]
			if g.runtime[fn] {
				inRuntime++
			}
			walk = append(walk, s.Ret)
			fn = s.Callee
		}
		pcs := make([]uint64, len(walk))
		for i, pc := range walk {
			pcs[len(walk)-1-i] = pc
		}
		stacks[k] = runtimeshim.Stack{PCs: pcs}
	}
	return stacks, nil
}
