package runtimeshim

// inlineUnwinder mirrors runtime.inlineUnwinder: it iterates over the
// logical frames at one PC of a physical function, innermost first.
type inlineUnwinder struct {
	s       *Shim
	f       funcInfo
	inlTree []inlinedCall
}

// inlineFrame mirrors runtime.inlineFrame.
type inlineFrame struct {
	pc    uint64 // the PC of this frame; 0 when the iteration is over
	index int32  // index of the frame in inlTree, or -1 for the physical function
}

// newInlineUnwinder mirrors runtime.newInlineUnwinder: without an inline
// tree the PC is the physical function; with one, the InlTreeIndex at pc
// tells the innermost frame.
func (s *Shim) newInlineUnwinder(f funcInfo, pc uint64) (inlineUnwinder, inlineFrame) {
	if funcdata(f, funcdataInlTree) == 0 {
		return inlineUnwinder{s: s, f: f}, inlineFrame{pc: pc, index: -1}
	}
	u := inlineUnwinder{s: s, f: f, inlTree: f.inlTree}
	return u, u.resolveInternal(pc)
}

func (u *inlineUnwinder) resolveInternal(pc uint64) inlineFrame {
	return inlineFrame{
		pc: pc,
		// A PC past the end of the tree means the binary is corrupt; the
		// runtime would read out of bounds. Treat it as not inlined.
		index: u.clamp(u.s.pcdatavalue1(u.f, pcdataInlTreeIndex, pc, false)),
	}
}

func (u *inlineUnwinder) clamp(i int32) int32 {
	if i >= int32(len(u.inlTree)) {
		return -1
	}
	return i
}

func (uf inlineFrame) valid() bool { return uf.pc != 0 }

// next mirrors inlineUnwinder.next: the frame of the call site, at the
// parent PC the inline tree records.
func (u *inlineUnwinder) next(uf inlineFrame) inlineFrame {
	if uf.index < 0 {
		uf.pc = 0
		return uf
	}
	parentPc := u.inlTree[uf.index].parentPc
	return u.resolveInternal(u.f.entry() + uint64(int64(parentPc)))
}

func (u *inlineUnwinder) isInlined(uf inlineFrame) bool { return uf.index >= 0 }

// srcFunc mirrors inlineUnwinder.srcFunc.
func (u *inlineUnwinder) srcFunc(uf inlineFrame) srcFunc {
	if uf.index < 0 {
		return u.f.srcFunc()
	}
	t := &u.inlTree[uf.index]
	return srcFunc{u.f.datap, t.nameOff, t.startLine, t.funcID}
}

// fileLine mirrors inlineUnwinder.fileLine: funcline1, non-strict.
func (u *inlineUnwinder) fileLine(uf inlineFrame) (file string, line int) {
	file, line32 := u.s.funcline1(u.f, uf.pc, false)
	return file, int(line32)
}
