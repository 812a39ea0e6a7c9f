package tracestore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TraceSize splits the bytes of an execution trace by what they hold, to
// compare a store with the tracer's own encoding.
type TraceSize struct {
	Total        int64 `json:"total"`
	Header       int64 `json:"header"`
	Events       int64 `json:"events"`       // event batches, framing included
	Stacks       int64 `json:"stacks"`       // the stack table
	Strings      int64 `json:"strings"`      // the string dictionary
	CPUSamples   int64 `json:"cpu_samples"`  // CPU profile samples
	Sync         int64 `json:"sync"`         // frequency and clock snapshots
	Experimental int64 `json:"experimental"` // experimental batches
	Batches      int   `json:"batches"`
}

// Event types of the trace format that frame batches (Go 1.22 and later;
// internal/trace/tracev2 in the Go tree).
const (
	evEventBatch        = 1
	evStacks            = 2
	evStrings           = 4
	evCPUSamples        = 6
	evFrequency         = 8
	evExperimentalBatch = 49
	evSync              = 50
	evEndOfGeneration   = 52
)

// ErrOldFormat is returned (wrapped) by MeasureTrace for a trace in the
// format of Go 1.21 and older, which Build reads (x/exp/trace converts
// it) but which has no batch framing to split.
var ErrOldFormat = errors.New("the trace format of Go 1.21 and older has no batch framing to measure")

// oldFormat returns the minor version of a trace header of Go 1.21 or
// older ("go 1.21 trace\x00\x00\x00"), or 0.
func oldFormat(header []byte) int {
	s, ok := strings.CutPrefix(string(header), "go 1.")
	if !ok {
		return 0
	}
	v, _, ok := strings.Cut(s, " trace")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n >= 22 {
		return 0
	}
	return n
}

// MeasureTrace reads an execution trace of Go 1.22 or later and returns
// how its bytes divide between its events, stack table, string dictionary
// and the rest, from the trace's batch framing alone. For an older trace
// it returns an error wrapping ErrOldFormat.
func MeasureTrace(r io.Reader) (TraceSize, error) {
	var s TraceSize
	total, err := scanBatches(r, func(b batch) {
		if b.endOfGen {
			s.Events += b.bytes
			return
		}
		s.Batches++
		switch {
		case b.exp:
			s.Experimental += b.bytes
		case b.kind == evStacks:
			s.Stacks += b.bytes
		case b.kind == evStrings:
			s.Strings += b.bytes
		case b.kind == evCPUSamples:
			s.CPUSamples += b.bytes
		case b.kind == evFrequency || b.kind == evSync:
			s.Sync += b.bytes
		default:
			s.Events += b.bytes
		}
	})
	if total >= 16 {
		s.Header = 16
	}
	if err != nil {
		return s, err
	}
	s.Total = total
	return s, nil
}

// A batch is one unit of a trace's framing.
type batch struct {
	start, bytes int64
	gen          uint64
	exp          bool // an experimental batch
	endOfGen     bool // an end-of-generation marker (Go 1.26 and later)
	kind         byte // the first event type of the batch
}

// scanBatches reads a trace's header and calls visit for each of its
// batches, in order. It returns the bytes read up to the end of the last
// whole batch.
func scanBatches(r io.Reader, visit func(batch)) (int64, error) {
	br := &countingByteReader{r: bufio.NewReader(r)}
	header := make([]byte, 16)
	if _, err := io.ReadFull(br.r, header); err != nil {
		return 0, fmt.Errorf("tracestore: trace header: %w", err)
	}
	if !strings.HasPrefix(string(header), "go 1.") || !strings.HasSuffix(strings.TrimRight(string(header), "\x00"), " trace") {
		return 0, fmt.Errorf("tracestore: not an execution trace (header %q)", header)
	}
	if v := oldFormat(header); v != 0 {
		return 0, fmt.Errorf("tracestore: a trace of Go 1.%d: %w", v, ErrOldFormat)
	}
	br.n = 16
	for {
		start := br.n
		b, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return start, nil
		}
		if err != nil {
			return start, err
		}
		if b == evEndOfGeneration {
			visit(batch{start: start, bytes: 1, endOfGen: true})
			continue
		}
		if b != evEventBatch && b != evExperimentalBatch {
			if h, _ := br.r.Peek(15); isTraceHeader(append([]byte{b}, h...)) {
				return start, &framingError{start, secondTrace(append([]byte{b}, h...))}
			}
			return start, &framingError{start, fmt.Sprintf("event type %d where a batch starts", b)}
		}
		exp := b == evExperimentalBatch
		if exp {
			if _, err := br.ReadByte(); err != nil {
				return start, &framingError{start, "truncated batch header"}
			}
		}
		var hdr [4]uint64 // generation, M, timestamp, size
		for i := range hdr {
			v, err := binary.ReadUvarint(br)
			if err != nil {
				return start, &framingError{start, "truncated batch header"}
			}
			hdr[i] = v // the runtime writes the size as a padded varint
		}
		size := hdr[3]
		kind := byte(0)
		if size > 0 {
			if kind, err = br.ReadByte(); err != nil {
				return start, &framingError{start, fmt.Sprintf("batch of %d bytes truncated", size)}
			}
			if n, err := io.CopyN(io.Discard, br, int64(size-1)); err != nil || n != int64(size-1) {
				return start, &framingError{start, fmt.Sprintf("batch of %d bytes truncated", size)}
			}
		}
		visit(batch{start: start, bytes: br.n - start, gen: hdr[0], exp: exp, kind: kind})
	}
}

// A framingError is a fault in a trace's batch framing, in the batch
// that starts at byte At.
type framingError struct {
	At   int64
	What string
}

func (e *framingError) Error() string {
	return fmt.Sprintf("tracestore: trace byte %d: %s", e.At, e.What)
}

// generations are the byte offsets where a trace's generations start, as
// its framing says, their numbers, and where the framing's whole batches
// end.
type generations struct {
	starts []int64
	gens   []uint64
	framed int64
	err    error // why the framing ends before the trace does, if it does
}

// scanGenerations reads a trace's framing for its generations. It stops
// at the first error: the generations are then those before it.
func scanGenerations(r io.Reader) generations {
	var g generations
	prev, first := uint64(0), true
	g.framed, g.err = scanBatches(r, func(b batch) {
		if b.endOfGen {
			return
		}
		if first || b.gen != prev {
			g.starts = append(g.starts, b.start)
			g.gens = append(g.gens, b.gen)
		}
		prev, first = b.gen, false
	})
	return g
}

// end returns the byte where the first k generations end, at most at.
func (g generations) end(k int, at int64) int64 {
	e := g.framed
	if k < len(g.starts) {
		e = g.starts[k]
	}
	return min(e, at)
}

type countingByteReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingByteReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingByteReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}
