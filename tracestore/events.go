package tracestore

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

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
	//   - Experimental (GODEBUG=traceallocfree=1's allocations and
	//     frees): none; which experiment event it is and its arguments
	//     are not kept.
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
	shift   uint // the page's time quantum is 1<<shift
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
	b = appendTime(b, uint64(e.Time-st.t), st.shift)
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

// appendTime appends a time difference d in units of 1<<shift: d itself
// if shift is 0, else d>>shift<<1, plus 1 and followed by the remainder if
// there is one.
func appendTime(b []byte, d uint64, shift uint) []byte {
	if shift == 0 {
		return binary.AppendUvarint(b, d)
	}
	if r := d & (1<<shift - 1); r != 0 {
		b = binary.AppendUvarint(b, d>>shift<<1|1)
		return binary.AppendUvarint(b, r)
	}
	return binary.AppendUvarint(b, d>>shift<<1)
}

// timeLen returns the bytes appendTime appends.
func timeLen(d uint64, shift uint) int {
	if shift == 0 {
		return uvarintLen(d)
	}
	if r := d & (1<<shift - 1); r != 0 {
		return uvarintLen(d>>shift<<1|1) + uvarintLen(r)
	}
	return uvarintLen(d >> shift << 1)
}

// maxPageShift is the largest time quantum of a page, 1<<maxPageShift.
const maxPageShift = 16

// pageShift returns the time quantum (as a shift) that makes the time
// differences of a page's events shortest.
func pageShift(evs []Event) uint {
	var best int
	var shift uint
	for k := uint(0); k <= maxPageShift; k++ {
		n := 0
		for i := 1; i < len(evs); i++ {
			n += timeLen(uint64(evs[i].Time-evs[i-1].Time), k)
		}
		if k == 0 || n < best {
			best, shift = n, k
		}
	}
	return shift
}

// maxEventBytes bounds a record's size: a byte and 9 varints.
const maxEventBytes = 1 + 9*binary.MaxVarintLen64

// newRecState returns the coder state at the start of a page whose base
// time is base: no previous goroutine, proc or thread (-2 is none of
// them, -1 being "none").
func newRecState(base int64) recState { return recState{t: base, g: -2, p: -2, m: -2} }

// A Page is one decoded page of the event log.
type Page struct {
	Index  int     // page number
	Events []Event // in time order
}

// A page of the event log is a header of pageHeader bytes, then its
// records, stored raw or compressed with DEFLATE (RFC 1951):
//
//	0   magic "TSP3"
//	4   CRC-32C of every byte of the page after this field
//	8   event count (uint32)
//	12  record bytes, decoded (uint32): at most the store's page size
//	16  stored bytes after the header (uint32)
//	20  codec (uint32): codecRaw or codecDeflate in bits 0-7; in bits
//	    8-15 the shift of the page's time quantum (see appendTime)
//	24  index of the page's first event (uint64)
//	32  base time (uint64): the first event's time
//
// Pages follow each other in events.log; pages.idx holds each one's
// offset. Integers are little-endian.
const (
	codecRaw     = 0
	codecDeflate = 1
)

// pageCodec decodes pages, reusing its buffers and its DEFLATE reader.
type pageCodec struct {
	raw []byte
	fr  io.ReadCloser
	br  bytes.Reader
}

// decodePage decodes page number i, whose bytes p start at offset off of
// events.log, of a store whose pages hold at most pageSize record bytes,
// appending its events to dst. It allocates at most pageSize bytes of
// buffers (reused by the next call) and the events, which are fewer than
// the record bytes.
func (c *pageCodec) decodePage(dst []Event, p []byte, i int, off int64, pageSize int) ([]Event, error) {
	if len(p) < pageHeader || string(p[:4]) != pageMagic {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): bad header", fileEvents, i, off)
	}
	sum := binary.LittleEndian.Uint32(p[4:])
	count := binary.LittleEndian.Uint32(p[8:])
	raw := binary.LittleEndian.Uint32(p[12:])
	stored := binary.LittleEndian.Uint32(p[16:])
	codec := binary.LittleEndian.Uint32(p[20:])
	shift := uint(codec >> 8)
	codec &= 0xff
	if shift > maxPageShift {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): time quantum 1<<%d", fileEvents, i, off, shift)
	}
	first := binary.LittleEndian.Uint64(p[24:])
	base := int64(binary.LittleEndian.Uint64(p[32:]))
	if uint64(stored) != uint64(len(p)-pageHeader) {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d bytes stored, the page has %d", fileEvents, i, off, stored, len(p)-pageHeader)
	}
	if crc(p[8:]) != sum {
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): checksum mismatch", fileEvents, i, off)
	}
	if uint64(raw) > uint64(pageSize) || uint64(count) > uint64(raw)/2 {
		// An event takes at least two bytes: flags and time.
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d events in %d record bytes (pages hold %d)", fileEvents, i, off, count, raw, pageSize)
	}
	var b []byte
	switch codec {
	case codecRaw:
		if raw != stored {
			return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d record bytes stored raw in %d", fileEvents, i, off, raw, stored)
		}
		b = p[pageHeader:]
	case codecDeflate:
		if !inflationOK(uint64(raw), uint64(stored)) {
			// Checked before the buffer is made: a small page must not
			// claim a large one.
			return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d record bytes compressed to %d, more than %d× smaller", fileEvents, i, off, raw, stored, maxInflation)
		}
		if cap(c.raw) < int(raw) {
			c.raw = make([]byte, raw)
		}
		b = c.raw[:raw]
		if err := c.inflate(b, p[pageHeader:], codec); err != nil {
			return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %w", fileEvents, i, off, err)
		}
	default:
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): unknown codec %d", fileEvents, i, off, codec)
	}
	used := int64(len(b))
	// Room for the page's events at once: count is at most raw/2 (checked
	// above), and growing by append would allocate several times over.
	dst = slices.Grow(dst, int(count))
	st := newRecState(base)
	st.shift = shift
	uv := func(k uint32) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d: bad varint at record byte %d", fileEvents, i, off, k, used-int64(len(b)))
		}
		b = b[n:]
		return v, nil
	}
	for k := range count {
		if len(b) == 0 {
			return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d of %d missing", fileEvents, i, off, k, count)
		}
		flags := b[0]
		b = b[1:]
		e := Event{Index: first + uint64(k), Kind: trace.EventKind(flags & 0xf), G: st.g, P: st.p, M: st.m}
		dt, err := uv(k)
		if err != nil {
			return dst, err
		}
		if shift > 0 {
			v := dt
			if dt >>= 1; dt > maxTime>>shift {
				return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d: time out of range", fileEvents, i, off, k)
			}
			dt <<= shift
			if v&1 != 0 {
				r, err := uv(k)
				if err != nil {
					return dst, err
				}
				if r == 0 || r>>shift != 0 {
					return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d: time remainder %d of 1<<%d", fileEvents, i, off, k, r, shift)
				}
				dt += r
			}
		}
		if dt > maxTime || st.t+int64(dt) > maxTime {
			return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d: time out of range", fileEvents, i, off, k)
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
			return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d: no goroutine, proc or thread to repeat", fileEvents, i, off, k)
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
		return dst, fmt.Errorf("tracestore: %s: page %d (offset %#x): %d bytes after its %d events", fileEvents, i, off, len(b), count)
	}
	return dst, nil
}

// pageEncoder writes pages, reusing its DEFLATE writer.
type pageEncoder struct {
	fw   *flate.Writer
	fh   *flate.Writer // Huffman codes only
	buf  bytes.Buffer
	recs []byte
}

// appendPage appends to dst the page of events evs, in its records
// coded with the time quantum that makes them shortest, then compressed,
// unless that does not make them smaller.
func (c *pageEncoder) appendPage(dst []byte, evs []Event) []byte {
	shift := pageShift(evs)
	st := newRecState(evs[0].Time)
	st.shift = shift
	c.recs = c.recs[:0]
	for k := range evs {
		c.recs = appendEvent(c.recs, &evs[k], &st)
	}
	recs, count, first, base := c.recs, uint32(len(evs)), evs[0].Index, evs[0].Time
	codec, payload := c.compress(recs)
	at := len(dst)
	dst = append(dst, pageMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, count)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(recs)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, codec|uint32(shift)<<8)
	dst = binary.LittleEndian.AppendUint64(dst, first)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(base))
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[at+4:], crc(dst[at+8:]))
	return dst
}

// compress returns b compressed with DEFLATE, or b itself if that is not
// larger, and which of the two it is. The result aliases c's buffer
// until the next call.
func (c *pageEncoder) compress(b []byte) (codec uint32, out []byte) {
	c.buf.Reset()
	if c.fw == nil {
		c.fw, _ = flate.NewWriter(&c.buf, pageLevel)
	} else {
		c.fw.Reset(&c.buf)
	}
	c.fw.Write(b) // a bytes.Buffer does not fail
	c.fw.Close()
	if !inflationOK(uint64(len(b)), uint64(c.buf.Len())) {
		// Too compressible for a reader to accept: Huffman coding alone
		// spends at least a bit on every byte, at most 8× smaller.
		c.buf.Reset()
		if c.fh == nil {
			c.fh, _ = flate.NewWriter(&c.buf, flate.HuffmanOnly)
		} else {
			c.fh.Reset(&c.buf)
		}
		c.fh.Write(b)
		c.fh.Close()
	}
	if c.buf.Len() >= len(b) || !inflationOK(uint64(len(b)), uint64(c.buf.Len())) {
		return codecRaw, b
	}
	return codecDeflate, c.buf.Bytes()
}

// maxInflation bounds how many times its stored size a compressed page
// or chunk may inflate to. DEFLATE alone allows 1032×, which would let a
// page of 16 KB claim 16 MiB of records, and 8M events of some 700 MB;
// real traces' pages inflate up to 61× (the 64 KiB pages of the trace of
// go build std), and the writer codes a page that would inflate more
// with Huffman codes alone, which inflate at most 8×.
const maxInflation = 128

// inflationOK reports whether stored bytes may inflate to raw bytes.
func inflationOK(raw, stored uint64) bool {
	return raw/maxInflation <= stored && raw <= maxInflation*stored
}

// inflate decompresses data, stored with codec, into dst, which must have
// exactly the length of the original: any other length is an error.
func (c *pageCodec) inflate(dst, data []byte, codec uint32) error {
	switch codec {
	case codecRaw:
		if len(data) != len(dst) {
			return fmt.Errorf("%d bytes stored raw for %d", len(data), len(dst))
		}
		copy(dst, data)
		return nil
	case codecDeflate:
	default:
		return fmt.Errorf("unknown codec %d", codec)
	}
	if !inflationOK(uint64(len(dst)), uint64(len(data))) {
		return fmt.Errorf("%d bytes compressed to %d, more than %d× smaller", len(dst), len(data), maxInflation)
	}
	c.br.Reset(data)
	if c.fr == nil {
		c.fr = flate.NewReader(&c.br)
	} else if err := c.fr.(flate.Resetter).Reset(&c.br, nil); err != nil {
		return err
	}
	if _, err := io.ReadFull(c.fr, dst); err != nil {
		return fmt.Errorf("inflating %d bytes: %w", len(dst), err)
	}
	var one [1]byte
	if n, err := c.fr.Read(one[:]); n != 0 || err != io.EOF || c.br.Len() != 0 {
		return fmt.Errorf("compressed data longer than %d bytes, or bytes after it", len(dst))
	}
	return nil
}

// pageLevel is the DEFLATE level of the event log's pages.
const pageLevel = flate.DefaultCompression
