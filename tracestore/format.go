package tracestore

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// SchemaVersion is the version of the store's format and of its
// manifest.json. Version 2 added the manifest's truncated field. Version 3
// is the compact format (compressed event pages, narrow timeline files)
// and lets the manifest list files this reader does not know (see
// FileSum.Optional); Open reads only version 3: a store of an older
// version is rebuilt from its trace.
const SchemaVersion = 3

// oldestSchemaVersion is the oldest version Open reads.
const oldestSchemaVersion = 3

// PageSize is the default size of a page of the event log.
const PageSize = 64 << 10

// Page sizes Options.PageSize may ask for.
const (
	MinPageSize = 1 << 10
	MaxPageSize = 1 << 24
)

// BlockSpans is the number of spans a leaf of a lane's forest aggregates.
const BlockSpans = 16

// pageHeader is the size of a page's header: magic, CRC-32C of the rest of
// the used bytes, event count, used bytes, first event index, base time.
const pageHeader = 32

const pageMagic = "TSP1"

// File names in a store directory.
const (
	fileManifest = "manifest.json"
	fileEvents   = "events.log"
	filePages    = "pages.idx"
	fileStacks   = "stacks.dag"
	fileFrames   = "frames.tab"
	fileStrings  = "strings.tab"
	fileLanes    = "lanes.tab"
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
// start, duration, kind and name (kind in the top 8 bits), stack.
const spanBytes = 24

func putSpan(b []byte, s Span) {
	binary.LittleEndian.PutUint64(b[0:], uint64(s.Start))
	binary.LittleEndian.PutUint64(b[8:], uint64(s.Dur))
	binary.LittleEndian.PutUint32(b[16:], uint32(s.Kind)<<24|s.Name&0xffffff)
	binary.LittleEndian.PutUint32(b[20:], s.Stack)
}

func getSpan(b []byte) Span {
	kn := binary.LittleEndian.Uint32(b[16:])
	return Span{
		Start: int64(binary.LittleEndian.Uint64(b[0:])),
		Dur:   int64(binary.LittleEndian.Uint64(b[8:])),
		Kind:  SpanKind(kn >> 24),
		Name:  kn & 0xffffff,
		Stack: binary.LittleEndian.Uint32(b[20:]),
	}
}

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

const aggBytes = 24

func putAgg(b []byte, a Agg) {
	binary.LittleEndian.PutUint64(b[0:], uint64(a.Longest))
	binary.LittleEndian.PutUint64(b[8:], uint64(a.Index))
	binary.LittleEndian.PutUint64(b[16:], uint64(a.Busy))
}

func getAgg(b []byte) Agg {
	return Agg{
		Longest: int64(binary.LittleEndian.Uint64(b[0:])),
		Index:   int64(binary.LittleEndian.Uint64(b[8:])),
		Busy:    int64(binary.LittleEndian.Uint64(b[16:])),
	}
}

// A Lane is one timeline row: the spans of one layer of one track, at one
// depth, none overlapping, sorted by start.
type Lane struct {
	Track TrackKind
	ID    int64 // goroutine, proc or thread ID; 0 for the global track
	Layer Layer
	Depth int // nesting depth of regions, or the row of overlapping ranges or tasks
	Spans int64

	blockOff  int64 // index of the lane's first block in blocks.idx
	forestOff int64 // index of the lane's first forest value in forest.bin
}

const laneBytes = 40

func putLane(b []byte, l Lane) {
	b[0], b[1] = byte(l.Track), byte(l.Layer)
	binary.LittleEndian.PutUint16(b[2:], uint16(l.Depth))
	binary.LittleEndian.PutUint32(b[4:], 0)
	binary.LittleEndian.PutUint64(b[8:], uint64(l.ID))
	binary.LittleEndian.PutUint64(b[16:], uint64(l.Spans))
	binary.LittleEndian.PutUint64(b[24:], uint64(l.blockOff))
	binary.LittleEndian.PutUint64(b[32:], uint64(l.forestOff))
}

func getLane(b []byte) Lane {
	return Lane{
		Track:     TrackKind(b[0]),
		Layer:     Layer(b[1]),
		Depth:     int(binary.LittleEndian.Uint16(b[2:])),
		ID:        int64(binary.LittleEndian.Uint64(b[8:])),
		Spans:     int64(binary.LittleEndian.Uint64(b[16:])),
		blockOff:  int64(binary.LittleEndian.Uint64(b[24:])),
		forestOff: int64(binary.LittleEndian.Uint64(b[32:])),
	}
}

// blocks returns the number of blocks of a lane of n spans.
func blocks(n int64) int64 { return (n + BlockSpans - 1) / BlockSpans }

// A block of spans in spans.bin is, for each of its spans, four varints:
// the start minus the previous span's end (the block's first start, kept
// in blocks.idx, for the first), the duration, the kind plus eight times
// the name's string index, and the stack. blocks.idx holds, per block, its
// offset in spans.bin and its first start (8 bytes each).
const blockIndexBytes = 16

func appendBlock(b []byte, spans []Span) []byte {
	prev := spans[0].Start
	for _, s := range spans {
		b = binary.AppendUvarint(b, uint64(s.Start-prev))
		b = binary.AppendUvarint(b, uint64(s.Dur))
		b = binary.AppendUvarint(b, uint64(s.Kind)|uint64(s.Name)<<3)
		b = binary.AppendUvarint(b, uint64(s.Stack))
		prev = s.End()
	}
	return b
}

// decodeBlock decodes the n spans of a block from b, the first starting at
// start, into dst. It checks that no value overflows.
func decodeBlock(dst []Span, b []byte, start int64, n int) ([]Span, error) {
	prev := start
	for k := range n {
		var v [4]uint64
		for j := range v {
			if len(b) > 0 && b[0] < 0x80 { // most values are one byte
				v[j], b = uint64(b[0]), b[1:]
				continue
			}
			x, m := binary.Uvarint(b)
			if m <= 0 {
				return dst, fmt.Errorf("span %d: bad varint", k)
			}
			v[j], b = x, b[m:]
		}
		if v[0] > 1<<62 || v[1] > 1<<62 || v[2]>>3 > 0xffffff || v[2]&7 >= uint64(numSpanKinds) || v[3] > 0xffffffff {
			return dst, fmt.Errorf("span %d: value out of range", k)
		}
		s := Span{Start: prev + int64(v[0]), Dur: int64(v[1]), Kind: SpanKind(v[2] & 7), Name: uint32(v[2] >> 3), Stack: uint32(v[3])}
		if s.Start < prev || s.End() < s.Start || (k == 0 && s.Start != start) {
			return dst, fmt.Errorf("span %d: time overflows", k)
		}
		prev = s.End()
		dst = append(dst, s)
	}
	return dst, nil
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

// pageIndexBytes is the size of a page's record in pages.idx: first and
// last event time, first event index.
const pageIndexBytes = 24

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
	case m.Pages > 0 && m.Events/uint64(m.Pages) > uint64(m.PageSize-pageHeader)/2:
		// An event takes at least two bytes: flags and time.
		return fmt.Errorf("tracestore: %s: %d events do not fit in %d pages of %d bytes", fileManifest, m.Events, m.Pages, m.PageSize)
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
		seen[f.Name] = true
	}
	return nil
}

// plainName reports whether name is a file name of a store directory: not
// empty, no path separator, not "." or "..".
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}
