// Package lookupbench times PC-value lookups on the tables of a real Go
// binary: Go's varint format (with and without the runtime's per-M cache),
// the linear-index format of golang/go#61984 and each of its variants, and a
// flat array as the speed-of-light reference.
//
// # Samples
//
// A sample is one (table, PC) pair: a reference to a table by a function
// (objscan.Ref) and a PC inside that function that the table covers. Samples
// are drawn uniformly over references (a function's pcsp, pcfile, pcln or
// PCDATA table: [ByReference], the default, which weighs a table shared by
// many functions as often as the runtime would reach it) or uniformly over
// distinct tables ([ByTable], then uniformly over that table's references).
// The PC is chosen by a [PCs] rule:
//
//   - [PCRandom]: uniformly random among the PCs the table covers (in
//     PC-quantum steps, so every PC is an instruction boundary on fixed-width
//     architectures);
//   - [PCZero]: the function entry;
//   - [PC4096]: byte offset 4096 from the entry, only in tables that cover it;
//   - [PCReturn]: a return address, the PC right after a call instruction of
//     the function, found by disassembling the function's code with
//     internal/callsites (golang.org/x/arch: x86asm for amd64 and 386,
//     arm64asm for arm64).
//     As in the runtime's unwinder (runtime/traceback.go), pcsp is looked up
//     at the return address itself (funcspdelta(f, frame.pc)) and every other
//     table at the return address minus one (symPC for pcfile, pcln and the
//     inline tree; getStackMap's continpc-1 for StackMapIndex). Other
//     architectures have no disassembler here and fall back to random PCs,
//     under the name "random-fallback".
//
// Three access patterns are timed for each rule: "hot", 1,024 pairs that
// are looked up over and over in the same order (their tables stay in the
// CPU caches, and a branch predictor can learn the sequence, as in
// golang/go#61984's benchmark); "hot-shuffled", the same pairs in an order
// shuffled for every pass (ShuffledPasses different permutations, then the
// pattern repeats), which no predictor learns; and "cold", 1,048,576 pairs
// spread over the whole pctab in random order (most lookups miss the
// caches). Both sizes are powers of two so that the timing loops index them
// with a mask. Every encoding visits the samples through the same order
// array, so the patterns differ only in its contents.
//
// # Encodings
//
//   - "varint": runtime.pcvalue without the cache in the runtime's code
//     shape (varintpc.PCValue: a step call per entry that is not inlined,
//     updating pc and val through pointers): the baseline of every ratio.
//   - "varint-walk": varintpc.Lookup, the same walk in one inlined loop,
//     faster than the runtime's code: a second, labelled baseline.
//   - "varint-cache-cold": the runtime-shaped pcvalue with its per-M cache
//     (varintpc.Cache.PCValue), looking up the samples in order: consecutive
//     keys differ, so the cache (2x8 entries) misses, except where a set has
//     few distinct keys (PC 0 or PC 4096 in a small binary) and a key comes
//     back while still cached.
//   - "varint-cache-7in8": the same cache, with an access pattern in which
//     each key repeats: groups of 2 samples are looked up alternately 8 times
//     (a b a b ...), so 7 of 8 lookups hit. Random replacement in the cache
//     can evict a key of the group early (fewer hits), and in a set with few
//     distinct keys a group can find its keys cached already (more hits).
//   - "linear": the spec encoding in a linearpc.Set holding every distinct
//     table of the binary, looked up with Set.TryLookup, the leaf function
//     that has no frame, and Set.Lookup for what it leaves (the pattern
//     linearpc's try.go documents).
//   - "linear-<variant>": the same for every other linearpc variant
//     (Set.Lookup alone for the variants TryLookup does not serve).
//   - "linear-branchy": the spec set looked up with Set.TryLookupBranchy and
//     Set.LookupBranchy for what it leaves: a branchy decoder that turns
//     data into branches (fastest when a predictor learns them: the hot set
//     in order).
//   - "cfps-varint-pcln": the pctab toolchain's pctab_varln tables: pcln
//     tables in varint, looked up as "varint" does, and every other kind in
//     cf-palette-short, looked up as "linear-cf-palette-short" does. The
//     runtime reads pcln from its own call site, so a pass looks up its
//     pcln samples and the rest in two loops, and the kind costs no branch.
//   - "flat": one int32 per PC quantum for every table the sample set
//     touches, the speed-of-light reference: one load per lookup, at the
//     price of memory (four bytes per PC quantum of every table touched).
//
// Both cache encodings report the hit rate they measured (hits/op). Every
// encoding is first checked against the decoded table on every sample
// of the set, so a timing is never reported for wrong answers.
//
// # Timing
//
// [Bench.Run] times every (set, PCs, encoding) combination with the semantics
// of go test -bench: the number of lookups grows until one run takes at least
// -benchtime (or is a fixed count, "100x"), and -count repeats it. For each
// set and PC rule, the encodings run back to back, in an order rotated every
// round, so the ratios between them are measured side by side. One op is one
// lookup. Group.Ratios summarizes each encoding's time over a baseline's
// (varint, varint-walk, varint-cache-7in8) as the median of the per-round
// ratios with a 95% confidence interval (internal/stat, on
// golang.org/x/perf/benchmath); with fewer than 6 rounds there is no
// interval.
//
// Each run records its wall time, as go test does (ns/op), and on Linux the
// CPU time of the timing thread (cpu-ns/op; the goroutine is locked to its
// thread while it runs), which leaves out the time other processes had the
// CPU. On a shared machine the two differ (Result.WallPerCPU says by how
// much); the text report and the ratios use the thread CPU time when there is
// one (Result.Clock).
//
// [Bench.Offsets] times the same encodings by how far into its function
// the PC lies: a hot-shuffled set per 512-byte bucket of byte offsets, from
// 0 to 8 KiB, where a varint lookup's cost grows with the offset and a
// linear lookup's does not.
//
// The tables are decoded by host code, so the speed of an arm64 binary's
// tables is the host's speed.
//
// # arm64 timings under emulation
//
// To time lookups on arm64 without arm64 hardware, cross-build the command
// and run it under qemu user mode:
//
//	GOARCH=arm64 go build -o /tmp/pctab-stats-arm64 ./cmd/pctab-stats
//	qemu-aarch64 /tmp/pctab-stats-arm64 -bench -format=bench BINARY
//
// [CurrentHost] recognizes the emulation (a GOARCH=arm64 process on an x86
// CPU), and every output labels those numbers as emulated: they measure qemu's
// translated code, which says little about real arm64 hardware, so compare
// encodings only within one emulated run.
package lookupbench

import (
	"fmt"
	"runtime"

	"github.com/pctab/pctab/internal/par"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// Default sample set sizes.
const (
	HotSize  = 1 << 10 // pairs in the hot set
	ColdSize = 1 << 20 // pairs in the cold set: at least 1,000,000
)

// DefaultSeed seeds sampling and cache replacement when Options.Seed is 0.
const DefaultSeed = 0x5eed_61984

// Options configure [New].
type Options struct {
	// Sampling chooses what is sampled uniformly: references (the default)
	// or distinct tables.
	Sampling Sampling
	// HotSize and ColdSize are the number of pairs in the hot and cold
	// sets; 0 means HotSize and ColdSize. Each must be a power of two.
	HotSize, ColdSize int
	// Seed makes sampling and cache replacement reproducible; 0 means
	// DefaultSeed.
	Seed uint64
	// Workers bounds the goroutines that prepare the encodings;
	// 0 means GOMAXPROCS. Timing always runs on one goroutine.
	Workers int
}

// Bench holds the tables of one binary in every encoding, ready to be
// sampled and timed. It is not safe for concurrent use.
type Bench struct {
	f     *objscan.File
	opt   Options
	q     uint32 // PC quantum
	pctab []byte
	tabs  []pcvalue.Table // decoded, indexed like f.Tabs

	variants []linearpc.Variant
	sets     []*linearpc.Set
	offs     [][]uint32 // offs[v][i]: offset of table i in sets[v]

	calls    [][]uint32 // per function: return address offsets from entry, ascending
	disasm   string     // the disassembler used, "" if none
	noCalls  string     // why there are no return addresses
	numCalls int

	sink int64 // keeps the timed loops' results alive
}

// New decodes every distinct table of f, encodes them in every linear
// variant, and finds the return addresses of every function.
func New(f *objscan.File, opt Options) (*Bench, error) {
	if opt.HotSize == 0 {
		opt.HotSize = HotSize
	}
	if opt.ColdSize == 0 {
		opt.ColdSize = ColdSize
	}
	for _, n := range []int{opt.HotSize, opt.ColdSize} {
		if n < hitKeys || n&(n-1) != 0 {
			return nil, fmt.Errorf("lookupbench: sample set size %d is not a power of two of at least %d", n, hitKeys)
		}
	}
	if opt.Seed == 0 {
		opt.Seed = DefaultSeed
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if f.PCQuantum <= 0 {
		return nil, fmt.Errorf("lookupbench: %s: PC quantum %d", f.Path, f.PCQuantum)
	}
	b := &Bench{f: f, opt: opt, q: uint32(f.PCQuantum), pctab: f.PCTab(), variants: linearpc.Variants()}
	if err := b.decode(); err != nil {
		return nil, err
	}
	b.encode()
	if err := b.findCalls(); err != nil {
		return nil, err
	}
	return b, nil
}

// decode decodes every distinct table, in parallel.
func (b *Bench) decode() error {
	tabs := b.f.Tabs
	b.tabs = make([]pcvalue.Table, len(tabs))
	return par.For(len(tabs), b.opt.Workers, func(_, i int) error {
		t, _, err := varintpc.Decode(tabs[i].Data)
		if err != nil {
			return fmt.Errorf("lookupbench: %s: table at pctab offset %#x: %w", b.f.Path, tabs[i].Offset, err)
		}
		b.tabs[i] = t
		return nil
	})
}

// encode builds one Set per linear variant holding every distinct table in
// pctab order, as a binary would store them. Variants build in parallel.
func (b *Bench) encode() {
	b.sets = make([]*linearpc.Set, len(b.variants))
	b.offs = make([][]uint32, len(b.variants))
	par.For(len(b.variants), b.opt.Workers, func(_, v int) error {
		set := linearpc.NewSet(b.variants[v])
		offs := make([]uint32, len(b.tabs))
		for i := range b.tabs {
			offs[i] = set.Add(b.tabs[i])
		}
		b.sets[v], b.offs[v] = set, offs
		return nil
	})
}

// ReturnAddresses reports how many return addresses disassembly found and
// with which disassembler; with none, the reason.
func (b *Bench) ReturnAddresses() (n int, disassembler, reason string) {
	return b.numCalls, b.disasm, b.noCalls
}
