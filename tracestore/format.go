package tracestore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"strings"
)

// SchemaVersion is the version of the store's format and of its
// manifest.json. Version 2 added the manifest's truncated field. Version 3
// is the compact format (compressed event pages, narrow timeline files)
// and lets the manifest list files this reader does not know (see
// FileSum.Optional). Version 4 adds lanes.idx, which lets Open read
// lanes.tab lazily. Version 5 bounds how far a compressed page or chunk
// inflates (128×). Version 6 adds the manifest's truncated.partial_events
// and truncated.framing, and truncated.generations counts only whole
// generations; its files are version 5's. Open reads versions 5 and 6: a
// store of an older version is rebuilt from its trace.
const SchemaVersion = 6

// oldestSchemaVersion is the oldest version Open reads.
const oldestSchemaVersion = 5

// PageSize is the default size of a page of the event log: the record
// bytes it holds before compression.
const PageSize = 64 << 10

// Page sizes Options.PageSize may ask for.
const (
	MinPageSize = 1 << 10
	MaxPageSize = 1 << 24
)

// BlockSpans is the number of spans a leaf of a lane's forest aggregates:
// the unit spans.bin is read in.
const BlockSpans = 64

// pageHeader is the size of a page's header (see decodePage).
const pageHeader = 40

const pageMagic = "TSP3"

// File names in a store directory.
const (
	fileManifest = "manifest.json"
	fileEvents   = "events.log"
	filePages    = "pages.idx"
	fileStacks   = "stacks.dag"
	fileFrames   = "frames.tab"
	fileStrings  = "strings.tab"
	fileLanes    = "lanes.tab"
	fileLaneIdx  = "lanes.idx"
	fileSpans    = "spans.bin"
	fileForest   = "forest.bin"
	fileFuncIdx  = "func.idx"
	fileLineIdx  = "line.idx"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// A TrackKind says what a lane's track is.
type TrackKind uint8

// Track kinds.
const (
	TrackGoroutine TrackKind = 1 + iota
	TrackProc
	TrackThread
	TrackGlobal // the whole program: GC phases, tasks
)

// String returns the track kind's name.
func (k TrackKind) String() string {
	switch k {
	case TrackGoroutine:
		return "goroutine"
	case TrackProc:
		return "proc"
	case TrackThread:
		return "thread"
	case TrackGlobal:
		return "global"
	}
	return fmt.Sprintf("TrackKind(%d)", uint8(k))
}

// A Layer says which spans of a track a lane holds.
type Layer uint8

// Layers.
const (
	LayerState  Layer = iota // a goroutine's or a proc's states
	LayerRange               // runtime ranges: GC mark assist, sweep, stop-the-world, GC mark phase
	LayerRegion              // user regions (runtime/trace.WithRegion), one lane per nesting depth
	LayerTask                // user tasks, on the global track
)

// String returns the layer's name.
func (l Layer) String() string {
	switch l {
	case LayerState:
		return "state"
	case LayerRange:
		return "range"
	case LayerRegion:
		return "region"
	case LayerTask:
		return "task"
	}
	return fmt.Sprintf("Layer(%d)", uint8(l))
}

// A SpanKind says what a span is.
type SpanKind uint8

// Span kinds.
const (
	SpanRunning  SpanKind = iota // a goroutine or proc running
	SpanRunnable                 // a goroutine waiting for a proc
	SpanWaiting                  // a goroutine blocked; Name is the reason
	SpanSyscall                  // a goroutine in a system call
	SpanRange                    // a runtime range; Name is its name
	SpanRegion                   // a user region; Name is its type
	SpanTask                     // a user task; Name is its type
	numSpanKinds
)

var spanKindNames = [...]string{"running", "runnable", "waiting", "syscall", "range", "region", "task"}

// String returns the span kind's name, such as "running".
func (k SpanKind) String() string {
	if int(k) < len(spanKindNames) {
		return spanKindNames[k]
	}
	return fmt.Sprintf("SpanKind(%d)", uint8(k))
}

// A Span is one interval of a lane. Times are nanoseconds since the
// trace's first event.
type Span struct {
	Start, Dur int64
	Kind       SpanKind
	Name       uint32 // string index: reason, range name, region or task type; 0 for none ("")
	Stack      uint32 // stack DAG id of the event that began the span; 0 for none
}

// End returns the span's end.
func (s Span) End() int64 { return s.Start + s.Dur }

// spanBytes is the size of a span in the builder's temporary files:
// start, duration, name, stack. The builder's times are below maxTime
// (2^62), which leaves the top two bits of the start and the duration
// free: they hold the kind, its low two bits in the start's and its third
// in the duration's. (The name had the top 8 bits of its 32, so that a
// trace with more than 2^24 distinct strings gave later spans the wrong
// names.)
const spanBytes = 24

const timeMask = 1<<62 - 1

func putSpan(b []byte, s Span) {
	binary.LittleEndian.PutUint64(b[0:], uint64(s.Start)&timeMask|uint64(s.Kind&3)<<62)
	binary.LittleEndian.PutUint64(b[8:], uint64(s.Dur)&timeMask|uint64(s.Kind>>2&1)<<62)
	binary.LittleEndian.PutUint32(b[16:], s.Name)
	binary.LittleEndian.PutUint32(b[20:], s.Stack)
}

func getSpan(b []byte) Span {
	start, dur := binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:])
	return Span{
		Start: int64(start & timeMask),
		Dur:   int64(dur & timeMask),
		Kind:  SpanKind(start>>62 | dur>>62&1<<2),
		Name:  binary.LittleEndian.Uint32(b[16:]),
		Stack: binary.LittleEndian.Uint32(b[20:]),
	}
}

// A kindName is a span's kind and name in one value: the kind above the
// name's 32 bits.
type kindName uint64

func packKindName(k SpanKind, name uint32) kindName { return kindName(k)<<32 | kindName(name) }

func (kn kindName) kind() SpanKind { return SpanKind(kn >> 32) }
func (kn kindName) name() uint32   { return uint32(kn) }

// Agg is the aggregate a lane's forest keeps over its spans: the longest
// span (by duration; of equal ones the first) and the total duration.
type Agg struct {
	Longest int64 // duration of the longest span, -1 if none
	Index   int64 // its index in the lane
	Busy    int64 // sum of the spans' durations
}

// noAgg is the identity of combine.
var noAgg = Agg{Longest: -1, Index: -1}

func combine(a, b Agg) Agg {
	r := a
	if b.Longest > a.Longest || (b.Longest == a.Longest && b.Longest >= 0 && b.Index < a.Index) {
		r.Longest, r.Index = b.Longest, b.Index
	}
	r.Busy = a.Busy + b.Busy
	return r
}

// widths are the byte widths of the fixed-size fields of blocks.idx and
// forest.bin, the narrowest that hold every value of the store: times
// (starts, durations, busy time) hold its duration, offsets the size of
// spans.bin, span indexes its span count. Writer and reader derive them
// from the manifest and the files' sizes.
type widths struct {
	t, o, i int
}

func storeWidths(duration, spansBytes, spans int64) widths {
	return widths{t: bytesFor(uint64(duration)), o: bytesFor(uint64(spansBytes)), i: bytesFor(uint64(spans))}
}

// bytesFor returns the bytes a little-endian unsigned v takes, at least 1.
func bytesFor(v uint64) int { return max(1, (bits.Len64(v)+7)/8) }

func putN(b []byte, v uint64, n int) {
	for k := range n {
		b[k] = byte(v >> (8 * k))
	}
}

func getN(b []byte, n int) uint64 {
	if len(b) >= 8 { // one load, masked
		return binary.LittleEndian.Uint64(b) & (^uint64(0) >> (64 - 8*n))
	}
	var v uint64
	for k := range n {
		v |= uint64(b[k]) << (8 * k)
	}
	return v
}

// aggBytes is the size of a forest value: longest, its index, busy.
func (w widths) aggBytes() int { return 2*w.t + w.i }

// blockIndexBytes is the size of a block's record in blocks.idx: its
// offset in spans.bin and its first start.
func (w widths) blockIndexBytes() int { return w.o + w.t }

func (w widths) putAgg(b []byte, a Agg) {
	putN(b, uint64(a.Longest), w.t)
	putN(b[w.t:], uint64(a.Index), w.i)
	putN(b[w.t+w.i:], uint64(a.Busy), w.t)
}

func (w widths) getAgg(b []byte) Agg {
	return Agg{
		Longest: int64(getN(b, w.t)),
		Index:   int64(getN(b[w.t:], w.i)),
		Busy:    int64(getN(b[w.t+w.i:], w.t)),
	}
}

// A Lane is one timeline row: the spans of one layer of one track, at one
// depth, none overlapping, sorted by start.
type Lane struct {
	Track TrackKind
	Layer Layer
	ID    int64 // goroutine, proc or thread ID; 0 for the global track
	Depth int   // nesting depth of regions, or the row of overlapping ranges or tasks
	Spans int64

	blockOff  int64 // index of the lane's first block in blocks.idx
	forestOff int64 // index of the lane's first forest value in forest.bin
	firstSpan int64 // index of the lane's first span of all the store's
}

// lanes.idx holds, for every group of LaneGroup lanes (the last may hold
// fewer), where the group's records begin in lanes.tab and the first
// span, block and forest value of its first lane (8 bytes each), and the
// CRC-32C of its records (4 bytes). A lane is found by its group's record
// and at most LaneGroup-1 records before it, and a group is checked
// whole when first read.
const (
	// LaneGroup is the number of lanes of a group of lanes.tab.
	LaneGroup = 64

	laneIdxBytes = 36
)

// A laneIdxEntry is a group's record in lanes.idx.
type laneIdxEntry struct {
	off, span, block, forest uint64
	crc                      uint32
}

func appendLaneIdx(b []byte, e laneIdxEntry) []byte {
	b = binary.LittleEndian.AppendUint64(b, e.off)
	b = binary.LittleEndian.AppendUint64(b, e.span)
	b = binary.LittleEndian.AppendUint64(b, e.block)
	b = binary.LittleEndian.AppendUint64(b, e.forest)
	return binary.LittleEndian.AppendUint32(b, e.crc)
}

func getLaneIdx(b []byte) laneIdxEntry {
	return laneIdxEntry{
		off:    binary.LittleEndian.Uint64(b),
		span:   binary.LittleEndian.Uint64(b[8:]),
		block:  binary.LittleEndian.Uint64(b[16:]),
		forest: binary.LittleEndian.Uint64(b[24:]),
		crc:    binary.LittleEndian.Uint32(b[32:]),
	}
}

// A lane's record in lanes.tab is its track and layer (a byte each),
// then varints: depth, ID (zigzag), span count. A lane's blocks and forest
// values follow the previous lane's.
func appendLane(b []byte, l Lane) []byte {
	b = append(b, byte(l.Track), byte(l.Layer))
	b = binary.AppendUvarint(b, uint64(l.Depth))
	b = binary.AppendVarint(b, l.ID)
	return binary.AppendUvarint(b, uint64(l.Spans))
}

// decodeLane decodes the lane record at the start of b and returns its
// size.
func decodeLane(b []byte) (Lane, int, error) {
	if len(b) < 2 {
		return Lane{}, 0, errors.New("truncated")
	}
	l := Lane{Track: TrackKind(b[0]), Layer: Layer(b[1])}
	n := 2
	depth, k := binary.Uvarint(b[n:])
	if k <= 0 || depth > maxRows {
		return l, 0, errors.New("bad depth")
	}
	n += k
	id, k := binary.Varint(b[n:])
	if k <= 0 {
		return l, 0, errors.New("bad ID")
	}
	n += k
	spans, k := binary.Uvarint(b[n:])
	if k <= 0 || spans > maxTime {
		return l, 0, errors.New("bad span count")
	}
	n += k
	l.Depth, l.ID, l.Spans = int(depth), id, int64(spans)
	return l, n, nil
}

// blocks returns the number of blocks of a lane of n spans.
func blocks(n int64) int64 { return (n + BlockSpans - 1) / BlockSpans }

// A block of spans in spans.bin holds its spans' times, for each span a
// varint and, if it says so, two more:
//
//	v:     d/q<<2, plus 2 if a gap follows, plus 1 if a remainder does,
//	       where d is the duration
//	gap:   the start minus the previous span's end (the block's first
//	       start is in blocks.idx) g, as g/q<<1, plus 1 and followed by
//	       g%q if that is not 0
//	rem:   d%q, if not 0
//
// q is the store's time quantum (the manifest's time_quantum): the
// trace's clock ticks, as a rule, in which most durations are whole. The
// spans' kinds, names and stacks are in spanattr.bin (see appendAttrs).
//
// blocks.idx holds, per block, its offset in spans.bin and its first
// start, in the narrow widths of type widths.

// MaxTimeQuantum is the largest time quantum of a store.
const MaxTimeQuantum = 1 << 20

func appendBlock(b []byte, spans []Span, q int64) []byte {
	prev := spans[0].Start
	for _, s := range spans {
		gap := uint64(s.Start - prev)
		v := uint64(s.Dur/q) << 2
		if gap != 0 {
			v |= 2
		}
		if s.Dur%q != 0 {
			v |= 1
		}
		b = binary.AppendUvarint(b, v)
		if gap != 0 {
			if r := gap % uint64(q); r != 0 {
				b = binary.AppendUvarint(b, gap/uint64(q)<<1|1)
				b = binary.AppendUvarint(b, r)
			} else {
				b = binary.AppendUvarint(b, gap/uint64(q)<<1)
			}
		}
		if s.Dur%q != 0 {
			b = binary.AppendUvarint(b, uint64(s.Dur%q))
		}
		prev = s.End()
	}
	return b
}

// decodeBlock decodes the times of the n spans of a block from b, the
// first starting at start, into dst. It checks that no value overflows
// and that the block is in the one form appendBlock writes.
func decodeBlock(dst []Span, b []byte, start int64, n int, q int64) ([]Span, error) {
	prev := start
	uq := uint64(q)
	uv := func() (uint64, bool) {
		if len(b) > 0 && b[0] < 0x80 { // most values are one byte
			v := uint64(b[0])
			b = b[1:]
			return v, true
		}
		v, m := binary.Uvarint(b)
		if m <= 0 || m != uvarintLen(v) { // only the shortest form
			return 0, false
		}
		b = b[m:]
		return v, true
	}
	for k := range n {
		v, ok := uv()
		if !ok {
			return dst, fmt.Errorf("span %d: bad varint", k)
		}
		if k == 0 && v&2 != 0 {
			return dst, fmt.Errorf("span %d: a gap before a block's first span", k)
		}
		dur := v >> 2
		var gap uint64
		if dur > maxTime/uq {
			return dst, fmt.Errorf("span %d: duration out of range", k)
		}
		dur *= uq
		if v&2 != 0 {
			g, ok := uv()
			var r uint64
			if ok && g&1 != 0 {
				r, ok = uv()
				ok = ok && r != 0 && r < uq
			}
			if !ok || g>>1 > maxTime/uq {
				return dst, fmt.Errorf("span %d: bad gap", k)
			}
			gap = g>>1*uq + r
			if gap == 0 {
				return dst, fmt.Errorf("span %d: a gap of 0", k)
			}
		}
		if v&1 != 0 {
			r, ok := uv()
			if !ok || r == 0 || r >= uq {
				return dst, fmt.Errorf("span %d: bad remainder", k)
			}
			dur += r
		}
		if gap > maxTime || dur > maxTime {
			return dst, fmt.Errorf("span %d: value out of range", k)
		}
		s := Span{Start: prev + int64(gap), Dur: int64(dur)}
		if s.Start < prev || s.End() < s.Start || s.End() > maxTime {
			return dst, fmt.Errorf("span %d: time overflows", k)
		}
		prev = s.End()
		dst = append(dst, s)
	}
	if len(b) != 0 {
		return dst, fmt.Errorf("%d bytes after its %d spans", len(b), n)
	}
	return dst, nil
}

// The spans' kinds, names and stacks are in spanattr.bin, in chunks of
// AttrChunk spans (the spans of every lane, lane after lane), each
// compressed with DEFLATE (or stored raw, if that is not larger). A
// chunk's records are, per span, a head byte and varints:
//
//	head:  the kind in bits 0-2; bit 3: a name follows; bits 4-5: the
//	       stack: 0 none, 1 the same as the previous span of the same
//	       kind in the chunk, 2 it follows; bits 6-7 clear
//	name:  the name's string index, if not 0
//	stack: the stack, if bits 4-5 say so
//
// attr.idx holds, per chunk, its offset in spanattr.bin (8 bytes), its
// record bytes (4 bytes) and its codec (4 bytes: codecRaw or
// codecDeflate).
const (
	fileAttrs    = "spanattr.bin"
	fileAttrIdx  = "attr.idx"
	attrIdxBytes = 16

	// AttrChunk is the number of spans of a chunk of spanattr.bin.
	AttrChunk = 4096

	// maxAttrBytes bounds a span's record in spanattr.bin.
	maxAttrBytes = 1 + 2*binary.MaxVarintLen32

	attrName      = 1 << 3
	attrStackSame = 1 << 4
	attrStack     = 2 << 4
	attrStackMask = 3 << 4
)

// appendAttr appends span s's record to b; last is the chunk's last
// stack of each kind.
func appendAttr(b []byte, s Span, last *[numSpanKinds]uint32) []byte {
	head := byte(s.Kind)
	if s.Name != 0 {
		head |= attrName
	}
	switch {
	case s.Stack == 0:
	case s.Stack == last[s.Kind]:
		head |= attrStackSame
	default:
		head |= attrStack
	}
	b = append(b, head)
	if s.Name != 0 {
		b = binary.AppendUvarint(b, uint64(s.Name))
	}
	if head&attrStackMask == attrStack {
		b = binary.AppendUvarint(b, uint64(s.Stack))
	}
	if s.Stack != 0 {
		last[s.Kind] = s.Stack
	}
	return b
}

// decodeAttrs decodes the n records of a chunk of spanattr.bin, calling
// visit with each span's kind, name and stack. The records must fill b
// exactly, each in the one form appendAttr writes.
func decodeAttrs(b []byte, n int, visit func(k int, kind SpanKind, name, stack uint32)) error {
	var last [numSpanKinds]uint32
	for k := range n {
		if len(b) == 0 {
			return fmt.Errorf("span %d of %d missing", k, n)
		}
		head := b[0]
		b = b[1:]
		kind := SpanKind(head & 7)
		if kind >= numSpanKinds || head&0xc0 != 0 || head&attrStackMask == attrStackMask {
			return fmt.Errorf("span %d: bad head byte %#x", k, head)
		}
		var name, stack uint64
		if head&attrName != 0 {
			v, m := binary.Uvarint(b)
			if m <= 0 || m != uvarintLen(v) || v == 0 || v > math.MaxUint32 {
				return fmt.Errorf("span %d: bad name", k)
			}
			name, b = v, b[m:]
		}
		switch head & attrStackMask {
		case attrStackSame:
			if stack = uint64(last[kind]); stack == 0 {
				return fmt.Errorf("span %d: no stack to repeat", k)
			}
		case attrStack:
			v, m := binary.Uvarint(b)
			if m <= 0 || m != uvarintLen(v) || v == 0 || v > 0xffffffff || v == uint64(last[kind]) {
				return fmt.Errorf("span %d: bad stack", k)
			}
			stack, b = v, b[m:]
		}
		if stack != 0 {
			last[kind] = uint32(stack)
		}
		visit(k, kind, uint32(name), uint32(stack))
	}
	if len(b) != 0 {
		return fmt.Errorf("%d bytes after its %d spans", len(b), n)
	}
	return nil
}

// forestValues returns the number of forest values of a lane of n spans:
// two per whole block.
func forestValues(n int64) int64 { return 2 * (n / BlockSpans) }

// A Frame is one logical frame of a stack.
type Frame struct {
	Func, File string
	Line       uint32
}

func crc32New() hash32 { return crc32.New(castagnoli) }

type hash32 interface {
	io.Writer
	Sum32() uint32
}

const fileBlocks = "blocks.idx"

// maxStackFrames bounds a stack's frames in a store: x/exp/trace reads
// at most 128 (Go 1.22 and later) or 1,000 (older) a stack. Open's stack
// DAG reader refuses deeper ones, which only a hostile stacks.dag holds
// (a chain of nodes costs a bit or two each), so that what Stack
// allocates stays bounded.
const maxStackFrames = 1024

// pageIndexBytes is the size of a page's record in pages.idx: first and
// last event time, first event index, offset in events.log.
const pageIndexBytes = 32

// maxTime is the latest time a store holds, in nanoseconds since the
// trace's first event (146 years): span starts, ends and the differences
// of any two stay far from overflowing an int64.
const maxTime = 1 << 62

func laneCompare(a, c Lane) int {
	return cmp.Or(cmp.Compare(a.Track, c.Track), cmp.Compare(a.ID, c.ID), cmp.Compare(a.Layer, c.Layer), cmp.Compare(a.Depth, c.Depth))
}

// checkCounts checks the manifest's own fields; Open checks its counts
// against the files.
func (m *Manifest) checkCounts() error {
	switch {
	case m.Pages < 0, m.Lanes < 0, m.Spans < 0, m.Frames < 0, m.Strings < 0, m.TraceBytes < 0:
		return fmt.Errorf("tracestore: %s: negative counts", fileManifest)
	case m.Duration < 0 || m.Duration > maxTime:
		return fmt.Errorf("tracestore: %s: duration_ns %d out of [0, %d]", fileManifest, m.Duration, int64(maxTime))
	case m.Pages > 0 && m.Events/uint64(m.Pages) > uint64(m.PageSize)/2:
		// An event takes at least two bytes: flags and time.
		return fmt.Errorf("tracestore: %s: %d events do not fit in %d pages of %d bytes", fileManifest, m.Events, m.Pages, m.PageSize)
	case m.TimeQuantum < 1 || m.TimeQuantum > MaxTimeQuantum || m.TimeQuantum&(m.TimeQuantum-1) != 0:
		return fmt.Errorf("tracestore: %s: time_quantum %d is not a power of two in [1, %d]", fileManifest, m.TimeQuantum, MaxTimeQuantum)
	case m.Pages == 0 && m.Events > 0:
		return fmt.Errorf("tracestore: %s: %d events in no pages", fileManifest, m.Events)
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		if f.Bytes < 0 {
			return fmt.Errorf("tracestore: %s: %s has %d bytes", fileManifest, f.Name, f.Bytes)
		}
		if !plainName(f.Name) || f.Name == fileManifest || seen[f.Name] {
			return fmt.Errorf("tracestore: %s: file name %q is not a plain name, or repeated", fileManifest, f.Name)
		}
		if f.Optional && storeFile(f.Name) {
			return fmt.Errorf("tracestore: %s: the store's own %s is listed as optional", fileManifest, f.Name)
		}
		seen[f.Name] = true
	}
	// Every file Build writes is listed (coarse.bin aside: a store whose
	// build stopped before its coarse levels opens without them).
	for _, name := range storeFiles() {
		if !seen[name] {
			return fmt.Errorf("tracestore: %s: lists no %s", fileManifest, name)
		}
	}
	return nil
}

// decodeManifest decodes a manifest.json. A field it does not know, or
// anything after the object, is an error: the fields of every version it
// reads are Manifest's, so either means the file is corrupt.
func decodeManifest(data []byte, m *Manifest) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return fmt.Errorf("tracestore: %s: %w", fileManifest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("tracestore: %s: data after the object at offset %d", fileManifest, dec.InputOffset())
	}
	return nil
}

// plainName reports whether name is a file name of a store directory: not
// empty, no path separator, not "." or "..".
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}
