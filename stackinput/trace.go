package stackinput

import (
	"fmt"
	"io"

	"golang.org/x/exp/trace"
)

// ReadTrace reads a Go execution trace, as written by runtime/trace or a
// test binary's -test.trace flag, and records every stack it holds: the
// stack of every event that has one, and the starting stack of each
// goroutine that a state transition creates. Each sample is keyed by the
// goroutine the stack belongs to (for a state transition, the goroutine
// that transitions) and by the event's thread.
//
// A malformed trace yields an error. golang.org/x/exp/trace may panic on
// some malformed inputs; ReadTrace turns such a panic into an error.
func ReadTrace(r io.Reader) (c *Corpus, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("stackinput: trace parser failed on the trace's header: %v", p)
		}
	}()
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("stackinput: reading trace header: %w", err)
	}
	return ReadTraceEvents(tr)
}

// An EventReader reads a trace's events, such as a *trace.Reader, or a
// tracestore.EventReader, which ends a cut trace after the events its
// reader produced.
type EventReader interface {
	// ReadEvent returns the next event, or io.EOF at the end.
	ReadEvent() (trace.Event, error)
}

// ReadTraceEvents is ReadTrace of the events that er reads.
func ReadTraceEvents(er EventReader) (c *Corpus, err error) {
	events := 0
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("stackinput: trace parser failed after %d events: %v", events, p)
		}
	}()
	c = NewCorpus("execution trace")
	var gen uint32
	handles := make(map[trace.Stack]uint32) // stack handles of the current generation
	var locs []uint32
	cpu := false  // the current event is a CPU sample
	var now int64 // the current event's time
	add := func(g, m int64, s trace.Stack) {
		idx, ok := handles[s]
		if !ok {
			locs = locs[:0]
			for f := range s.Frames() {
				locs = append(locs, c.AddLocation(Location{PC: f.PC, Lines: []Line{{Func: f.Func, File: f.File, Line: int64(f.Line)}}}))
			}
			idx, _ = c.AddStack(locs) // indices come from AddLocation
			handles[s] = idx
		}
		c.Samples = append(c.Samples, Sample{Goroutine: g, Thread: m, Generation: gen, Stack: idx, CPU: cpu, Trap: cpu, Time: now})
	}
	for {
		e, err := er.ReadEvent()
		if err == io.EOF {
			// The end: x/exp/trace's errors of a trace cut inside a
			// batch's header wrap io.EOF, and are not its end.
			break
		}
		if err != nil {
			return nil, fmt.Errorf("stackinput: reading trace event %d: %w", events, err)
		}
		events++
		if e.Kind() == trace.EventSync {
			gen++
			clear(handles)
		}
		g, m := int64(e.Goroutine()), int64(e.Thread())
		s := e.Stack()
		cpu = e.Kind() == trace.EventStackSample
		now = int64(e.Time())
		if e.Kind() != trace.EventStateTransition {
			if s != trace.NoStack {
				add(g, m, s)
			}
			continue
		}
		// A state transition's stack belongs to the resource that
		// transitions: the running goroutine for most, the goroutine
		// whose status a generation starts with, or the goroutine being
		// created, whose starting stack comes besides its creator's.
		st := e.StateTransition()
		rg := g
		if st.Resource.Kind == trace.ResourceGoroutine {
			rg = int64(st.Resource.Goroutine())
		}
		if s != trace.NoStack {
			if st.Stack == s {
				add(rg, m, s)
			} else {
				add(g, m, s)
			}
		}
		if st.Stack != trace.NoStack && st.Stack != s {
			add(rg, m, st.Stack)
		}
	}
	return c, nil
}
