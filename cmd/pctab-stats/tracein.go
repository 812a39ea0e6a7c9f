package main

import (
	"fmt"
	"io"

	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/tracestore"
)

// readTraceStacks reads the stacks of the execution trace in r. Of a trace
// cut short, or unreadable part way, it reads those of the events the
// trace reader produced, as pctab-trace build keeps them (the whole
// generations, and those of a generation corrupt part way before the
// fault), and says what was dropped (nil if nothing was).
func readTraceStacks(r io.Reader) (*stackinput.Corpus, *tracestore.Truncation, error) {
	er, err := tracestore.NewEventReader(r)
	if err != nil {
		return nil, nil, err
	}
	defer er.Close()
	c, err := stackinput.ReadTraceEvents(er)
	if err != nil {
		return nil, nil, err
	}
	return c, er.Truncated(), nil
}

// warnCut tells stderr that the trace at path was cut, if it was.
func warnCut(stderr io.Writer, path string, cut *tracestore.Truncation) {
	if cut != nil {
		fmt.Fprintf(stderr, "pctab-stats: warning: %s: %s\n", path, cut)
	}
}

// cutLine is the line of a text report that says what of a cut trace was
// read.
func cutLine(cut *tracestore.Truncation) string {
	partial := ""
	if cut.PartialEvents > 0 {
		partial = fmt.Sprintf(" and the first %d events of the next, before the fault", cut.PartialEvents)
	}
	return fmt.Sprintf("the trace is cut: the samples are those of its first %d generations%s (%d bytes), without its last %d bytes (it turned unreadable after byte %d)",
		cut.Generations, partial, cut.BytesKept, cut.BytesDropped, cut.AtByte)
}
