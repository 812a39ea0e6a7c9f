// Package tracestore stores a Go execution trace in a compact, indexed
// form that answers timeline and stack queries without scanning the trace:
// the three structures of pctab's seeds put to work together.
//
//   - Every stack is stored once, in the stack DAG of package
//     stackcompress, over a table of logical frames (function, file, line).
//   - Every timeline lane (a goroutine's states, a proc's states, a
//     thread's syscalls, the ranges and user regions of a goroutine, GC
//     phases, tasks) keeps its spans sorted by start, and an implicit
//     in-order forest (package forest) over blocks of spans answers "the
//     longest span, the busy time and the span count in [t0, t1)" in
//     O(log N).
//   - Disk-map indexes (package diskmap) map every function name and every
//     file:line of every event's stack to the pages of the event log that
//     hold such an event, read straight from memory-mapped files.
//
// # The store
//
// Build reads a trace once, streaming (golang.org/x/exp/trace), and writes
// a directory:
//
//	manifest.json  schema_version, counts, time range, time quantum, and
//	               the size and CRC-32C of every other file
//	events.log     the event log in pages of delta-coded varint records,
//	               each compressed with DEFLATE, decodable alone and
//	               carrying its own CRC-32C (see Page)
//	pages.idx      the first and last time, first event and offset of
//	               every page
//	stacks.dag     the stack DAG (stackcompress's file format)
//	frames.tab     the logical frames the DAG's frame numbers index
//	strings.tab    every name: functions, files, wait reasons, regions
//	lanes.tab      the lanes: track, layer, depth, ID, span count (varints)
//	lanes.idx      every group of LaneGroup lanes' offset in lanes.tab,
//	               first span, block and forest value, and CRC-32C
//	spans.bin      every lane's spans' times, in varint blocks of
//	               BlockSpans spans
//	blocks.idx     every block's offset and first start
//	forest.bin     every lane's forest over its blocks
//	spanattr.bin   every span's kind, name and stack, in DEFLATE chunks
//	               of AttrChunk spans
//	attr.idx       every chunk's offset, size and codec
//	coarse.bin     coarse levels of the lanes with the most spans a
//	               bucket: at power-of-two time buckets, each bucket's
//	               span count, covered time and longest span, which
//	               answer a frame whose columns are snapped to them
//	               (Store.Snap) without decoding a span; written last, in
//	               what keeps the store at 0.99 times the trace's bytes
//	               (at most an eighth of them)
//	func.idx       function name -> event pages (a checked diskmap)
//	line.idx       "file:line" -> event pages (a checked diskmap)
//
// blocks.idx and forest.bin hold fixed-size records in the narrowest
// widths the store's duration, spans.bin's size and the span count allow.
//
// Options.MemLimit bounds the memory Build itself holds. Events go to
// the log a page at a time, spans to a temporary file that is then
// gathered into lanes in groups that fit a quarter of the limit. The row
// state of every goroutine that exits is dropped and its lanes' records
// go to a temporary file, sorted at the end in runs of an eighth of the
// limit. The function and line indexes hold an eighth of the limit each
// and spill sorted runs of their keys beyond it, merged as the indexes
// are written; the lanes' numbers in the store go to a file read through
// a cache of a sixteenth when they do not fit it; each lane's forest is
// written as it is built. What stays in memory grows with the trace's
// distinct stacks, frames and names, the lanes of its live goroutines, a
// bit per exited goroutine and a byte per index key while the indexes
// are written; never with its spans, lanes or pages. The trace reader
// holds one generation of the trace besides. The build's last step
// checks the store as Open does, keeping nothing per span or lane.
//
// Open reads a store back in time and memory that grow with its pages,
// strings and frames, never with its spans or its lanes: it checks the
// manifest, the small files against their CRC-32C, and every count
// against the size of its file, in arithmetic that cannot wrap. The
// lanes' records and the timeline's large files are mapped and checked as
// queries first read them: a group of LaneGroup lanes when one of its
// lanes is first asked for (its records against their CRC-32C and each
// other, its spans, blocks and forest values against where lanes.idx says
// the next group's begin; a lane of a corrupt group has no spans, and
// LaneError says why; some hundreds of groups are kept decoded), a block of
// spans when it is first decoded (it must decode in the one form Build
// writes, stay in order and match its forest leaf; a lane with a corrupt
// block answers as if it had no spans, and LaneError says why), a lane's
// coarse levels when they are first used (their CRC-32C and every record
// against the lane's span count; levels that fail are not used, and the
// spans answer instead), a chunk
// of span attributes when it is first inflated (the kinds and names of
// at most 32 MiB of chunks are kept), and every page of the event log when it is
// read. The forest's nodes above its leaves are combined unchecked: a
// corrupt node can make a busy time or a longest span wrong, never an
// index outside the range asked or a panic. Verify checks everything, every file against its CRC-32C and
// every span, as Build does before it renames a store into place. A
// truncated or corrupt store gives an error that names the file and the
// offset, never a panic; a corrupt index answers "every page", so a query
// is never wrong, only slower.
package tracestore
