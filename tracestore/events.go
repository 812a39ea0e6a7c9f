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

// A record in a page is a flags byte, then varints:
//
//	flags: the kind in bits 0-3; bit 4: same goroutine as the previous
//	       event of the page; bit 5: same proc; bit 6: same thread;
//	       bit 7: a stack follows
//	dt:    time since the previous event of the page (the page's base
//	       time for its first)
//	g+1, p+1, m+1: those not the same as the previous event's
//	stack: if bit 7
//	args:  by kind: a StateTransition packs the resource kind (2 bits),
//	       the old and new state (3 bits each), whether the resource is
//	       the event's goroutine (1 bit) and the reason's string index
//	       into one varint, followed by the resource's ID plus one unless
//	       it is the goroutine; other kinds write as many of Args as they
//	       use (argCount).

// argCount is the number of Args a kind of event stores.
func argCount(k trace.EventKind) int {
	switch k {
	case trace.EventRangeBegin, trace.EventRangeActive, trace.EventRangeEnd, trace.EventTaskBegin, trace.EventTaskEnd, trace.EventLog:
		return 3
	case trace.EventRegionBegin, trace.EventRegionEnd, trace.EventMetric:
		return 2
	case trace.EventLabel:
		return 1
	}
	return 0
}

// recState is the state of the record coder: the previous event of the
// page.
type recState struct {
	t       int64
	g, p, m int64
}

// appendEvent appends e's record to b.
func appendEvent(b []byte, e *Event, st *recState) []byte {
	flags := byte(e.Kind) & 0xf
	if e.G == st.g {
		flags |= 1 << 4
	}
	if e.P == st.p {
		flags |= 1 << 5
	}
	if e.M == st.m {
		flags |= 1 << 6
	}
	if e.Stack != 0 {
		flags |= 1 << 7
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(e.Time-st.t))
	if e.G != st.g {
		b = binary.AppendUvarint(b, uint64(e.G+1))
	}
	if e.P != st.p {
		b = binary.AppendUvarint(b, uint64(e.P+1))
	}
	if e.M != st.m {
		b = binary.AppendUvarint(b, uint64(e.M+1))
	}
	if e.Stack != 0 {
		b = binary.AppendUvarint(b, e.Stack)
	}
	if e.Kind == trace.EventStateTransition {
		kind, from, to := e.Args[0]&0xff, e.Args[0]>>8&0xff, e.Args[0]>>16&0xff
		v := kind&3 | (from&7)<<2 | (to&7)<<5 | e.Args[2]<<9
		same := kind == uint64(trace.ResourceGoroutine) && e.Args[1] == uint64(e.G+1)
		if same {
			v |= 1 << 8
		}
		b = binary.AppendUvarint(b, v)
		if !same {
			b = binary.AppendUvarint(b, e.Args[1])
		}
	} else {
		for _, a := range e.Args[:argCount(e.Kind)] {
			b = binary.AppendUvarint(b, a)
		}
	}
	st.t, st.g, st.p, st.m = e.Time, e.G, e.P, e.M
	return b
}

// maxEventBytes bounds a record's size: a byte and 8 varints.
const maxEventBytes = 1 + 8*binary.MaxVarintLen64

// newRecState returns the coder state at the start of a page whose base
// time is base: no previous goroutine, proc or thread (-2 is none of
// them, -1 being "none").
func newRecState(base int64) recState { return recState{t: base, g: -2, p: -2, m: -2} }

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
	st := newRecState(base)
	uv := func(k uint32) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("tracestore: %s: page %d: event %d: bad varint at offset %#x", fileEvents, i, k, off+int64(used)-int64(len(b)))
		}
		b = b[n:]
		return v, nil
	}
	for k := range count {
		if len(b) == 0 {
			return dst, fmt.Errorf("tracestore: %s: page %d: event %d of %d missing", fileEvents, i, k, count)
		}
		flags := b[0]
		b = b[1:]
		e := Event{Index: first + uint64(k), Kind: trace.EventKind(flags & 0xf), G: st.g, P: st.p, M: st.m}
		dt, err := uv(k)
		if err != nil {
			return dst, err
		}
		e.Time = st.t + int64(dt)
		for j, ptr := range []*int64{&e.G, &e.P, &e.M} {
			if flags&(1<<(4+j)) == 0 {
				v, err := uv(k)
				if err != nil {
					return dst, err
				}
				*ptr = int64(v) - 1
			}
		}
		if e.G < -1 || e.P < -1 || e.M < -1 {
			return dst, fmt.Errorf("tracestore: %s: page %d: event %d: no goroutine, proc or thread to repeat", fileEvents, i, k)
		}
		if flags&(1<<7) != 0 {
			if e.Stack, err = uv(k); err != nil {
				return dst, err
			}
		}
		if e.Kind == trace.EventStateTransition {
			v, err := uv(k)
			if err != nil {
				return dst, err
			}
			e.Args[0] = v&3 | (v>>2&7)<<8 | (v>>5&7)<<16
			e.Args[2] = v >> 9
			if v&(1<<8) != 0 {
				e.Args[1] = uint64(e.G + 1)
			} else if e.Args[1], err = uv(k); err != nil {
				return dst, err
			}
		} else {
			for j := range argCount(e.Kind) {
				if e.Args[j], err = uv(k); err != nil {
					return dst, err
				}
			}
		}
		st.t, st.g, st.p, st.m = e.Time, e.G, e.P, e.M
		dst = append(dst, e)
	}
	if len(b) != 0 {
		return dst, fmt.Errorf("tracestore: %s: page %d: %d bytes after its %d events", fileEvents, i, len(b), count)
	}
	return dst, nil
}
