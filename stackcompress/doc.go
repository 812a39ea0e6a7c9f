// Package stackcompress stores call stacks as a bit-packed DAG, so that a
// profiler or tracer can keep millions of stacks in little memory.
//
// # The DAG
//
// Every distinct (frame, parent) pair is one node; node 0 is the root. A
// stack's ID is the index of its leaf node, and [Builder.Stack] or
// [Reader.Stack] walks the parents back to the root. Frames are integers:
// raw PCs, offsets into a binary's text, or indices of symbolized frames;
// package stackinput maps real stacks to them. Stacks go in and come out
// leaf first, as runtime.Callers, execution traces and pprof order them.
//
// Nodes live in pages of [Options.PageNodes] nodes (a power of two; default
// [DefaultPageNodes]). A page is one byte slice, structure of arrays: a
// header, the frames, then the parents, each array bit-packed at a width
// the page picks. The [Layout] says which widths:
//
//   - [LayoutSeed], the Superluminal design: 64-bit frames, and absolute
//     parent indices of 8, 16, 32 or 64 bits, the width of the largest
//     index the page can hold.
//   - [LayoutFrame32]: the same with 32-bit frames, for text offsets.
//   - [LayoutDelta32]: 32-bit frames, parents stored as index minus parent
//     in 8, 16, 32 or 64 bits, the width of the page's largest delta.
//   - [LayoutPacked], the one to use: frames bit-packed per page minus the
//     page's smallest, optionally through a dictionary of distinct frames,
//     and [ParentChain] parents: one bit per node says "my parent is the
//     node before me", which holds for every node of a newly inserted
//     suffix but its first; the other parents sit in a bit-packed exception
//     array reached through a rank directory, as deltas or absolute indices,
//     whichever is narrower in the page.
//
// # The builder
//
// [Builder.GetOrInsert] finds a (frame, parent) pair's node through an
// open-addressing hash map whose slots hold only node indices, 32 bits
// while the DAG has fewer than 1<<32 nodes; the keys are read back from the
// pages. A slot's bits above the index hold a fingerprint of the key's hash,
// so a probe decodes a node only when the fingerprint matches. The map
// stays at most half full and is rebuilt from the pages when it grows,
// never holding two copies. [Builder.Insert] adds a whole stack and keeps,
// per thread key, the last stack inserted with its nodes: the frames it
// shares from the root with the previous stack of the same thread need no
// map lookup ([Stats.CacheSaved]). With a dictionary, a second keyless
// map interns frames the same way.
//
// # Files
//
// [Builder.WriteTo] writes the pages behind a header, a directory and the
// dictionary; the page bytes on disk are the page bytes in memory, always
// little-endian, so a [Reader] uses them in place, through mmap where the
// platform has it ([Open]) or ReadAt ([NewReader]). Pages load on first use
// and the least recently used are evicted to keep within
// [ReaderOptions.MemoryBudget]. Every part has a CRC-32C and every loaded
// page is validated node by node (each parent below its node, dictionary
// indices in range, rank directory exact), so a corrupt file gives an
// error, never a panic or a wrong stack.
//
// # Measurements
//
// Package stackreport measures the layouts on real stacks, and
// `pctab-stats stacks` prints its report; the repository's docs/stacks.md
// holds the figures for the net/http test binary's trace.
package stackcompress
