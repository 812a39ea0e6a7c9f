package stackcompress

import "fmt"

// ParentCoding says how the pages of a DAG store parent indices.
type ParentCoding uint8

const (
	// ParentAbsolute stores each parent index as it is. Every page uses
	// 8, 16, 32 or 64 bits per parent: the width of the largest index the
	// page can hold. This is the layout of the Superluminal design.
	ParentAbsolute ParentCoding = iota + 1

	// ParentDelta stores each node's index minus its parent's index, which
	// is 1 for most nodes. Every page uses 8, 16, 32 or 64 bits per delta:
	// the width of its largest delta.
	ParentDelta

	// ParentChain stores one bit per node that says whether the parent is
	// the node just before it, as it is for every node but the first that
	// one inserted stack adds. The parents of the other nodes are
	// bit-packed in a separate array, reached through a rank directory, as
	// deltas or as absolute indices, whichever needs fewer bits in the page,
	// minus the page's smallest such value.
	ParentChain
)

// String returns "absolute", "delta" or "chain".
func (c ParentCoding) String() string {
	switch c {
	case ParentAbsolute:
		return "absolute"
	case ParentDelta:
		return "delta"
	case ParentChain:
		return "chain"
	}
	return fmt.Sprintf("ParentCoding(%d)", uint8(c))
}

// A Layout says how a Builder encodes the pages of a DAG. The page
// encoding is recorded in each page, so a Reader reads every layout.
type Layout struct {
	// FrameBits is the width of a stored frame: 8, 16, 32 or 64 bits for
	// every node, or 0 to bit-pack each page's frames minus the page's
	// smallest frame in the width of the largest difference.
	FrameBits int

	// Parents selects the parent coding.
	Parents ParentCoding

	// Dictionary stores each distinct frame once, in a table written with
	// the DAG, and stores in the nodes the frame's index in that table,
	// numbered in order of first appearance. Stack returns the frames
	// themselves.
	Dictionary bool
}

// Predefined layouts, as functions so that no caller can change another's
// default. Their names are those that String returns.

// LayoutSeed is the Superluminal layout: 64-bit frames and absolute parents
// of 8, 16, 32 or 64 bits per page.
func LayoutSeed() Layout { return Layout{FrameBits: 64, Parents: ParentAbsolute} }

// LayoutFrame32 is LayoutSeed with 32-bit frames, for frames that are known
// to fit, such as offsets into a binary's text.
func LayoutFrame32() Layout { return Layout{FrameBits: 32, Parents: ParentAbsolute} }

// LayoutDelta32 is LayoutFrame32 with delta-coded parents.
func LayoutDelta32() Layout { return Layout{FrameBits: 32, Parents: ParentDelta} }

// LayoutPacked bit-packs everything: frames are dictionary indices packed
// per page, and parents use ParentChain.
func LayoutPacked() Layout { return Layout{FrameBits: 0, Parents: ParentChain, Dictionary: true} }

// String names the layout, for example "f64-absolute" or "fpack-chain-dict".
func (l Layout) String() string {
	f := "fpack"
	if l.FrameBits != 0 {
		f = fmt.Sprintf("f%d", l.FrameBits)
	}
	s := f + "-" + l.Parents.String()
	if l.Dictionary {
		s += "-dict"
	}
	return s
}

// validate reports whether the layout is one a Builder can write.
func (l Layout) validate() error {
	switch l.FrameBits {
	case 0, 8, 16, 32, 64:
	default:
		return fmt.Errorf("stackcompress: layout %v: frame width %d is not 0, 8, 16, 32 or 64", l, l.FrameBits)
	}
	switch l.Parents {
	case ParentAbsolute, ParentDelta, ParentChain:
	default:
		return fmt.Errorf("stackcompress: layout %v: unknown parent coding %d", l, uint8(l.Parents))
	}
	return nil
}

// ParseLayout parses a layout name as String writes it, or one of the
// names "seed", "frame32", "delta32" and "packed".
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "seed":
		return LayoutSeed(), nil
	case "frame32":
		return LayoutFrame32(), nil
	case "delta32":
		return LayoutDelta32(), nil
	case "packed":
		return LayoutPacked(), nil
	}
	for _, fb := range []int{0, 8, 16, 32, 64} {
		for _, pc := range []ParentCoding{ParentAbsolute, ParentDelta, ParentChain} {
			for _, d := range []bool{false, true} {
				l := Layout{FrameBits: fb, Parents: pc, Dictionary: d}
				if l.String() == s {
					return l, nil
				}
			}
		}
	}
	return Layout{}, fmt.Errorf("stackcompress: unknown layout %q", s)
}
