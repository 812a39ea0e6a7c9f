package runtimeshim

import (
	"debug/gosym"
	"fmt"
	"strings"

	"github.com/pctab/pctab/stackinput"
)

// A Mismatch is a recorded frame that the shim symbolizes differently.
type Mismatch struct {
	Stack int    // index of the stack in the corpus (trace), or of the sample (profile)
	Loc   int    // index of the location in the corpus
	Frame int    // index of the logical frame in the stack (trace) or in the location (profile)
	PC    uint64 // the recorded PC
	What  string // the fields that differ: "function", "file", "line", "pc", or "missing"/"extra"
	Want  stackinput.Line
	Got   stackinput.Line
	GotPC uint64 // the PC the shim looked up, plus the slide
}

// String says which frame differs and how, as the replay command prints it.
func (m Mismatch) String() string {
	return fmt.Sprintf("stack %d frame %d (location %d, pc %#x): %s differ: recorded %s %s:%d, shim %s %s:%d at pc %#x",
		m.Stack, m.Frame, m.Loc, m.PC, m.What, m.Want.Func, m.Want.File, m.Want.Line, m.Got.Func, m.Got.File, m.Got.Line, m.GotPC)
}

// A CheckResult is the outcome of checking recorded frames against the
// shim's symbolization.
type CheckResult struct {
	Stacks     int        // distinct stacks (trace) or locations (profile) checked
	Frames     int        // logical frames checked
	Mismatches []Mismatch // the first mismatches, up to the limit asked for
	Mismatched int        // all frames that disagree
}

func (r *CheckResult) add(m Mismatch, limit int) {
	r.Mismatched++
	if len(r.Mismatches) < limit {
		r.Mismatches = append(r.Mismatches, m)
	}
}

// diff names the fields in which two lines differ, or returns "".
func diff(want, got stackinput.Line, wantPC, gotPC uint64) string {
	var w []string
	if want.Func != got.Func {
		w = append(w, "function")
	}
	if want.File != got.File {
		w = append(w, "file")
	}
	if want.Line != got.Line {
		w = append(w, "line")
	}
	if wantPC != gotPC {
		w = append(w, "pc")
	}
	return strings.Join(w, ",")
}

// CheckTrace checks every distinct stack of an execution trace: it gives
// the recorded PCs (minus slide), each plus one, to CallersFrames, as the
// runtime's tracer gave the PCs it had unwound when it wrote the stack, and
// compares each frame's PC, function, file and line with the recorded one.
// It keeps up to limit mismatches.
func (s *Shim) CheckTrace(c *stackinput.Corpus, slide uint64, limit int) CheckResult {
	var r CheckResult
	var pcs []uint64
	for si := 0; si < c.NumStacks(); si++ {
		locs := c.Stack(uint32(si))
		r.Stacks++
		pcs = pcs[:0]
		for _, li := range locs {
			if pc := c.Locations[li].PC; pc != 0 {
				pcs = append(pcs, pc-slide+1)
			}
		}
		// makeTraceFrames: at least one frame, a zero one when no PC
		// belongs to a function.
		ci := s.CallersFrames(pcs)
		var got []Frame
		for {
			f, more := ci.Next()
			got = append(got, f)
			if !more {
				break
			}
		}
		for i := 0; i < max(len(locs), len(got)); i++ {
			var want stackinput.Line
			var wantPC uint64
			li := -1
			if i < len(locs) {
				li = int(locs[i])
				loc := &c.Locations[li]
				wantPC = loc.PC
				if len(loc.Lines) > 0 {
					want = loc.Lines[0]
				}
				r.Frames++
			}
			var g stackinput.Line
			var gotPC uint64
			if i < len(got) {
				f := &got[i]
				g = stackinput.Line{Func: f.Function, File: f.File, Line: int64(f.Line)}
				if f.PC != 0 {
					gotPC = f.PC + slide
				}
			}
			m := Mismatch{Stack: si, Loc: li, Frame: i, PC: wantPC, Want: want, Got: g, GotPC: gotPC}
			switch {
			case i >= len(locs):
				m.What = "extra"
			case i >= len(got):
				m.What = "missing"
			default:
				m.What = diff(want, g, wantPC, gotPC)
			}
			if m.What != "" {
				r.add(m, limit)
			}
		}
	}
	return r
}

// CheckPprof checks every location of a CPU profile written by
// runtime/pprof: it looks up the location's address as runtime/pprof does
// (CallersFrames of the address plus one) and expands the inlined calls as
// runtime/pprof merges them into one location, naming functions by their
// symbol names, and compares every line. A profile has one function record
// per name, whose file is that of the first frame of that name
// runtime/pprof met, so a line's file is checked against the file the
// shim finds for the first line of that name in sample order, which is the
// order in which runtime/pprof made the locations. Wrapper elision depends
// on the callee, so each location is checked in the context of the first
// sample that holds it. It keeps up to limit mismatches.
func (s *Shim) CheckPprof(c *stackinput.Corpus, slide uint64, limit int) CheckResult {
	var r CheckResult
	done := make([]bool, len(c.Locations))
	funcFile := map[string]string{}
	for smpIdx, smp := range c.Samples {
		calleeID := uint8(0)
		for _, li := range c.Stack(smp.Stack) {
			loc := &c.Locations[li]
			if done[li] {
				calleeID = s.physicalFuncID(loc.PC - slide)
				continue
			}
			done[li] = true
			r.Stacks++
			got, gotPC := s.locationLines(loc.PC-slide, calleeID)
			calleeID = s.physicalFuncID(loc.PC - slide)
			// runtime/pprof writes one Function per name, with the file
			// of the first frame of that name it met; locations are met
			// in the order of the samples, as they are checked here.
			for i := range got {
				if file, ok := funcFile[got[i].Func]; ok {
					got[i].File = file
				} else {
					funcFile[got[i].Func] = got[i].File
				}
			}
			for i := 0; i < max(len(loc.Lines), len(got)); i++ {
				m := Mismatch{Stack: smpIdx, Loc: int(li), Frame: i, PC: loc.PC, GotPC: gotPC + slide}
				switch {
				case i >= len(loc.Lines):
					m.What, m.Got = "extra", got[i]
				case i >= len(got):
					m.What, m.Want = "missing", loc.Lines[i]
					r.Frames++
				default:
					m.Want, m.Got = loc.Lines[i], got[i]
					m.What = diff(m.Want, m.Got, loc.PC, gotPC+slide)
					r.Frames++
				}
				if m.What != "" {
					r.add(m, limit)
				}
			}
		}
	}
	return r
}

// physicalFuncID returns the FuncID of the function at pc, or 0.
func (s *Shim) physicalFuncID(pc uint64) uint8 {
	if f := s.findfunc(pc + 1); f.valid() {
		return f.funcID
	}
	return 0
}

// locationLines returns the lines runtime/pprof writes for a location at
// address pc (the PC looked up) and the PC it records as the address.
func (s *Shim) locationLines(addr uint64, calleeID uint8) ([]stackinput.Line, uint64) {
	md := s.md
	// allFrames: CallersFrames of the return PC.
	ret := addr + 1
	f := s.findfunc(ret)
	if !f.valid() {
		// Not a Go function: one line without a function, at addr.
		return []stackinput.Line{{}}, addr
	}
	pc := ret
	if pc > f.entry() {
		pc--
	}
	iu, uf := s.newInlineUnwinder(f, pc)
	var lines []stackinput.Line
	lastName := ""
	lastInlined := false
	steps := len(iu.inlTree) + 1
	for ; uf.valid() && steps > 0; uf = iu.next(uf) {
		steps--
		sf := iu.srcFunc(uf)
		if md.isWrapper(sf.funcID) && md.elideWrapperCalling(calleeID) {
			calleeID = sf.funcID
			continue // tracebackPCs wrote no PC for it
		}
		calleeID = sf.funcID
		name := sf.name()
		if len(lines) > 0 && (!lastInlined || name == lastName) {
			break // pcDeck.tryAdd would start a new location
		}
		file, line := s.funcline1(f, uf.pc, false)
		lines = append(lines, stackinput.Line{Func: name, File: file, Line: int64(line)})
		lastName, lastInlined = name, iu.isInlined(uf)
	}
	return lines, pc
}

// CheckGosym checks every distinct physical frame of stacks against
// debug/gosym, which decodes the same pclntab independently: the function
// that holds the frame's call PC (the return PC minus one) and the
// innermost file and line there, as PCToLine gives them, must be the
// physical function and the innermost file and line the shim finds. It
// is the check for stacks that no runtime recorded, such as synthetic ones.
// A function without a pcfile or pcln table has the runtime's answer,
// "?" and 0, which gosym does not give. It keeps up to limit mismatches.
func (s *Shim) CheckGosym(stacks []Stack, limit int) (CheckResult, error) {
	var r CheckResult
	obj := s.md.obj
	lt := gosym.NewLineTable(obj.GoPclntab(), obj.TextStart)
	tab, err := gosym.NewTable(nil, lt)
	if err != nil {
		return r, fmt.Errorf("runtimeshim: debug/gosym: %w", err)
	}
	seen := map[uint64]bool{}
	for si, st := range stacks {
		for fi, ret := range st.PCs {
			if seen[ret] {
				continue
			}
			seen[ret] = true
			r.Frames++
			m := Mismatch{Stack: si, Loc: -1, Frame: fi, PC: ret}
			idx, ok := s.md.findfuncIndex(ret)
			f := s.findfunc(ret)
			if !ok || !f.valid() {
				m.What = "missing"
				r.add(m, limit)
				continue
			}
			sym := ret
			if ret > f.entry() {
				sym--
			}
			file, line := s.funcline1(f, sym, false)
			m.Got = stackinput.Line{Func: s.md.names[idx], File: file, Line: int64(line)}
			m.GotPC = sym
			gfile, gline, gfn := tab.PCToLine(sym)
			if gfn != nil {
				m.Want.Func = gfn.Name
			}
			m.Want.File, m.Want.Line = gfile, int64(gline)
			if gfile == "" && gline == 0 {
				// gosym reports no position where the tables end before
				// the PC; the runtime reports "?".
				m.Want.File = "?"
			}
			if fn := &obj.Funcs[idx]; fn.PCFile == 0 || fn.PCLn == 0 {
				// A function without a pcfile or pcln table (the C code
				// of the race runtime in a -race build): the runtime
				// reports "?", 0, while gosym decodes the bytes at the
				// start of the pctab as the table and reports lines such
				// as -29.
				m.Want.File, m.Want.Line = "?", 0
			}
			if m.What = diff(m.Want, m.Got, sym, sym); m.What != "" {
				r.add(m, limit)
			}
		}
		r.Stacks++
	}
	return r, nil
}
