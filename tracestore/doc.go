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
//	manifest.json  schema_version, counts, time range, and the size and
//	               CRC-32C of every other file
//	events.log     the event log in fixed-size pages, each decodable alone
//	               and carrying its own CRC-32C (see Page)
//	pages.idx      the first and last time and first event of every page
//	stacks.dag     the stack DAG (stackcompress's file format)
//	frames.tab     the logical frames the DAG's frame numbers index
//	strings.tab    every name: functions, files, wait reasons, regions
//	lanes.tab      the lanes: track, layer, depth, span and block counts
//	spans.bin      every lane's spans, sorted by start
//	forest.bin     every lane's forest over blocks of its spans
//	func.idx       function name -> event pages (a checked diskmap)
//	line.idx       "file:line" -> event pages (a checked diskmap)
//
// The heap Build uses grows with the distinct stacks, frames, names, index
// keys and lanes of the trace, never with its events or spans: events go
// to the log page by page, and spans to a temporary file that is then
// scattered into lanes through a memory mapping (the page cache holds it,
// and the kernel may write it back and evict it).
//
// Open reads a store back and checks it: the small files against their
// CRC-32C, spans.bin and forest.bin too, and every page of the event log
// when it is read. A truncated or corrupt store gives an error that names
// the file and the offset, never a panic; a corrupt index answers "every
// page", so a query is never wrong, only slower.
package tracestore
