package objscan

import "fmt"

// FUNCDATA and PCDATA ids used by objscan.
const (
	FuncDataInlTree   = 3
	PCDataInlTreeIdx  = 2
	inlEntrySize      = 16 // Go 1.20+ layout: funcID, pad, nameOff, parentPc, startLine
	inlEntrySizeOld   = 20 // Go 1.12–1.19: parent, funcID, pad, file, line, nameOff, parentPc
	inlEntrySize19    = 16 // Go 1.9–1.11: parent (int32), file, line, nameOff
	maxInlTreeEntries = 1 << 20
)

// inlTreeSlot returns the FUNCDATA id of the inline tree, and inlIndex the
// PCDATA id of the InlTreeIndex table, or -1 where the release had none.
// From runtime/funcdata.h of each release:
//
//	go1.2–go1.8    no inline trees
//	go1.9–go1.12   PCDATA_InlTreeIndex 1, FUNCDATA_InlTree 2
//	go1.13–go1.15  PCDATA_InlTreeIndex 2, FUNCDATA_InlTree 4
//	go1.16 on      PCDATA_InlTreeIndex 2, FUNCDATA_InlTree 3
//
// A go1.2-layout binary of unknown version (no build info and no
// runtime.buildVersion symbol) is read as go1.13–go1.15.
func (f *File) inlTreeSlot() int {
	if f.releaseMagic() != Go12Magic {
		return FuncDataInlTree
	}
	switch v := f.layoutMinor(); {
	case v < 0 || v >= 13:
		return 4
	case v >= 9:
		return 2
	}
	return -1
}

// inlIndex returns the PCDATA id of the InlTreeIndex table; see inlTreeSlot.
func (f *File) inlIndex() int {
	if f.releaseMagic() != Go12Magic {
		return PCDataInlTreeIdx
	}
	switch v := f.layoutMinor(); {
	case v < 0 || v >= 13:
		return PCDataInlTreeIdx
	case v >= 9:
		return 1
	}
	return -1
}

// inlLayout19 reports whether inline tree entries use the 16-byte layout of
// go1.9–go1.11: parent (int32), file, line, nameOff, and no parentPc.
func (f *File) inlLayout19() bool {
	v := f.layoutMinor()
	return f.releaseMagic() == Go12Magic && v >= 9 && v <= 11
}

// newInlLayout reports whether inline tree entries use the 16-byte layout
// that came with the Go 1.20 pclntab (with startLine instead of file/line).
// A replace-mode pclntab has the Go 1.20 layout whatever the release
// (rewrite-binary converts older records), but the inline trees in the
// funcdata keep the release's format.
func (f *File) newInlLayout() bool {
	return f.releaseMagic() == Go120Magic
}

// releaseMagic returns the magic of the pclntab layout of the release that
// built f: f.Magic, or for a replace-mode pclntab, which has the Go 1.20
// layout whatever the release, that of the release the build info (or
// runtime.buildVersion) names; the current layout if it names none.
func (f *File) releaseMagic() uint32 {
	if f.Linear == nil || f.Linear.Mode != "replace" {
		return f.Magic
	}
	switch m := goMinor(f.GoVersion); {
	case m >= 0 && m <= 15:
		return Go12Magic
	case m == 16 || m == 17:
		return Go116Magic
	case m == 18 || m == 19:
		return Go118Magic
	}
	return Go120Magic
}

// decodeInlTreesAnyRelease decodes each function's inline tree. A
// go1.2-layout binary of unknown version (a build before Go 1.13 stripped
// of its symbols, without build info or runtime.buildVersion) is read as
// go1.13-1.15 (inlTreeSlot); if its trees do not decode so, they are read
// as go1.12's, whose inline trees sit in other FUNCDATA and PCDATA slots.
// One whose _func records are Go 1.2-1.11's (guessRecordRelease) is read
// as go1.9-1.11's, and if its trees do not decode so, as a release before
// Go 1.9, which wrote none.
func (f *File) decodeInlTreesAnyRelease() error {
	err := f.decodeInlTrees()
	if err == nil || f.Magic != Go12Magic || goMinor(f.GoVersion) >= 0 {
		return err
	}
	if f.guessedMinor == 9 || f.guessedMinor == 11 {
		for i := range f.Funcs {
			f.Funcs[i].InlTree = nil
		}
		f.guessedMinor = 8
		return nil
	}
	for i := range f.Funcs {
		f.Funcs[i].InlTree = nil
	}
	f.guessedMinor = 12
	if f.decodeInlTrees() == nil {
		return nil
	}
	for i := range f.Funcs {
		f.Funcs[i].InlTree = nil
	}
	f.guessedMinor = 0
	return err
}

// decodeInlTrees decodes each function's inline tree.
//
// A tree is decoded once per (address, InlTreeIndex table, compilation unit)
// and shared by every function that names the same one, so a hostile file
// that points many functions at one tree costs one tree. Distinct trees are
// charged against a budget of entries proportional to the bytes that could
// back them (the file's size): the linker stores each tree once, so a real
// binary stays far below it, and a file whose trees overlap to claim more
// entries than it has bytes gets an error instead of gigabytes.
func (f *File) decodeInlTrees() error {
	slot, idx := f.inlTreeSlot(), f.inlIndex()
	if slot < 0 || idx < 0 {
		return nil // no inline trees before go1.9
	}
	size, _ := f.inlEntryLayout()
	budget := inlTreeBudget(f.FileSize, uint64(len(f.pcln)), size)
	// Inlined functions recur in many trees: share their name strings.
	names := map[uint32]string{}
	type treeKey struct {
		addr uint64
		tab  uint32
		cu   uint32 // the old layout's file indexes are CU-relative from Go 1.16
	}
	ntrees := 0
	for i := range f.Funcs {
		if fn := &f.Funcs[i]; len(fn.FuncData) > slot && len(fn.PCData) > idx && fn.PCData[idx] != 0 {
			ntrees++
		}
	}
	trees := make(map[treeKey][]InlinedCall, ntrees)
	var win window // the trees lie close together: read them a window at a time
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if len(fn.FuncData) <= slot || len(fn.PCData) <= idx || fn.PCData[idx] == 0 {
			continue
		}
		addr, ok, err := f.inlTreeAddr(fn, slot)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t := f.Table(fn.PCData[idx])
		if t == nil || t.MaxVal < 0 {
			continue
		}
		key := treeKey{addr: addr, tab: t.Offset, cu: f.inlFileCU(fn)}
		if tree, ok := trees[key]; ok {
			fn.InlTree = tree
			continue
		}
		n := uint64(t.MaxVal) + 1
		if n > maxInlTreeEntries {
			return formatErr("pctab", int64(t.Offset), "%s: InlTreeIndex value %d is implausibly large", fn.Name, t.MaxVal)
		}
		if n > budget {
			return formatErr("funcdata", -1, "inline tree of %s at %#x: its %d entries exceed what the file's %d bytes can hold with the trees before it (overlapping trees?)", fn.Name, addr, n, f.FileSize)
		}
		budget -= n
		tree, err := f.decodeInlTree(fn, addr, n, names, f.strs, &win)
		if err != nil {
			return err
		}
		trees[key] = tree
		fn.InlTree = tree
	}
	return nil
}

// inlEntryLayout returns the size of an inline tree entry in the format
// of the release that built f, and the offset of its nameOff field.
func (f *File) inlEntryLayout() (size uint64, nameAt int) {
	switch {
	case f.newInlLayout():
		return inlEntrySize, 4
	case f.inlLayout19():
		return inlEntrySize19, 12
	}
	return inlEntrySizeOld, 12
}

// inlTreeAddr returns the address of fn's inline tree, the funcdata in
// the given slot; ok is false when the function has none.
func (f *File) inlTreeAddr(fn *Func, slot int) (addr uint64, ok bool, err error) {
	if slot < 0 || len(fn.FuncData) <= slot {
		return 0, false, nil
	}
	ref := fn.FuncData[slot]
	if f.Magic == Go12Magic || f.Magic == Go116Magic {
		return ref, ref != 0, nil // absolute pointers
	}
	if ref == NoFuncData {
		return 0, false, nil
	}
	if f.GoFuncAddr == 0 {
		return 0, false, formatErr("funcdata", -1, "%s has an inline tree but go:func.* was not found (no symbol, no moduledata)", fn.Name)
	}
	return f.GoFuncAddr + ref, true, nil
}

// InlTreeAt returns where fn's inline tree lies: its address, the size of
// one entry and the offset within an entry of its nameOff field (an offset
// into the funcnametab; before Go 1.16, into the pclntab), in the format of
// the release that built f. ok is false when fn has no inline tree. The
// tree has as many entries as the largest value of the function's
// InlTreeIndex table plus one (len(fn.InlTree) for a varint pclntab).
func (f *File) InlTreeAt(fn *Func) (addr uint64, entrySize, nameAt int, ok bool, err error) {
	addr, ok, err = f.inlTreeAddr(fn, f.inlTreeSlot())
	if !ok || err != nil {
		return 0, 0, 0, false, err
	}
	size, at := f.inlEntryLayout()
	return addr, int(size), at, true, nil
}

// inlFileCU returns the compilation unit that the file indexes of fn's
// inline tree are relative to: fn's, in the old entry layout from Go 1.16
// on; 0 where they index the global file table, or there are none.
func (f *File) inlFileCU(fn *Func) uint32 {
	if !f.newInlLayout() && f.Magic != Go12Magic {
		return fn.CUOffset
	}
	return 0
}

// InlineTree decodes the first n entries of fn's inline tree, as
// Func.InlTree holds them for a varint pclntab. It is how the trees of a
// replace-mode pclntab are read, whose sizes objscan cannot know (they are
// the largest values of linear InlTreeIndex tables): the caller gives n.
// It returns nil if fn has no inline tree. A caller that decodes many
// trees decodes them through InlineTrees.
func (f *File) InlineTree(fn *Func, n int) ([]InlinedCall, error) {
	return f.InlineTrees().Tree(fn, n)
}

// InlineTrees decodes inline trees as InlineTree does, for a caller that
// decodes the trees of many functions: their names and file names are
// read through one reader of each string table, and a tree that functions
// share (one address, entry count and compilation unit) is decoded once.
// Tree by tree through InlineTree, entries naming one long file name
// cost its table's size for each tree (the 513 trees of a rewritten Go
// 1.15 build whose 1,999 files share a 100,000-byte name: 170 MB).
type InlineTrees struct {
	f     *File
	strs  *strtabs
	names map[uint32]string
	trees map[inlTreeKey][]InlinedCall
	win   window
}

// inlTreeKey identifies a tree InlineTrees decoded.
type inlTreeKey struct {
	addr uint64
	n    int
	cu   uint32
}

// InlineTrees returns a decoder of f's inline trees.
func (f *File) InlineTrees() *InlineTrees {
	return &InlineTrees{f: f, strs: f.newStrtabs(), names: map[uint32]string{}, trees: map[inlTreeKey][]InlinedCall{}}
}

// Tree decodes the first n entries of fn's inline tree, as InlineTree
// does. Functions that name the same tree share one slice: treat it as
// read-only.
func (r *InlineTrees) Tree(fn *Func, n int) ([]InlinedCall, error) {
	f := r.f
	if n < 0 || n > maxInlTreeEntries {
		return nil, fmt.Errorf("objscan: inline tree of %s: %d entries requested", fn.Name, n)
	}
	addr, ok, err := f.inlTreeAddr(fn, f.inlTreeSlot())
	if !ok || err != nil {
		return nil, err
	}
	key := inlTreeKey{addr, n, f.inlFileCU(fn)}
	if tree, ok := r.trees[key]; ok {
		return tree, nil
	}
	tree, err := f.decodeInlTree(fn, addr, uint64(n), r.names, r.strs, &r.win)
	if err != nil {
		return nil, err
	}
	r.trees[key] = tree
	return tree, nil
}

// decodeInlTree decodes the n entries of fn's inline tree at addr. names
// caches the name strings by offset; strs reads them and the file names.
func (f *File) decodeInlTree(fn *Func, addr, n uint64, names map[uint32]string, strs *strtabs, win *window) ([]InlinedCall, error) {
	size, _ := f.inlEntryLayout()
	raw, err := f.im.view(win, addr, n*size)
	if err != nil {
		return nil, fmt.Errorf("objscan: inline tree of %s (%d entries): %w", fn.Name, n, err)
	}
	tree := make([]InlinedCall, n)
	for j := range tree {
		e := raw[uint64(j)*size:]
		c := &tree[j]
		var nameOff uint32
		switch {
		case f.newInlLayout():
			c.FuncID = e[0]
			nameOff = f.ByteOrder.Uint32(e[4:])
			c.ParentPC = int32(f.ByteOrder.Uint32(e[8:]))
			c.StartLine = int32(f.ByteOrder.Uint32(e[12:]))
			c.Parent = -2 // unknown: the new layout finds parents through parentPc
		case f.inlLayout19():
			c.Parent = int16(int32(f.ByteOrder.Uint32(e[0:])))
			file := int32(f.ByteOrder.Uint32(e[4:]))
			c.Line = int32(f.ByteOrder.Uint32(e[8:]))
			nameOff = f.ByteOrder.Uint32(e[12:])
			c.ParentPC = -1 // not recorded before go1.12
			if name, _, err := f.fileName(fn, file, &strs.files); err == nil {
				c.File = name
			}
		default:
			c.Parent = int16(f.ByteOrder.Uint16(e[0:]))
			c.FuncID = e[2]
			file := int32(f.ByteOrder.Uint32(e[4:]))
			c.Line = int32(f.ByteOrder.Uint32(e[8:]))
			nameOff = f.ByteOrder.Uint32(e[12:])
			c.ParentPC = int32(f.ByteOrder.Uint32(e[16:]))
			if name, _, err := f.fileName(fn, file, &strs.files); err == nil {
				c.File = name
			}
		}
		name, ok := names[nameOff]
		if !ok {
			var err error
			if name, err = strs.names.at(uint64(nameOff)); err != nil {
				return nil, fmt.Errorf("objscan: inline tree of %s, entry %d: %w", fn.Name, j, err)
			}
			names[nameOff] = name
		}
		c.Name, c.NameOff = name, nameOff
	}
	return tree, nil
}

// inlTreeBudget returns how many inline-tree entries a file may decode in
// all: twice what its bytes could hold if they were nothing but entries of
// the given size. fileSize is 0 when unknown (a bare pclntab in tests);
// then the pclntab's size stands in for it.
func inlTreeBudget(fileSize int64, pclnSize, entrySize uint64) uint64 {
	n := pclnSize
	if fileSize > 0 {
		n = max(n, uint64(fileSize))
	}
	return 2*n/entrySize + 1024
}

func (f *File) namesWhere() string {
	if f.Magic == Go12Magic {
		return "pclntab"
	}
	return "funcnametab"
}

// FileName returns the name of file number idx of function fn, as the
// pcfile table gives it: a per-compilation-unit index from Go 1.16 on, an
// index into the global file table before. A caller that reads many names
// reads them through FileNames.
func (f *File) FileName(fn *Func, idx int32) (string, error) {
	files := f.fileStrtab()
	name, _, err := f.fileName(fn, idx, &files)
	return name, err
}

// FileNames reads file names as FileName does, through one reader of the
// table of file names (see strtab), for a caller that reads many: a
// hostile file table whose entries all name one long string, or point
// into its middle, then costs about ten times the table once, where
// FileName costs the string's length for each entry.
type FileNames struct {
	f *File
	t strtab
}

// FileNames returns a reader of f's file names.
func (f *File) FileNames() *FileNames { return &FileNames{f: f, t: f.fileStrtab()} }

// Name returns the name of file number idx of fn, as FileName does, and
// its offset in the table of file names: the pclntab before Go 1.16, the
// filetab from Go 1.16 on.
func (r *FileNames) Name(fn *Func, idx int32) (name string, off uint32, err error) {
	return r.f.fileName(fn, idx, &r.t)
}

// Table returns the table of file names that the offsets Name returns are
// in: the pclntab before Go 1.16, the filetab from Go 1.16 on. Its names
// end with a NUL byte.
func (r *FileNames) Table() []byte { return r.t.d }

// fileName is FileName reading the name through files; it also returns
// the name's offset in files.
func (f *File) fileName(fn *Func, idx int32, files *strtab) (string, uint32, error) {
	off, err := f.fileOffset(fn, idx)
	if err != nil {
		return "", 0, err
	}
	name, err := files.at(uint64(off))
	return name, off, err
}

// fileOffset returns the offset of the name of file number idx of fn in
// the table of file names, from the global file table (before Go 1.16)
// or fn's compilation unit's.
func (f *File) fileOffset(fn *Func, idx int32) (uint32, error) {
	if idx < 0 {
		return 0, &fileError{fn.Name, idx, "negative index", nil}
	}
	if f.Magic == Go12Magic {
		if idx == 0 || int(idx) >= f.Files {
			return 0, &fileError{fn.Name, idx, "out of range", fmt.Errorf("the file table's indexes are [1,%d)", f.Files)}
		}
		r := &rd{f: f, where: "filetab", d: f.filetab}
		off := r.u32(4 * uint64(idx))
		return off, r.err
	}
	if fn.CUOffset == ^uint32(0) {
		return 0, &fileError{fn.Name, idx, "no compilation unit", nil}
	}
	r := &rd{f: f, where: "cutab", d: f.cutab}
	off := r.u32(4 * (uint64(fn.CUOffset) + uint64(idx)))
	if r.err != nil {
		return 0, &fileError{fn.Name, idx, "reading the cutab", r.err}
	}
	if off == ^uint32(0) {
		return 0, &fileError{fn.Name, idx, "removed by the linker", nil}
	}
	return off, nil
}

// fileError reports a file index of a function that names no file. It is
// formatted only when printed: the inline tree entries drop theirs (their
// file is optional), and a hostile file's function may have a long name,
// which formatting for each of its entries would cost its size per entry.
type fileError struct {
	fn  string // the function's name
	idx int32
	why string
	err error // the cause, or nil
}

func (e *fileError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("objscan: %s file %d: %s: %v", e.fn, e.idx, e.why, e.err)
	}
	return fmt.Sprintf("objscan: %s file %d: %s", e.fn, e.idx, e.why)
}

func (e *fileError) Unwrap() error { return e.err }
