package runtimeshim

import (
	"fmt"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/varintpc"
)

type encKind uint8

const (
	encVarint          encKind = iota // runtime-shaped varint pcvalue, no cache
	encVarintCache                    // runtime-shaped varint pcvalue behind the per-M cache
	encVarintWalk                     // varintpc's one-loop walk, no cache
	encVarintWalkCache                // varintpc's one-loop walk behind the per-M cache
	encLinear                         // a linearpc variant in a Set
)

// An Encoding is one way of storing the PC-value tables that a [Shim] can
// run the runtime's lookups over.
type Encoding struct {
	// Name identifies the encoding in reports: "varint", "varint+cache",
	// "linear" (the spec format of golang/go#61984) and "linear-" followed
	// by the name of each other linearpc variant.
	Name string
	// Doc is a one-line description.
	Doc string

	kind    encKind
	variant linearpc.Variant
}

// Cached reports whether the encoding sits behind the runtime's pcvalue
// cache.
func (e Encoding) Cached() bool { return e.kind == encVarintCache || e.kind == encVarintWalkCache }

// Encodings returns every encoding, in a stable order: "varint",
// "varint+cache" (the runtime's code: the baselines), "varint-walk",
// "varint-walk+cache", "linear" and then the other linear variants.
func Encodings() []Encoding {
	encs := []Encoding{
		{Name: "varint", Doc: "Go's varint-delta tables, runtime.pcvalue without its cache in the runtime's code shape (varintpc.PCValue: a non-inlined step per entry)", kind: encVarint},
		{Name: "varint+cache", Doc: "Go's varint-delta tables, runtime.pcvalue in the runtime's code shape behind its per-M cache (2 sets of 8, exact PC and table offset)", kind: encVarintCache},
		{Name: "varint-walk", Doc: "Go's varint-delta tables, varintpc.Lookup's one-loop walk (faster than the runtime's code), no cache", kind: encVarintWalk},
		{Name: "varint-walk+cache", Doc: "Go's varint-delta tables, varintpc.Lookup's one-loop walk behind the per-M cache", kind: encVarintWalkCache},
	}
	for _, v := range linearpc.Variants() {
		name := "linear"
		if !v.IsSpec() {
			name = "linear-" + v.Name
		}
		encs = append(encs, Encoding{Name: name, Doc: v.Doc, kind: encLinear, variant: v})
	}
	return encs
}

// EncodingByName returns the encoding called name.
func EncodingByName(name string) (Encoding, bool) {
	for _, e := range Encodings() {
		if e.Name == name {
			return e, true
		}
	}
	return Encoding{}, false
}

// setRef is a linear set holding every distinct table of a module, and the
// offset in the set of each table, indexed like objscan.File.Tabs.
type setRef struct {
	set  *linearpc.Set
	offs []uint32
}

func (m *Module) linearSet(v linearpc.Variant) (*setRef, error) {
	if r, ok := m.sets[v.Name]; ok {
		return r, nil
	}
	dec, err := m.decodedTables()
	if err != nil {
		return nil, err
	}
	r := &setRef{set: linearpc.NewSet(v), offs: make([]uint32, len(dec))}
	for i, t := range dec {
		r.offs[i] = r.set.Add(t)
	}
	m.sets[v.Name] = r
	return r, nil
}

// NewShim returns a Shim that runs the runtime's lookups over the tables of
// m in encoding enc. Building the first Shim of a linear variant encodes
// every table of the binary; later ones reuse the encoding.
func (m *Module) NewShim(enc Encoding) (*Shim, error) {
	s := &Shim{md: m, enc: enc, kind: enc.kind, pctab: m.pctab, quantum: m.quantum, qshift: m.qshift}
	s.funcs = make([]_func, len(m.funcs))
	copy(s.funcs, m.funcs)
	switch enc.kind {
	case encVarint, encVarintCache, encVarintWalk, encVarintWalkCache:
		// The module's records already hold pctab offsets.
	case encLinear:
		r, err := m.linearSet(enc.variant)
		if err != nil {
			return nil, fmt.Errorf("runtimeshim: encoding %s: %w", enc.Name, err)
		}
		s.set = r.set
		conv := func(t tab) tab {
			if t.off == 0 {
				return tab{}
			}
			return tab{off: r.offs[m.tabs[t.off]], n: t.n}
		}
		n := 0
		for i := range s.funcs {
			n += len(s.funcs[i].pcdata)
		}
		pcdata := make([]tab, 0, n)
		for i := range s.funcs {
			f := &s.funcs[i]
			f.pcsp, f.pcfile, f.pcln = conv(f.pcsp), conv(f.pcfile), conv(f.pcln)
			start := len(pcdata)
			for _, t := range f.pcdata {
				pcdata = append(pcdata, conv(t))
			}
			f.pcdata = pcdata[start:len(pcdata):len(pcdata)]
		}
	default:
		return nil, fmt.Errorf("runtimeshim: unknown encoding %q", enc.Name)
	}
	s.SetM(0)
	return s, nil
}

// SetM selects the simulated M whose pcvalue cache the following lookups
// use (only the cached varint encodings have one). Ms are numbered from 0;
// each gets its own cache, seeded with its number.
func (s *Shim) SetM(i int) {
	for len(s.caches) <= i {
		c := varintpc.NewCache(uint64(len(s.caches)))
		c.PtrSize = uintptr(s.md.ptrSize)
		s.caches = append(s.caches, c)
	}
	s.cache = s.caches[i]
}

// ResetCaches empties every M's cache, zeroes its counters and reseeds it,
// so that a replay's hits do not depend on what ran before.
func (s *Shim) ResetCaches() {
	for i, c := range s.caches {
		c.Reset(uint64(i))
	}
}

// CacheStats returns the hits and misses of all Ms' caches since they were
// last reset.
func (s *Shim) CacheStats() (hits, misses uint64) {
	for _, c := range s.caches {
		hits += c.Hits
		misses += c.Misses
	}
	return hits, misses
}

// Encoding returns the shim's encoding.
func (s *Shim) Encoding() Encoding { return s.enc }

// Module returns the module the shim looks up.
func (s *Shim) Module() *Module { return s.md }
