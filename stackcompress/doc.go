// Package stackcompress stores call stacks as a bit-packed DAG, so that a
// profiler or tracer can keep millions of stacks in little memory, and
// measures what that costs on real Go stacks.
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
// The workload is the net/http test binary of go1.26.8, run as
//
//	go test -c -o /tmp/h/x.test net/http
//	cd $(go env GOROOT)/src/net/http
//	/tmp/h/x.test -test.run=. -test.short -test.trace=/tmp/h/t.out -test.cpuprofile=/tmp/h/c.pprof
//	pctab-stats stacks -trace /tmp/h/t.out /tmp/h/x.test
//
// (package stackcapture and its tests do the same, into
// os.UserCacheDir()/pctab-testbuild; set PCTAB_CAPTURE_PKGS=net/http to
// include it). Its trace holds 373,616 stacks of 2,876,832 frames: 23.0 MB
// raw at 8 B per frame. 12,443 of the stacks are distinct. The Go tracer's
// table, at 72 B + 8 B×(n+1) per unique stack, costs 2,077,320 B with n the
// trace's (logical) frames, and 1,972,904 B with the physical PCs it really
// stores (2,508,228 frames, derived by runtimeshim from the binary); resetting
// per generation, as the runtime does, it allocates 2,238,288 B over the 6
// generations. Every stack round-trips in every variant, from the builder
// and from the file (4096-node pages, cache keyed by goroutine):
//
//	variant              nodes   DAG bytes  B/node  vs tracer
//	pc/f64-absolute      60,546    606,064   10.01     3.3x   Superluminal layout
//	text/f32-absolute    60,546    363,880    6.01     5.4x
//	text/f32-delta       60,546    363,880    6.01     5.4x
//	text/fpack-chain     60,546    211,072    3.49     9.3x
//	pc/fpack-chain-dict  60,546    153,008    2.53    12.9x   pages 126,688 + dictionary 26,320
//	line/f32-absolute    59,623    358,344    6.01     5.5x
//	line/fpack-chain     59,623    123,672    2.07    16.0x   plus a 196,652 B symbol table
//
// The anchors were 9 to 16 B per node for Superluminal and 8 B per resolved
// node (16 while building) for Pyroscope's stack tree: the packed layout
// needs 2.53 B per node with raw PCs, dictionary included, and 2.07 B per
// node with function-and-line frames. Delta-coded parents at byte widths
// save nothing here: every page has some node whose parent is an old,
// shared prefix, so the page's largest delta needs 16 bits either way; the
// chain bitmap is what makes parents cheap (80% of the nodes are chained).
//
// The node map peaks at 524,288 B (131,072 four-byte slots, 8.7 B per node,
// freed after building; Superluminal's was 32 MiB of 8-byte slots) with a
// mean probe length of 1.31 to 1.40 slots (Superluminal: 2.2). The
// coherency cache, keyed by goroutine and bounded to [DefaultMaxThreads]
// threads, saves 63.6% of the lookups (64.3% unbounded; Superluminal:
// 60-90%); keyed by thread it saves 52.2%. On the compress/flate trace
// (91,061 stacks, 6,083 nodes) it saves 89.5%, and the packed layouts need
// 2.27 (pc) and 1.68 (line) B per node. Everything the builder holds at the
// end (pages, open page, maps, dictionary, caches) is 15.9 B per node for
// pc/fpack-chain-dict and 14.1 for line/fpack-chain, against Pyroscope's 16
// B per node while building.
//
// Insert throughput, counting every frame of every stack, cache hits
// included, per second of the inserting thread's CPU time, is 0.80 to 1.03
// ×10^8 frames/s across the variants (medians of three runs; one run
// without the cache gave 0.53 to 0.75 ×10^8). The machine was a shared
// 2-core host under load, so wall-clock rates were up to 5 times lower and
// varied from run to run; BenchmarkInsert here and BenchmarkInsertCapture
// in package stackreport are the reference.
package stackcompress
