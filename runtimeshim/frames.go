package runtimeshim

// Frame mirrors runtime.Frame: one logical frame, as runtime.CallersFrames
// returns it.
type Frame struct {
	// PC is the PC the frame was looked up at: normally one less than the
	// PC in the list (a return address, or an inline mark plus one).
	PC uint64
	// Function is the name as runtime.Frame.Function gives it, shape
	// arguments of generic functions printed as "[...]".
	Function string
	File     string
	Line     int
	// Entry is the entry PC of the physical function that holds PC.
	Entry uint64
	// Inlined reports that the frame is an inlined call (runtime.Frame.Func
	// is nil).
	Inlined   bool
	StartLine int

	funcInfo funcInfo
}

// Frames mirrors runtime.Frames, the iterator CallersFrames returns.
type Frames struct {
	s          *Shim
	callers    []uint64
	nextPC     uint64
	frames     []Frame
	frameStore [2]Frame
}

// CallersFrames mirrors runtime.CallersFrames: it returns an iterator over
// the logical frames of callers, a list of return PCs as runtime.Callers
// writes it (one PC per logical frame, each one past the PC to look up).
func (s *Shim) CallersFrames(callers []uint64) *Frames {
	ci := &Frames{s: s, callers: callers}
	ci.frames = ci.frameStore[:0]
	return ci
}

// Next mirrors runtime.(*Frames).Next: it returns the next frame and
// whether another follows. PCs outside every function are skipped; when a
// PC of an inlined frame is not followed by the PC of its caller, the
// caller's PC is synthesized (unless the caller is an elided wrapper).
func (ci *Frames) Next() (frame Frame, more bool) {
	s := ci.s
	for len(ci.frames) < 2 {
		if len(ci.callers) == 0 {
			break
		}
		var pc uint64
		if ci.nextPC != 0 {
			pc, ci.nextPC = ci.nextPC, 0
		} else {
			pc, ci.callers = ci.callers[0], ci.callers[1:]
		}
		funcInfo := s.findfunc(pc)
		if !funcInfo.valid() {
			continue // no cgo symbolizer here
		}
		entry := funcInfo.entry()
		if pc > entry {
			pc--
		}
		u, uf := s.newInlineUnwinder(funcInfo, pc)
		sf := u.srcFunc(uf)
		inlined := u.isInlined(uf)
		if inlined {
			steps := len(u.inlTree) + 1
			for unext := u.next(uf); unext.valid() && len(ci.callers) > 0 && ci.callers[0] != unext.pc+1 && steps > 0; unext = u.next(unext) {
				steps--
				snext := u.srcFunc(unext)
				if s.md.isWrapper(snext.funcID) && s.md.elideWrapperCalling(sf.funcID) {
					continue
				}
				ci.nextPC = unext.pc + 1
				break
			}
		}
		ci.frames = append(ci.frames, Frame{
			PC:        pc,
			Function:  FuncNameForPrint(sf.name()),
			Entry:     entry,
			Inlined:   inlined,
			StartLine: int(sf.startLine),
			funcInfo:  funcInfo,
		})
	}
	switch len(ci.frames) {
	case 0:
		return
	case 1:
		frame = ci.frames[0]
		ci.frames = ci.frameStore[:0]
	case 2:
		frame = ci.frames[0]
		ci.frameStore[0] = ci.frames[1]
		ci.frames = ci.frameStore[:1]
	default:
		frame = ci.frames[0]
		ci.frames = ci.frames[1:]
	}
	more = len(ci.frames) > 0
	if frame.funcInfo.valid() {
		file, line := s.funcline1(frame.funcInfo, frame.PC, false)
		frame.File, frame.Line = file, int(line)
	}
	return
}

// FrameSymbolName mirrors runtime_FrameSymbolName, which runtime/pprof
// uses for function names: the name of the logical function at the frame's
// PC with its shape arguments spelled out.
func (s *Shim) FrameSymbolName(f *Frame) string {
	if !f.funcInfo.valid() {
		return f.Function
	}
	u, uf := s.newInlineUnwinder(f.funcInfo, f.PC)
	return u.srcFunc(uf).name()
}
