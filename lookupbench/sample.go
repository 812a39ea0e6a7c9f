package lookupbench

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/pctab/pctab/objscan"
)

// PCs is a rule for choosing the PC of a sample inside its function.
type PCs int

// The PC rules; see the package documentation.
const (
	PCRandom PCs = iota // uniformly random among the PCs the table covers
	PCZero              // the function entry
	PC4096              // byte offset 4096, in tables that cover it
	PCReturn            // a return address of one of the function's calls
)

// AllPCs returns every PC rule, in report order.
func AllPCs() []PCs { return []PCs{PCRandom, PCZero, PC4096, PCReturn} }

// String returns the rule's name in benchmark names: "random", "0", "4096"
// or "ret".
func (p PCs) String() string {
	switch p {
	case PCRandom:
		return "random"
	case PCZero:
		return "0"
	case PC4096:
		return "4096"
	case PCReturn:
		return "ret"
	}
	return fmt.Sprintf("PCs(%d)", int(p))
}

// Sampling says what samples are drawn uniformly over.
type Sampling int

const (
	// ByReference draws a (function, table) reference uniformly: a table
	// used by several functions, or in several roles, is drawn that many
	// times more often.
	ByReference Sampling = iota
	// ByTable draws a distinct table uniformly, then one of its references
	// uniformly.
	ByTable
)

// String returns "references" or "tables".
func (s Sampling) String() string {
	if s == ByTable {
		return "tables"
	}
	return "references"
}

// ParseSampling parses "refs", "references", "tables" or "distinct".
func ParseSampling(s string) (Sampling, error) {
	switch s {
	case "refs", "references", "ref":
		return ByReference, nil
	case "tables", "distinct", "table":
		return ByTable, nil
	}
	return 0, fmt.Errorf("lookupbench: unknown sampling %q (want refs or tables)", s)
}

// A Sample is one (table, PC) pair to look up.
type Sample struct {
	Tab  int32             // index into the File's Tabs
	Func int32             // index into the File's Funcs: the referencing function
	Kind objscan.TableKind // the role in which Func references the table
	PC   uint32            // byte offset from the function entry of the PC looked up
}

// candidate is one reference that can be sampled under a PC rule: table
// tab, referenced by ref (an index into its Refs), with n choices of PC
// (the covered return addresses, for PCReturn).
type candidate struct {
	tab, ref int32
	n        int32
}

// tableBytes is the number of code bytes table i covers.
func (b *Bench) tableBytes(i int) uint64 { return uint64(b.f.Tabs[i].Len) * uint64(b.q) }

// retOffset is the offset from the entry at which the runtime looks up a
// table of kind k for a frame whose return address is at offset ra.
func retOffset(ra uint32, k objscan.TableKind) uint32 {
	if k == objscan.KindPCSP {
		return ra // funcspdelta(f, frame.pc)
	}
	return ra - 1 // symPC, continpc-1
}

// candidates lists, in table order, the references that can be sampled
// under rule p.
func (b *Bench) candidates(p PCs) []candidate {
	var out []candidate
	for i := range b.f.Tabs {
		tab := &b.f.Tabs[i]
		size := b.tableBytes(i)
		if size == 0 {
			continue
		}
		for j, ref := range tab.Refs {
			n := int32(1)
			switch p {
			case PC4096:
				if size <= 4096 {
					n = 0
				}
			case PCReturn:
				ras := b.calls[ref.Func]
				// Covered return addresses form a prefix of the ascending list.
				n = int32(sort.Search(len(ras), func(k int) bool {
					return uint64(retOffset(ras[k], ref.Kind)) >= size
				}))
			}
			if n > 0 {
				out = append(out, candidate{tab: int32(i), ref: int32(j), n: n})
			}
		}
	}
	return out
}

// Sample draws n samples under rule p, with the Bench's sampling, from a
// generator seeded with seed. PCReturn needs return addresses
// ([Bench.ReturnAddresses]). It fails if no table has a PC that p can
// choose, as PC4096 in a binary without functions of 4 KiB.
func (b *Bench) Sample(p PCs, n int, seed uint64) ([]Sample, error) {
	if p == PCReturn && b.calls == nil {
		return nil, fmt.Errorf("lookupbench: no return addresses: %s", b.noCalls)
	}
	cands := b.candidates(p)
	if len(cands) == 0 {
		return nil, fmt.Errorf("lookupbench: no table has a PC for rule %q", p)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(p)))
	pick := b.picker(cands)
	out := make([]Sample, n)
	for i := range out {
		c := pick(rng)
		ref := b.f.Tabs[c.tab].Refs[c.ref]
		s := Sample{Tab: c.tab, Func: int32(ref.Func), Kind: ref.Kind}
		switch p {
		case PCRandom:
			s.PC = rng.Uint32N(b.f.Tabs[c.tab].Len) * b.q
		case PCZero:
			s.PC = 0
		case PC4096:
			s.PC = 4096
		case PCReturn:
			s.PC = retOffset(b.calls[ref.Func][rng.IntN(int(c.n))], ref.Kind)
		}
		out[i] = s
	}
	return out, nil
}

// picker returns a function that draws one of cands: uniformly, or with
// ByTable sampling a table first (uniformly among the tables cands
// cover, which must be grouped by table) and then one of its candidates.
func (b *Bench) picker(cands []candidate) func(*rand.Rand) *candidate {
	if b.opt.Sampling != ByTable {
		return func(rng *rand.Rand) *candidate { return &cands[rng.IntN(len(cands))] }
	}
	// The range of candidates of each table that has any.
	var starts []int32
	for i := range cands {
		if i == 0 || cands[i].tab != cands[i-1].tab {
			starts = append(starts, int32(i))
		}
	}
	starts = append(starts, int32(len(cands)))
	return func(rng *rand.Rand) *candidate {
		t := rng.IntN(len(starts) - 1)
		lo, hi := int(starts[t]), int(starts[t+1])
		return &cands[lo+rng.IntN(hi-lo)]
	}
}
