package stackinput

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"
)

// ReadPprof reads a pprof profile, gzipped or not, and records the stack of
// every sample in profile order. Samples carry no goroutine or thread, so
// their keys are -1. The samples of a CPU profile (period type "cpu") are
// marked Trap.
func ReadPprof(r io.Reader) (*Corpus, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("stackinput: reading pprof profile: %w", err)
	}
	c := NewCorpus("pprof profile")
	trap := p.PeriodType != nil && p.PeriodType.Type == "cpu"
	idx := make(map[*profile.Location]uint32)
	var locs []uint32
	for i, s := range p.Sample {
		locs = locs[:0]
		for j, l := range s.Location {
			if l == nil {
				return nil, fmt.Errorf("stackinput: pprof sample %d: location %d is missing", i, j)
			}
			k, ok := idx[l]
			if !ok {
				loc := Location{PC: l.Address}
				for _, ln := range l.Line {
					var name, file string
					if ln.Function != nil {
						name, file = ln.Function.Name, ln.Function.Filename
					}
					loc.Lines = append(loc.Lines, Line{Func: name, File: file, Line: ln.Line})
				}
				k = c.AddLocation(loc)
				idx[l] = k
			}
			locs = append(locs, k)
		}
		st, _ := c.AddStack(locs) // indices come from AddLocation
		c.Samples = append(c.Samples, Sample{Goroutine: -1, Thread: -1, Stack: st, Trap: trap})
	}
	return c, nil
}
