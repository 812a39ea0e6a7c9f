package tracestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/exp/trace"
)

// An EventReader reads the events of an execution trace with x/exp/trace
// and keeps what can be kept of a trace that ends early or turns
// unreadable part way (cut off, as a trace copied while it was written
// is, or corrupt): every event the reader produced before it failed.
// ReadEvent then ends with io.EOF, as at the end of a whole trace, and
// Truncated says where the trace was cut and what was kept and dropped.
//
// The reader produces a generation's events only once it has read the
// generation's bytes, so a trace cut off (or whose framing breaks) in a
// generation keeps the generations before it. But it checks the events
// as it produces them: a generation whose bytes are corrupt, or, in a
// trace of Go 1.22 to 1.25 (which has no end-of-generation marker), a
// last generation cut off, which the reader goes on with as far as it
// has it, gives its events up to the fault. Of such a generation after
// whole ones, the events before the fault are kept too, and Truncated
// says how many (PartialEvents).
//
// A trace without a whole generation gives nothing to keep: ReadEvent's
// error then says where the fault is, from the trace's batch framing.
// (A first generation cut off in a trace of Go 1.22 to 1.25 gives the
// reader's first few events, before the first that needs the stack
// table, which comes at the generation's end.)
//
// A file that holds traces one after another (trace.Start called again
// after trace.Stop, into the same file) is not one trace: the first is
// read, and Truncated says where the second starts.
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

	cur, prev readCounts // now, and before the last event returned
	second    *int64     // where a second trace starts, in a Go 1.11-1.21 file
	trunc     *Truncation
	err       error // what ReadEvent returns from now on
}

// readCounts count the events an EventReader returned.
type readCounts struct {
	events      uint64 // events returned
	gens        int    // generations with an event returned after their Sync
	syncAt      uint64 // events returned up to the last Sync, included
	syncPending bool   // from a Sync event to the next event
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
	if err := er.checkHeader(); err != nil {
		er.Close()
		return nil, err
	}
	var rest io.Reader = er.cr
	if oldFormat(er.cr.head) != 0 {
		// x/exp/trace reads such a trace whole, and fails on a second
		// trace after it: it reads up to the second.
		er.second = new(int64)
		rest = &untilHeader{r: er.cr, header: er.cr.head, at: er.second, off: 16}
	}
	src := io.MultiReader(bytes.NewReader(er.cr.head), rest)
	tr, err := newTraceReader(src)
	if err != nil {
		er.Close()
		if v := oldFormat(er.cr.head); v >= 11 { // x/exp/trace reads Go 1.11 and later
			return nil, fmt.Errorf("tracestore: reading the trace (Go 1.%d's format, read whole: a cut or corrupt one gives no events; %d bytes read): %w", v, er.cr.n, err)
		}
		return nil, fmt.Errorf("tracestore: reading the trace header %q: %w", er.cr.head, err)
	}
	er.tr = tr
	return er, nil
}

// checkHeader reads the trace's 16-byte header into r.cr.head and checks
// that it is one: "go 1.N trace" padded with NULs.
func (r *EventReader) checkHeader() error {
	var h [16]byte
	n, err := io.ReadFull(r.cr, h[:])
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return fmt.Errorf("tracestore: the trace is empty: it has no trace header (16 bytes)")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("tracestore: the trace's header is cut: %d bytes (%q), a header has 16", n, h[:n])
	case err != nil:
		return fmt.Errorf("tracestore: reading the trace header: %w", err)
	}
	if !isTraceHeader(h[:]) {
		return fmt.Errorf("tracestore: not an execution trace: its first 16 bytes are %q, a trace's are \"go 1.N trace\" and NULs", h[:])
	}
	return nil
}

// ReadEvent returns the trace's next event. At the end of the trace, or
// of what is kept of a cut one, it returns io.EOF. Its other errors are
// those of a trace with nothing to keep (no whole generation: the events
// ReadEvent returned are then to be dropped), and of reading r.
func (r *EventReader) ReadEvent() (trace.Event, error) {
	if r.err != nil {
		return trace.Event{}, r.err
	}
	ev, err := readEvent(r.tr)
	if err != nil {
		r.stop(err)
		return trace.Event{}, r.err
	}
	r.prev = r.cur
	c := &r.cur
	c.events++
	if ev.Kind() == trace.EventSync {
		c.syncPending, c.syncAt = true, c.events
	} else if c.syncPending {
		c.gens++
		c.syncPending = false
	}
	return ev, nil
}

// Cut ends the trace before the last event ReadEvent returned, as if the
// trace had turned unreadable there with err: for a reader of the events
// that finds one it cannot take. ReadEvent then returns io.EOF, or the
// error of a first generation with nothing to keep.
func (r *EventReader) Cut(err error) {
	if r.err != nil || r.cur.events == 0 {
		return
	}
	r.cur = r.prev
	r.stop(err)
}

// Truncated returns what was dropped of a cut or unreadable trace, once
// ReadEvent has returned io.EOF; nil for a whole trace.
func (r *EventReader) Truncated() *Truncation { return r.trunc }

// Events returns the number of events read and not dropped by Cut.
func (r *EventReader) Events() uint64 { return r.cur.events }

// Generations returns the number of generations the events read span,
// the last of them in part if the trace turned unreadable in it.
func (r *EventReader) Generations() int { return r.cur.gens }

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
	c := r.cur
	whole, partial := c.gens, uint64(0)
	if !c.syncPending && c.events > c.syncAt {
		// The reader failed in a generation it had produced events of.
		whole, partial = c.gens-1, c.events-c.syncAt
	}
	second := r.second != nil && *r.second != 0
	switch {
	case rerr != nil:
		r.err = fmt.Errorf("tracestore: reading the trace: %w", rerr)
	case errors.Is(err, io.EOF) && (!second || whole == 0):
		r.err = io.EOF
	case whole == 0:
		r.err = r.firstGenError(err, atByte)
	default:
		r.trunc, r.err = r.truncation(err, atByte, whole, partial), io.EOF
	}
}

// truncation says what is kept of a trace the reader stopped reading on
// err, after atByte bytes, with whole generations and partial events of
// the next.
func (r *EventReader) truncation(err error, atByte int64, whole int, partial uint64) *Truncation {
	t := &Truncation{Error: err.Error(), AtByte: atByte, EventsKept: r.cur.events, Generations: whole, PartialEvents: partial}
	t.BytesKept = r.fr.end(r.cur.gens, atByte)
	if r.second != nil && *r.second != 0 {
		t.Error = "the file holds a second trace after the first"
		t.AtByte, t.BytesKept = *r.second, *r.second
		t.Framing = fmt.Sprintf("byte %d: %s", *r.second, secondTrace(r.cr.head))
	} else if fe := (*framingError)(nil); errors.As(r.fr.err, &fe) {
		t.Framing = fmt.Sprintf("byte %d: %s", fe.At, fe.What)
	}
	t.BytesDropped = r.cr.n - t.BytesKept
	return t
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
	return fmt.Errorf("tracestore: the trace's first generation is cut or unreadable %s; x/exp/trace failed having produced %d events and read %d bytes (it reads ahead): %w", where, r.cur.events, atByte, err)
}

// isTraceHeader reports whether h, 16 bytes, is an execution trace's
// header: "go 1.N trace" and NULs.
func isTraceHeader(h []byte) bool {
	s, ok := strings.CutPrefix(string(h), "go 1.")
	if !ok {
		return false
	}
	v, rest, ok := strings.Cut(s, " trace")
	if !ok || v == "" || strings.Trim(v, "0123456789") != "" || strings.Trim(rest, "\x00") != "" {
		return false
	}
	return true
}

// secondTrace says that a second trace, of header h, starts where it is
// found.
func secondTrace(h []byte) string {
	return fmt.Sprintf("a second trace starts here (header %q): a file written by trace.Start, trace.Stop and trace.Start again holds traces one after another, which are not one trace; only the first is read", bytes.TrimRight(h, "\x00"))
}

// untilHeader reads r, the bytes of a trace after its 16-byte header, up
// to the header's next occurrence, and sets *at to where that is in the
// trace. The format of Go 1.21 and older has no framing that says where
// events start, so the header's 16 bytes anywhere (a user log that holds
// them, with their NULs, too) end the trace.
type untilHeader struct {
	r      io.Reader
	header []byte
	at     *int64
	off    int64  // the trace's offset of held[0]
	buf    []byte // held is a window of it
	held   []byte // bytes read from r and not yet returned
	ready  int    // bytes of held known to precede any header
	found  bool   // a header follows the ready bytes
	eof    bool   // r is at its end
}

func (u *untilHeader) Read(p []byte) (int, error) {
	for u.ready == 0 {
		if u.found {
			*u.at = u.off
			return 0, io.EOF
		}
		if i := bytes.Index(u.held, u.header); i >= 0 {
			u.ready, u.found = i, true
			continue
		}
		if u.eof {
			if len(u.held) == 0 {
				return 0, io.EOF
			}
			u.ready = len(u.held)
			continue
		}
		if n := len(u.held) - (len(u.header) - 1); n > 0 {
			// What cannot begin a header that continues past held.
			u.ready = n
			continue
		}
		if u.buf == nil {
			u.buf = make([]byte, 64<<10)
		}
		m := copy(u.buf, u.held)
		n, err := u.r.Read(u.buf[m:])
		u.held = u.buf[:m+n]
		if errors.Is(err, io.EOF) {
			u.eof = true
		} else if err != nil {
			return 0, err
		}
	}
	k := copy(p, u.held[:u.ready])
	u.held, u.ready, u.off = u.held[k:], u.ready-k, u.off+int64(k)
	return k, nil
}
