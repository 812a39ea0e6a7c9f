// Package resolve attaches trampoline labels to CPU samples: it finds the
// trampolines of package trampoline in a binary (with objscan), and for
// each sample whose stack passes through one, the label that held it
// (from trampoline's history). It reads pprof CPU profiles and execution
// traces with CPU samples, and writes pprof profiles with the labels on
// the samples, so that `go tool pprof -tagfocus` works, and with every
// trampoline frame folded into one function, so that the flame graph
// without labels looks as it would without trampolines.
package resolve

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/trampoline"
)

// Prefix is the name of every trampoline function up to its number.
const Prefix = "github.com/pctab/pctab/trampoline.t"

// Folded is the name every trampoline frame gets in the output.
const Folded = "github.com/pctab/pctab/trampoline.trampoline"

// Number returns the trampoline number of a function name, or -1.
func Number(name string) int {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok || len(rest) != 4 {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// Trampolines are the trampolines of one binary: their PC ranges.
type Trampolines struct {
	spans []span // sorted by lo
	N     int    // trampolines found
}

type span struct {
	lo, hi uint64
	n      int
}

// Find locates the trampolines of package trampoline in a binary.
func Find(f *objscan.File) (*Trampolines, error) {
	t := &Trampolines{}
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		if n := Number(fn.Name); n >= 0 {
			t.spans = append(t.spans, span{fn.Entry, fn.End, n})
		}
	}
	if len(t.spans) == 0 {
		return nil, fmt.Errorf("resolve: %s has no trampolines (functions %sNNNN): it does not use package trampoline", f.Path, Prefix)
	}
	sort.Slice(t.spans, func(i, j int) bool { return t.spans[i].lo < t.spans[j].lo })
	t.N = len(t.spans)
	return t, nil
}

// At returns the trampoline whose code holds pc, or -1.
func (t *Trampolines) At(pc uint64) int {
	i := sort.Search(len(t.spans), func(i int) bool { return t.spans[i].hi > pc })
	if i < len(t.spans) && t.spans[i].lo <= pc {
		return t.spans[i].n
	}
	return -1
}

// Stats counts what a resolution did with the samples.
type Stats struct {
	Samples      int64 `json:"samples"`       // samples read
	Through      int64 `json:"through"`       // samples whose stack passes through a trampoline
	Labelled     int64 `json:"labelled"`      // samples given a label
	Unattributed int64 `json:"unattributed"`  // through a trampoline, but no single binding fits
	ByName       bool  `json:"matched_names"` // trampolines were matched by symbolized function names, not PCs
}

// history indexes the bindings of each trampoline in start order.
type history [][]trampoline.Binding

// index builds the history's index. Its size is bounded by the bindings
// the history holds and by trampoline.MaxTrampolines, not by its
// trampoline count, which a caller may have set to anything: trampolines
// that no binding names need no entry, and no binary has a trampoline
// numbered MaxTrampolines or more.
func index(h trampoline.History) history {
	n := 0
	limit := min(h.Trampolines, trampoline.MaxTrampolines)
	for _, b := range h.Bindings {
		if b.Trampoline >= 0 && b.Trampoline < limit {
			n = max(n, b.Trampoline+1)
		}
	}
	x := make(history, n)
	for _, b := range h.Bindings {
		if b.Trampoline >= 0 && b.Trampoline < len(x) {
			x[b.Trampoline] = append(x[b.Trampoline], b)
		}
	}
	for _, bs := range x {
		sort.Slice(bs, func(i, j int) bool { return bs[i].StartMono < bs[j].StartMono })
	}
	return x
}

// at returns the binding of trampoline n at monotonic time t.
func (x history) at(n int, t int64) (trampoline.Binding, bool) {
	if n < 0 || n >= len(x) {
		return trampoline.Binding{}, false
	}
	bs := x[n]
	i := sort.Search(len(bs), func(i int) bool { return bs[i].StartMono > t }) - 1
	if i < 0 || (bs[i].EndMono != 0 && t >= bs[i].EndMono) {
		return trampoline.Binding{}, false
	}
	return bs[i], true
}

// only returns the binding of trampoline n if it is the only one that
// overlaps the wall-clock interval [lo, hi).
func (x history) only(n int, lo, hi int64) (trampoline.Binding, bool) {
	if n < 0 || n >= len(x) {
		return trampoline.Binding{}, false
	}
	var found trampoline.Binding
	k := 0
	for _, b := range x[n] {
		if b.StartUnix < hi && (b.EndUnix == 0 || b.EndUnix > lo) {
			found = b
			k++
		}
	}
	return found, k == 1
}

// Profile returns a copy of a pprof CPU profile with the label of every
// sample that ran through a trampoline whose one binding during the
// profile (pprof samples carry no time) is known, and with the trampoline
// frames folded. A trampoline bound more than once during the profile
// leaves its samples unattributed; Stats counts them.
func Profile(p *profile.Profile, t *Trampolines, h trampoline.History) (*profile.Profile, Stats, error) {
	out := p.Copy()
	x := index(h)
	lo, hi := out.TimeNanos, out.TimeNanos+out.DurationNanos
	if out.DurationNanos <= 0 {
		hi = 1<<63 - 1
	}
	// The answer depends only on the trampoline: compute it once for each,
	// so the cost is samples plus bindings, not their product.
	type answer struct {
		b  trampoline.Binding
		ok bool
	}
	memo := make(map[int]answer)
	var st Stats
	for _, s := range out.Sample {
		st.label(s, t, func(n int) (trampoline.Binding, bool) {
			a, seen := memo[n]
			if !seen {
				a.b, a.ok = x.only(n, lo, hi)
				memo[n] = a
			}
			return a.b, a.ok
		})
	}
	fold(out)
	return out, st, out.CheckValid()
}

// label labels one sample: through its innermost trampoline, with the
// binding that binding(n) chooses for trampoline n, and counts it.
func (st *Stats) label(s *profile.Sample, t *Trampolines, binding func(n int) (trampoline.Binding, bool)) {
	st.Samples++
	n := sampleTrampoline(s, t, st)
	if n < 0 {
		return
	}
	st.Through++
	b, ok := binding(n)
	if !ok {
		st.Unattributed++
		return
	}
	st.Labelled++
	setLabel(s, b)
}

// sampleTrampoline returns the innermost trampoline of a sample's stack:
// by symbolized function name where the profile has names, else by PC.
func sampleTrampoline(s *profile.Sample, t *Trampolines, st *Stats) int {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil {
				if n := Number(ln.Function.Name); n >= 0 {
					st.ByName = true
					return n
				}
			}
		}
		if len(loc.Line) == 0 {
			if n := t.At(loc.Address); n >= 0 {
				return n
			}
		}
	}
	return -1
}

func setLabel(s *profile.Sample, b trampoline.Binding) {
	if s.Label == nil {
		s.Label = map[string][]string{}
	}
	s.Label[b.Key] = []string{b.Value}
}

// fold makes every trampoline frame name one function, Folded.
func fold(p *profile.Profile) {
	var folded *profile.Function
	for _, fn := range p.Function {
		if Number(fn.Name) >= 0 {
			if folded == nil {
				folded = fn
				fn.Name, fn.SystemName = Folded, Folded
			}
		}
	}
	if folded == nil {
		return
	}
	for _, loc := range p.Location {
		for i := range loc.Line {
			if f := loc.Line[i].Function; f != nil && Number(f.Name) >= 0 {
				loc.Line[i].Function = folded
			}
		}
	}
	kept := p.Function[:0]
	for _, fn := range p.Function {
		if Number(fn.Name) < 0 {
			kept = append(kept, fn)
		}
	}
	p.Function = kept
}

// Trace builds a pprof profile (samples/count) from the CPU samples of an
// execution trace, each labelled by the binding its trampoline held at the
// sample's time (the trace's clock is the monotonic clock the history
// records on Linux), with the trampoline frames folded.
func Trace(c *stackinput.Corpus, t *Trampolines, h trampoline.History) (*profile.Profile, Stats, error) {
	x := index(h)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
	}
	funcs := map[string]*profile.Function{}
	locs := map[uint32]*profile.Location{}
	location := func(i uint32) *profile.Location {
		if l, ok := locs[i]; ok {
			return l
		}
		src := c.Locations[i]
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: src.PC}
		for _, ln := range src.Lines {
			fn, ok := funcs[ln.Func]
			if !ok {
				fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: ln.Func, SystemName: ln.Func, Filename: ln.File}
				funcs[ln.Func] = fn
				p.Function = append(p.Function, fn)
			}
			l.Line = append(l.Line, profile.Line{Function: fn, Line: ln.Line})
		}
		locs[i] = l
		p.Location = append(p.Location, l)
		return l
	}
	var st Stats
	for _, s := range c.Samples {
		if !s.CPU {
			continue
		}
		ps := &profile.Sample{Value: []int64{1}}
		for _, li := range c.Stack(s.Stack) {
			ps.Location = append(ps.Location, location(li))
		}
		p.Sample = append(p.Sample, ps)
		st.label(ps, t, func(n int) (trampoline.Binding, bool) { return x.at(n, s.Time) })
	}
	fold(p)
	return p, st, p.CheckValid()
}
