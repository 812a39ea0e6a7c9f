package stackinput

import (
	"errors"
	"fmt"
	"math"
)

// A FrameMapper turns locations into the integer frames a DAG stores.
// Implementations for symbolized frames from other sources plug in here.
type FrameMapper interface {
	// Name names the frame kind in reports: "pc", "text" or "line".
	Name() string
	// AppendFrames appends the frames of loc to dst, innermost first, and
	// returns the extended slice.
	AppendFrames(dst []uint64, loc Location) ([]uint64, error)
}

// PCFrames maps each location to one frame: its PC.
type PCFrames struct{}

// Name returns "pc".
func (PCFrames) Name() string { return "pc" }

// AppendFrames appends loc.PC.
func (PCFrames) AppendFrames(dst []uint64, loc Location) ([]uint64, error) {
	return append(dst, loc.PC), nil
}

// NoPC is the text-offset frame that stands for PC 0, which execution
// traces record for frames they could not resolve.
const NoPC = math.MaxUint32

// TextOffsetFrames maps each location to one 32-bit frame: its PC minus
// the base of the binary's text. PC 0 maps to NoPC. A Go binary's text is
// far smaller than 4 GiB, so every PC of the binary fits.
type TextOffsetFrames struct {
	Base uint64 // the text base: the runtime.text symbol of the binary, or the lowest PC seen
}

// Name returns "text".
func (TextOffsetFrames) Name() string { return "text" }

// ErrOutsideText reports a PC that is not within 4 GiB above the text base.
var ErrOutsideText = errors.New("stackinput: PC outside the text")

// AppendFrames appends loc.PC - m.Base.
func (m TextOffsetFrames) AppendFrames(dst []uint64, loc Location) ([]uint64, error) {
	if loc.PC == 0 {
		return append(dst, NoPC), nil
	}
	if loc.PC < m.Base || loc.PC-m.Base >= NoPC {
		return dst, fmt.Errorf("%w: PC %#x, text base %#x", ErrOutsideText, loc.PC, m.Base)
	}
	return append(dst, loc.PC-m.Base), nil
}

// PC returns the PC of a frame that AppendFrames produced.
func (m TextOffsetFrames) PC(frame uint64) uint64 {
	if frame == NoPC {
		return 0
	}
	return m.Base + frame
}

// LowestPC returns the lowest nonzero PC among locs, or 0 if there is none:
// a text base for TextOffsetFrames when the binary is not at hand.
func LowestPC(locs []Location) uint64 {
	var lo uint64
	for _, l := range locs {
		if l.PC != 0 && (lo == 0 || l.PC < lo) {
			lo = l.PC
		}
	}
	return lo
}

// LineFrames maps each logical frame of a location, innermost first, to a
// dense index of its (function, file, line), numbered in order of first
// appearance.
//
// This is the project's choice of logical frame, over a PC plus an inline
// depth, for these reasons:
//   - An execution trace already gives every inlined call a PC of its own,
//     so on traces a PC plus depth is no finer than the PC, and deriving
//     depths from physical PCs needs the binary's inline trees.
//   - Dense indices bit-pack narrowly without a dictionary, and PCs on one
//     line share a node: on the net/http test trace, 59,623 nodes at 2.07 B
//     per node, against 60,546 nodes at 2.53 B per node (dictionary
//     included) for PCs.
//   - Function and line are what profile viewers show, and they survive a
//     rebuild that moves code without changing the source.
//
// The price: the exact PC is gone, so no instruction-level attribution,
// and turning indices back into names needs the symbol table that
// TableBytes sizes (196,652 B on that trace, more than the DAG itself,
// though any symbolized display needs those strings anyway).
type LineFrames struct {
	index   map[Line]uint64
	lines   []Line
	strings map[string]bool
	strLen  uint64
}

// NewLineFrames returns an empty LineFrames.
func NewLineFrames() *LineFrames {
	return &LineFrames{index: make(map[Line]uint64), strings: make(map[string]bool)}
}

// Name returns "line".
func (*LineFrames) Name() string { return "line" }

// AppendFrames appends the index of each of loc's lines, adding new lines
// to the table. A location without lines is an error.
func (m *LineFrames) AppendFrames(dst []uint64, loc Location) ([]uint64, error) {
	if len(loc.Lines) == 0 {
		return dst, fmt.Errorf("stackinput: location at PC %#x has no symbol information", loc.PC)
	}
	for _, l := range loc.Lines {
		id, ok := m.index[l]
		if !ok {
			id = uint64(len(m.lines))
			m.index[l] = id
			m.lines = append(m.lines, l)
			for _, s := range []string{l.Func, l.File} {
				if !m.strings[s] {
					m.strings[s] = true
					m.strLen += uint64(len(s))
				}
			}
		}
		dst = append(dst, id)
	}
	return dst, nil
}

// Line returns the logical frame of a frame index that AppendFrames
// produced.
func (m *LineFrames) Line(frame uint64) (Line, bool) {
	if frame >= uint64(len(m.lines)) {
		return Line{}, false
	}
	return m.lines[frame], true
}

// Len returns the number of distinct logical frames.
func (m *LineFrames) Len() int { return len(m.lines) }

// TableBytes returns the size of the table that turns frame indices back
// into logical frames, stored compactly: 12 bytes per frame (function
// string index, file string index and line, 4 bytes each) plus the bytes
// of the distinct strings.
func (m *LineFrames) TableBytes() uint64 {
	return 12*uint64(len(m.lines)) + m.strLen
}
