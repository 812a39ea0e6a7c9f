package tracestore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

// MeasureTrace reads an execution trace of Go 1.22 or later and returns
// how its bytes divide between its events, stack table, string dictionary
// and the rest, from the trace's batch framing alone.
func MeasureTrace(r io.Reader) (TraceSize, error) {
	var s TraceSize
	br := &countingByteReader{r: bufio.NewReader(r)}
	header := make([]byte, 16)
	if _, err := io.ReadFull(br.r, header); err != nil {
		return s, fmt.Errorf("tracestore: trace header: %w", err)
	}
	if !strings.HasPrefix(string(header), "go 1.") || !strings.HasSuffix(strings.TrimRight(string(header), "\x00"), " trace") {
		return s, fmt.Errorf("tracestore: not an execution trace (header %q)", header)
	}
	s.Header = 16
	br.n = 16
	for {
		start := br.n
		b, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, err
		}
		if b == evEndOfGeneration {
			s.Events++
			continue
		}
		if b != evEventBatch && b != evExperimentalBatch {
			return s, fmt.Errorf("tracestore: trace byte %d: event type %d where a batch starts", start, b)
		}
		exp := b == evExperimentalBatch
		if exp {
			if _, err := br.ReadByte(); err != nil {
				return s, fmt.Errorf("tracestore: trace byte %d: truncated batch header", start)
			}
		}
		var size uint64
		for range 4 { // generation, M, timestamp, size
			v, err := binary.ReadUvarint(br)
			if err != nil {
				return s, fmt.Errorf("tracestore: trace byte %d: truncated batch header", start)
			}
			size = v // the runtime writes the size as a padded varint
		}
		kind := byte(0)
		if size > 0 {
			if kind, err = br.ReadByte(); err != nil {
				return s, fmt.Errorf("tracestore: trace byte %d: batch of %d bytes truncated", start, size)
			}
			if n, err := io.CopyN(io.Discard, br, int64(size-1)); err != nil || n != int64(size-1) {
				return s, fmt.Errorf("tracestore: trace byte %d: batch of %d bytes truncated", start, size)
			}
		}
		n := br.n - start
		s.Batches++
		switch {
		case exp:
			s.Experimental += n
		case kind == evStacks:
			s.Stacks += n
		case kind == evStrings:
			s.Strings += n
		case kind == evCPUSamples:
			s.CPUSamples += n
		case kind == evFrequency || kind == evSync:
			s.Sync += n
		default:
			s.Events += n
		}
	}
	s.Total = br.n
	return s, nil
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
