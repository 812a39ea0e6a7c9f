package tracestore

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/exp/trace"
)

// An EventReader reads the events of an execution trace with x/exp/trace
// and keeps what can be kept of a trace that ends early or turns
// unreadable part way (cut off, as a trace copied while it was written
// is, or corrupt): every event the reader produced before it failed. The
// reader produces a generation's events only once it has read the whole
// generation, so what a cut trace keeps is its whole generations.
// ReadEvent then ends with io.EOF, as at the end of a whole trace, and
// Truncated says where the trace was cut and what was dropped.
//
// A trace whose first generation is cut or unreadable gives nothing to
// keep: ReadEvent's error then says where the fault is, from the trace's
// batch framing.
//
// Build reads traces with it, and so does package tracestore/labels, so
// that a store and its label index keep the same events of a cut trace.
type EventReader struct {
	tr      *trace.Reader
	cr      *countingReader
	pw      *io.PipeWriter
	framing chan generations // the trace's framing, read alongside
	fr      generations      // once the trace is read to its end
	closed  bool

	events      uint64 // events returned
	gens        int    // generations with an event returned
	syncPending bool   // from a Sync event to the next event
	newGen      bool   // the last event returned began a generation
	trunc       *Truncation
	err         error // what ReadEvent returns from now on
}

// NewEventReader returns a reader of the trace r. It reads the trace's
// header, and all of a trace of Go 1.21 or older (x/exp/trace converts
// that format whole, so a cut one is an error here).
func NewEventReader(r io.Reader) (*EventReader, error) {
	pr, pw := io.Pipe()
	framing := make(chan generations, 1)
	go func() {
		g := scanGenerations(pr)
		io.Copy(io.Discard, pr) // what the scan did not read
		framing <- g
	}()
	er := &EventReader{cr: &countingReader{r: io.TeeReader(r, pw)}, pw: pw, framing: framing}
	tr, err := newTraceReader(er.cr)
	if err != nil {
		er.Close()
		if v := oldFormat(er.cr.head); v >= 11 { // x/exp/trace reads Go 1.11 and later
			return nil, fmt.Errorf("tracestore: reading the trace (Go 1.%d's format, read whole: a cut or corrupt one gives no events; %d bytes read): %w", v, er.cr.n, err)
		}
		return nil, fmt.Errorf("tracestore: reading the trace header: %w", err)
	}
	er.tr = tr
	return er, nil
}

// ReadEvent returns the trace's next event. At the end of the trace, or
// of what is kept of a cut one, it returns io.EOF. Its other errors are
// those of a trace with nothing to keep, and of reading r.
func (r *EventReader) ReadEvent() (trace.Event, error) {
	if r.err != nil {
		return trace.Event{}, r.err
	}
	ev, err := readEvent(r.tr)
	if err != nil {
		r.stop(err)
		return trace.Event{}, r.err
	}
	r.events++
	r.newGen = false
	if ev.Kind() == trace.EventSync {
		r.syncPending = true
	} else if r.syncPending {
		r.gens++
		r.syncPending, r.newGen = false, true
	}
	return ev, nil
}

// Cut ends the trace before the last event ReadEvent returned, as if the
// trace had turned unreadable there with err: for a reader of the events
// that finds one it cannot take. ReadEvent then returns io.EOF, or the
// error of a first generation with nothing to keep.
func (r *EventReader) Cut(err error) {
	if r.err != nil || r.events == 0 {
		return
	}
	r.events--
	if r.newGen {
		r.gens--
	}
	r.stop(err)
}

// Truncated returns what was dropped of a cut or unreadable trace, once
// ReadEvent has returned io.EOF; nil for a whole trace.
func (r *EventReader) Truncated() *Truncation { return r.trunc }

// Events returns the number of events read and not dropped by Cut.
func (r *EventReader) Events() uint64 { return r.events }

// Generations returns the number of generations the events read span.
func (r *EventReader) Generations() int { return r.gens }

// BytesRead returns the bytes read of the trace: all of it once ReadEvent
// has returned an error.
func (r *EventReader) BytesRead() int64 { return r.cr.n }

// Close stops reading the trace's framing, for a reader that stops before
// ReadEvent's end. It does not close the trace's reader.
func (r *EventReader) Close() {
	if !r.closed {
		r.closed = true
		r.pw.CloseWithError(errors.New("tracestore: the event reader was closed"))
		r.fr = <-r.framing
	}
}

// stop ends the reading on the reader's error err (io.EOF at the end of
// the trace): it reads the rest of the trace, for its size and framing,
// and sets what ReadEvent returns from now on.
func (r *EventReader) stop(err error) {
	atByte := r.cr.n
	_, rerr := io.Copy(io.Discard, r.cr)
	r.pw.Close()
	r.Close()
	r.tr = nil // its last generation, garbage from here
	switch {
	case rerr != nil:
		r.err = fmt.Errorf("tracestore: reading the trace: %w", rerr)
	case errors.Is(err, io.EOF):
		r.err = io.EOF
	case r.gens == 0:
		r.err = r.firstGenError(err, atByte)
	default:
		t := &Truncation{Error: err.Error(), AtByte: atByte, EventsKept: r.events, Generations: r.gens}
		t.BytesKept = r.fr.end(r.gens, atByte)
		t.BytesDropped = r.cr.n - t.BytesKept
		r.trunc, r.err = t, io.EOF
	}
}

// firstGenError is the error of a trace whose first generation is cut or
// unreadable (err, the reader's, after atByte bytes read): it says where
// the fault is, as far as the trace's framing tells. x/exp/trace reads a
// generation whole, and further, before it checks it, and its errors do
// not say where.
func (r *EventReader) firstGenError(err error, atByte int64) error {
	g := r.fr
	var where string
	switch {
	case errors.Is(g.err, ErrOldFormat):
		where = "(the format of Go 1.21 and older has no batch framing to say where)"
	case g.err != nil && len(g.starts) <= 1:
		// The framing breaks before a second generation: there is the
		// fault.
		where = fmt.Sprintf("at byte %d: %v", g.framed, g.err)
		var fe *framingError
		if errors.As(g.err, &fe) {
			where = fmt.Sprintf("at byte %d: %s", fe.At, fe.What)
		}
	case len(g.starts) == 0:
		where = fmt.Sprintf("(the trace, of %d bytes, has no whole batch after its header)", r.cr.n)
	default:
		end := g.framed
		if len(g.starts) > 1 {
			end = g.starts[1]
		}
		where = fmt.Sprintf("in its bytes [%d, %d) (generation %d), whose batch framing is whole", g.starts[0], end, g.gens[0])
	}
	return fmt.Errorf("tracestore: the trace's first generation is cut or unreadable %s; x/exp/trace failed having produced %d events and read %d bytes (it reads ahead): %w", where, r.events, atByte, err)
}
