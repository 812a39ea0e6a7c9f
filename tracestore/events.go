package tracestore

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/exp/trace"
)

// An Event is one event of the log.
type Event struct {
	Index uint64          // position in the trace, from 0
	Time  int64           // nanoseconds since the trace's first event
	Kind  trace.EventKind // the x/exp/trace kind
	G     int64           // goroutine, or -1
	P     int64           // proc, or -1
	M     int64           // thread, or -1
	Stack uint64          // stack DAG id, 0 for none
	// Args depend on Kind:
	//   - StateTransition: Args[0] is the resource kind in bits 0-7, the
	//     old state in bits 8-15 and the new one in bits 16-23; Args[1]
	//     the resource's ID plus one; Args[2] the reason's string index.
	//   - RangeBegin, RangeActive, RangeEnd: Args[0] the name's string
	//     index, Args[1] the scope's kind, Args[2] its ID plus one.
	//   - RegionBegin, RegionEnd: Args[0] the type's string index, Args[1]
	//     the task ID.
	//   - TaskBegin, TaskEnd: Args[0] the type's string index, Args[1] the
	//     task ID, Args[2] the parent task ID.
	//   - Log: Args[0] the category's string index, Args[1] the
	//     message's, Args[2] the task ID.
	//   - Label: Args[0] the label's string index.
	//   - Metric: Args[0] the name's string index, Args[1] the value.
	Args [3]uint64
}

// appendEvent appends e's record, given the previous event's time in the
// page.
func appendEvent(b []byte, e *Event, prev int64) []byte {
	b = binary.AppendUvarint(b, uint64(e.Time-prev))
	b = append(b, byte(e.Kind))
	b = binary.AppendUvarint(b, uint64(e.G+1))
	b = binary.AppendUvarint(b, uint64(e.P+1))
	b = binary.AppendUvarint(b, uint64(e.M+1))
	b = binary.AppendUvarint(b, e.Stack)
	for _, a := range e.Args {
		b = binary.AppendUvarint(b, a)
	}
	return b
}

// maxEventBytes bounds a record's size: 8 varints and a byte.
const maxEventBytes = 8*binary.MaxVarintLen64 + 1

// A Page is one decoded page of the event log.
type Page struct {
	Index  int     // page number
	Events []Event // in time order
}

// decodePage decodes page number i of pages of pageSize bytes, whose bytes
// are p, appending its events to dst.
func decodePage(dst []Event, p []byte, i int, pageSize int64) ([]Event, error) {
	off := int64(i) * pageSize
	if len(p) < pageHeader || string(p[:4]) != pageMagic {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): bad header", fileEvents, i, off)
	}
	sum := binary.LittleEndian.Uint32(p[4:])
	count := binary.LittleEndian.Uint32(p[8:])
	used := binary.LittleEndian.Uint32(p[12:])
	first := binary.LittleEndian.Uint64(p[16:])
	base := int64(binary.LittleEndian.Uint64(p[24:]))
	if used < pageHeader || int(used) > len(p) {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d bytes used of %d", fileEvents, i, off, used, len(p))
	}
	if crc(p[8:used]) != sum {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): checksum mismatch", fileEvents, i, off)
	}
	if uint64(count) > uint64(used-pageHeader) {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d events in %d bytes", fileEvents, i, off, count, used)
	}
	b := p[pageHeader:used]
	t := base
	for k := range count {
		var e Event
		var vals [8]uint64
		for j := range vals {
			if j == 1 {
				if len(b) == 0 {
					return dst, fmt.Errorf("tracestore: %s: page %d: event %d truncated", fileEvents, i, k)
				}
				vals[j] = uint64(b[0])
				b = b[1:]
				continue
			}
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return dst, fmt.Errorf("tracestore: %s: page %d: event %d: bad varint at offset %#x", fileEvents, i, k, off+int64(used)-int64(len(b)))
			}
			vals[j], b = v, b[n:]
		}
		t += int64(vals[0])
		e.Index = first + uint64(k)
		e.Time = t
		e.Kind = trace.EventKind(vals[1])
		e.G, e.P, e.M = int64(vals[2])-1, int64(vals[3])-1, int64(vals[4])-1
		e.Stack = vals[5]
		// Args follow the stack: three more varints.
		e.Args[0] = vals[6]
		e.Args[1] = vals[7]
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return dst, fmt.Errorf("tracestore: %s: page %d: event %d: bad varint", fileEvents, i, k)
		}
		e.Args[2], b = v, b[n:]
		dst = append(dst, e)
	}
	if len(b) != 0 {
		return dst, fmt.Errorf("tracestore: %s: page %d: %d bytes after its %d events", fileEvents, i, len(b), count)
	}
	return dst, nil
}
