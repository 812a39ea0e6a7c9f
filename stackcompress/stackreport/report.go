package stackreport

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/pctab/pctab/internal/cputime"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/pctab/pctab/stackcompress"
	"github.com/pctab/pctab/stackinput"
)

// Frame kinds.
const (
	FramesPC   = "pc"   // raw PCs, 64-bit
	FramesText = "text" // PC minus the text base, 32-bit
	FramesLine = "line" // interned (function, file, line)
)

// A Variant is one way to store a DAG: a frame kind and a page layout.
type Variant struct {
	Frames string
	Layout stackcompress.Layout
}

// Name returns "frames/layout", for example "pc/f64-absolute".
func (v Variant) Name() string { return v.Frames + "/" + v.Layout.String() }

// DefaultVariants returns the variants the report measures by default:
// the Superluminal layout on raw PCs; 32-bit text offsets with absolute
// and with delta-coded parents; and the bit-packed chain layout on text
// offsets, on dictionary-coded PCs and on logical frames.
func DefaultVariants() []Variant {
	return []Variant{
		{FramesPC, stackcompress.LayoutSeed()},
		{FramesText, stackcompress.LayoutFrame32()},
		{FramesText, stackcompress.LayoutDelta32()},
		{FramesText, stackcompress.Layout{Parents: stackcompress.ParentChain}},
		{FramesPC, stackcompress.LayoutPacked()},
		{FramesLine, stackcompress.LayoutFrame32()},
		{FramesLine, stackcompress.Layout{Parents: stackcompress.ParentChain}},
	}
}

// Cache keys: which samples share a coherency cache.
const (
	KeyGoroutine = "goroutine" // the sample's goroutine, else its thread
	KeyThread    = "thread"    // the sample's thread
	KeySingle    = "single"    // one cache for all samples
	KeyOff       = "off"       // no cache
)

// Options configure Measure.
type Options struct {
	PageNodes int    // nodes per page; 0 means stackcompress.DefaultPageNodes
	TextBase  uint64 // text base for text frames; 0 means the lowest nonzero PC seen
	CacheKey  string // one of the Key constants; "" means KeyGoroutine
	// MaxThreads bounds the threads the coherency cache remembers; 0 means
	// stackcompress.DefaultMaxThreads.
	MaxThreads int
	Variants   []Variant // nil means DefaultVariants

	// Physical, if set, holds the physical frames of each sample, in
	// sample order, innermost first: the return PCs the runtime's
	// frame-pointer unwinder stores before inline expansion, as
	// runtimeshim.StacksFromCorpus derives them from the binary. The
	// report then also costs the tracer's table with the PCs it stores:
	// physical ones, except for CPU samples, which it stores logical.
	Physical [][]uint64
}

// Tracer cost model of a unique stack (docs/pclntab-facts.md §5.1): a
// 72-byte traceMapNode plus the stack's words, one skip word and n PCs.
const (
	TracerNodeBytes  = 72
	TracerBytesPerPC = 8
)

// TracerStackBytes returns what the Go execution tracer's stack table
// spends on one unique stack of n frames on a 64-bit host.
func TracerStackBytes(n int) uint64 { return TracerNodeBytes + TracerBytesPerPC*uint64(n+1) }

// Anchors are the published figures the report compares against.
type Anchors struct {
	SuperluminalBytesPerNodeMin float64 `json:"superluminal_bytes_per_node_min"` // 8-bit parent pages
	SuperluminalBytesPerNodeMax float64 `json:"superluminal_bytes_per_node_max"` // 64-bit parent pages
	SuperluminalMeanProbe       float64 `json:"superluminal_mean_probe"`
	SuperluminalCacheSavedMin   float64 `json:"superluminal_cache_saved_min"`
	SuperluminalCacheSavedMax   float64 `json:"superluminal_cache_saved_max"`
	PyroscopeBuildBytesPerNode  float64 `json:"pyroscope_build_bytes_per_node"`
	PyroscopeBytesPerNode       float64 `json:"pyroscope_bytes_per_node"`
}

// PublishedAnchors returns the anchors of the issue: Superluminal's 9 to 16
// bytes per node, mean probe length 2.2 and 60-90% of lookups saved, and
// Pyroscope's 16 bytes per node while building and 8 resolved.
func PublishedAnchors() Anchors {
	return Anchors{9, 16, 2.2, 0.60, 0.90, 16, 8}
}

// A Report holds every number of the stacks report.
type Report struct {
	Source   string `json:"source"`
	CacheKey string `json:"cache_key"`
	TextBase uint64 `json:"text_base"` // base of the text frames

	Stacks        uint64 `json:"stacks"`         // samples: recorded stacks
	Frames        uint64 `json:"frames"`         // PC frames in all samples, as the source records them
	LogicalFrames uint64 `json:"logical_frames"` // logical frames in all samples, after inline expansion
	RawBytes      uint64 `json:"raw_bytes"`      // 8 bytes per PC frame
	UniqueStacks  uint64 `json:"unique_stacks"`  // distinct PC stacks
	DistinctPCs   uint64 `json:"distinct_pcs"`
	// DedupBytes costs each unique stack as the Go tracer stores it:
	// TracerStackBytes(n).
	DedupBytes uint64 `json:"dedup_bytes"`
	// Generations is the number of trace generations, and
	// DedupBytesPerGeneration the tracer's cost when, as the runtime does,
	// each generation's table holds the stacks of that generation.
	Generations             uint64 `json:"generations"`
	DedupBytesPerGeneration uint64 `json:"dedup_bytes_per_generation"`

	// With Options.Physical: the tracer's table costed with the PCs it
	// stores, physical for all but CPU samples. PhysicalFrames counts
	// them over all samples.
	PhysicalFrames                  uint64 `json:"physical_frames"`
	UniquePhysicalStacks            uint64 `json:"unique_physical_stacks"`
	DedupBytesPhysical              uint64 `json:"dedup_bytes_physical"`
	DedupBytesPhysicalPerGeneration uint64 `json:"dedup_bytes_physical_per_generation"`

	Variants []VariantReport `json:"variants"`
	Anchors  Anchors         `json:"anchors"`
}

// A VariantReport holds the numbers of one variant.
type VariantReport struct {
	Name      string `json:"name"`
	Frames    string `json:"frames"`
	Layout    string `json:"layout"`
	PageNodes int    `json:"page_nodes"`

	Nodes        uint64  `json:"nodes"`          // DAG nodes, the root included
	Pages        int     `json:"pages"`          // pages
	PageBytes    uint64  `json:"page_bytes"`     // bytes of all pages
	DictBytes    uint64  `json:"dict_bytes"`     // bytes of the frame dictionary
	DAGBytes     uint64  `json:"dag_bytes"`      // PageBytes + DictBytes
	BytesPerNode float64 `json:"bytes_per_node"` // DAGBytes / Nodes
	FileBytes    uint64  `json:"file_bytes"`     // the DAG file: DAGBytes plus header and directory
	// SymbolBytes is the table that turns line frames back into
	// functions, files and lines (LineFrames.TableBytes); 0 for other kinds.
	SymbolBytes uint64 `json:"symbol_bytes"`

	// BuildBytes is what the builder holds at the end: pages, the open
	// page, maps, dictionary and caches (Builder.MemBytes).
	BuildBytes   uint64  `json:"build_bytes"`
	MapPeakBytes uint64  `json:"map_peak_bytes"` // largest node map plus largest dictionary map
	MapSlots     uint64  `json:"map_slots"`      // node map slots at the end
	Lookups      uint64  `json:"lookups"`        // node map lookups
	MeanProbe    float64 `json:"mean_probe"`     // node map slots inspected per lookup
	CacheSaved   float64 `json:"cache_saved"`    // share of frames resolved by the coherency cache
	CacheThreads uint64  `json:"cache_threads"`  // threads the coherency cache remembers at the end

	InsertFrames uint64 `json:"insert_frames"` // frames inserted
	InsertNanos  int64  `json:"insert_nanos"`  // wall time spent inserting them
	// InsertCPUNanos is the CPU time of the inserting thread (Linux), which
	// leaves out the time other processes held the CPU; 0 if unavailable.
	InsertCPUNanos  int64   `json:"insert_cpu_nanos"`
	FramesPerSecond float64 `json:"frames_per_second"` // InsertFrames per second of CPU time, or of wall time without it

	// Verified counts the samples whose stack came back exactly, both
	// from the builder and from the DAG file read back through a Reader.
	Verified uint64 `json:"verified"`
}

// converted holds a corpus's distinct stacks as frames of one kind.
type converted struct {
	frames []uint64
	off    []uint32
}

func (c *converted) stack(i uint32) []uint64 { return c.frames[c.off[i]:c.off[i+1]] }

func convert(c *stackinput.Corpus, m stackinput.FrameMapper) (*converted, error) {
	out := &converted{off: make([]uint32, 0, c.NumStacks()+1)}
	out.off = append(out.off, 0)
	for i := range c.NumStacks() {
		for _, l := range c.Stack(uint32(i)) {
			var err error
			if out.frames, err = m.AppendFrames(out.frames, c.Locations[l]); err != nil {
				return nil, fmt.Errorf("stackreport: %s frames of stack %d: %w", m.Name(), i, err)
			}
		}
		if uint64(len(out.frames)) > math.MaxUint32 {
			return nil, fmt.Errorf("stackreport: more than 1<<32 frames in distinct stacks")
		}
		out.off = append(out.off, uint32(len(out.frames)))
	}
	return out, nil
}

// Measure builds the DAG of every variant from the corpus's samples, in
// order, checks that every sample's stack round-trips through the builder
// and through the DAG file, and returns the numbers.
func Measure(c *stackinput.Corpus, opts Options) (*Report, error) {
	if opts.CacheKey == "" {
		opts.CacheKey = KeyGoroutine
	}
	switch opts.CacheKey {
	case KeyGoroutine, KeyThread, KeySingle, KeyOff:
	default:
		return nil, fmt.Errorf("stackreport: unknown cache key %q", opts.CacheKey)
	}
	variants := opts.Variants
	if variants == nil {
		variants = DefaultVariants()
	}
	base := opts.TextBase
	if base == 0 {
		base = stackinput.LowestPC(c.Locations)
	}
	r := &Report{Source: c.Source, CacheKey: opts.CacheKey, TextBase: base, Anchors: PublishedAnchors()}
	lines := stackinput.NewLineFrames()
	mappers := map[string]stackinput.FrameMapper{
		FramesPC:   stackinput.PCFrames{},
		FramesText: stackinput.TextOffsetFrames{Base: base},
		FramesLine: lines,
	}
	conv := map[string]*converted{}
	for _, kind := range []string{FramesPC, FramesLine} {
		var err error
		if conv[kind], err = convert(c, mappers[kind]); err != nil {
			if kind == FramesLine {
				// Unsymbolized input: no line variants.
				conv[kind] = nil
				continue
			}
			return nil, err
		}
	}
	r.baseline(c, conv[FramesPC])
	if opts.Physical != nil {
		if len(opts.Physical) != len(c.Samples) {
			return nil, fmt.Errorf("stackreport: %d physical stacks for %d samples", len(opts.Physical), len(c.Samples))
		}
		r.physical(c, conv[FramesPC], opts.Physical)
	}
	for _, v := range variants {
		m := mappers[v.Frames]
		if m == nil {
			return nil, fmt.Errorf("stackreport: unknown frame kind %q", v.Frames)
		}
		cv, ok := conv[v.Frames]
		if !ok {
			var err error
			if cv, err = convert(c, m); err != nil {
				return nil, err
			}
			conv[v.Frames] = cv
		}
		if cv == nil {
			continue
		}
		vr, err := measureVariant(c, cv, v, opts)
		if err != nil {
			return nil, err
		}
		if v.Frames == FramesLine {
			vr.SymbolBytes = lines.TableBytes()
		}
		r.Variants = append(r.Variants, *vr)
	}
	return r, nil
}

// baseline fills in the numbers that do not depend on the DAG.
func (r *Report) baseline(c *stackinput.Corpus, pcs *converted) {
	// Distinct corpus stacks may still share a PC sequence if their
	// symbols differ; the tracer keys on PCs, so dedup on PCs.
	uniq := make(map[string]uint32) // PC stack -> dense index
	canon := make([]uint32, c.NumStacks())
	var key []byte
	for i := range c.NumStacks() {
		s := pcs.stack(uint32(i))
		key = key[:0]
		for _, f := range s {
			key = binary.LittleEndian.AppendUint64(key, f)
		}
		k, ok := uniq[string(key)]
		if !ok {
			k = uint32(len(uniq))
			uniq[string(key)] = k
			r.DedupBytes += TracerStackBytes(len(s))
		}
		canon[i] = k
	}
	r.UniqueStacks = uint64(len(uniq))
	pcsSeen := make(map[uint64]bool)
	for _, l := range c.Locations {
		pcsSeen[l.PC] = true
	}
	r.DistinctPCs = uint64(len(pcsSeen))
	perGen := make(map[uint64]bool)
	gens := make(map[uint32]bool)
	for _, s := range c.Samples {
		n := len(pcs.stack(s.Stack))
		r.Stacks++
		r.Frames += uint64(n)
		for _, l := range c.Stack(s.Stack) {
			r.LogicalFrames += uint64(max(1, len(c.Locations[l].Lines)))
		}
		gens[s.Generation] = true
		if k := uint64(s.Generation)<<32 | uint64(canon[s.Stack]); !perGen[k] {
			perGen[k] = true
			r.DedupBytesPerGeneration += TracerStackBytes(n)
		}
	}
	r.RawBytes = 8 * r.Frames
	r.Generations = uint64(len(gens))
}

// physical costs the tracer's table with the PCs it stores.
func (r *Report) physical(c *stackinput.Corpus, pcs *converted, phys [][]uint64) {
	uniq := make(map[string]uint32)
	perGen := make(map[uint64]bool)
	var key []byte
	for i, s := range c.Samples {
		stored := phys[i]
		key = append(key[:0], 'p') // the runtime's skip word or logical sentinel
		if s.CPU {
			stored = pcs.stack(s.Stack)
			key[0] = 'l'
		}
		for _, pc := range stored {
			key = binary.LittleEndian.AppendUint64(key, pc)
		}
		r.PhysicalFrames += uint64(len(stored))
		k, ok := uniq[string(key)]
		if !ok {
			k = uint32(len(uniq))
			uniq[string(key)] = k
			r.DedupBytesPhysical += TracerStackBytes(len(stored))
		}
		if g := uint64(s.Generation)<<32 | uint64(k); !perGen[g] {
			perGen[g] = true
			r.DedupBytesPhysicalPerGeneration += TracerStackBytes(len(stored))
		}
	}
	r.UniquePhysicalStacks = uint64(len(uniq))
}

func (o Options) builderOptions(v Variant) stackcompress.Options {
	return stackcompress.Options{Layout: v.Layout, PageNodes: o.PageNodes, NoCache: o.CacheKey == KeyOff, MaxThreads: o.MaxThreads}
}

func cacheKey(s stackinput.Sample, mode string) uint64 {
	switch mode {
	case KeyThread:
		return uint64(s.Thread)
	case KeySingle, KeyOff:
		return 0
	}
	if s.Goroutine >= 0 {
		return uint64(s.Goroutine) << 1
	}
	return uint64(s.Thread)<<1 | 1
}

func measureVariant(c *stackinput.Corpus, cv *converted, v Variant, opts Options) (*VariantReport, error) {
	b, err := stackcompress.NewBuilder(opts.builderOptions(v))
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(c.Samples))
	runtime.LockOSThread()
	cpu0, cpuOK := cputime.Thread()
	start := time.Now()
	for i, s := range c.Samples {
		if ids[i], err = b.Insert(cacheKey(s, opts.CacheKey), cv.stack(s.Stack)); err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("stackreport: %s: sample %d: %w", v.Name(), i, err)
		}
	}
	elapsed := time.Since(start)
	cpu1, _ := cputime.Thread()
	runtime.UnlockOSThread()
	st := b.Stats()
	sz := b.Size()
	vr := &VariantReport{
		Name:         v.Name(),
		Frames:       v.Frames,
		Layout:       v.Layout.String(),
		PageNodes:    b.PageNodes(),
		Nodes:        b.Len(),
		Pages:        sz.Pages,
		PageBytes:    sz.PageBytes,
		DictBytes:    sz.DictBytes,
		DAGBytes:     sz.DAGBytes(),
		BytesPerNode: float64(sz.DAGBytes()) / float64(b.Len()),
		FileBytes:    sz.FileBytes,
		BuildBytes:   b.MemBytes(),
		MapPeakBytes: st.MapPeak + st.DictPeak,
		MapSlots:     st.MapSlots,
		Lookups:      st.Lookups,
		MeanProbe:    st.MeanProbe(),
		CacheSaved:   st.CacheSaved(),
		CacheThreads: st.Threads,
		InsertFrames: st.Frames,
		InsertNanos:  elapsed.Nanoseconds(),
	}
	if cpuOK {
		vr.InsertCPUNanos = (cpu1 - cpu0).Nanoseconds()
	}
	switch {
	case vr.InsertCPUNanos > 0:
		vr.FramesPerSecond = float64(st.Frames) / (cpu1 - cpu0).Seconds()
	case elapsed > 0:
		vr.FramesPerSecond = float64(st.Frames) / elapsed.Seconds()
	}
	var file bytes.Buffer
	if _, err := b.WriteTo(&file); err != nil {
		return nil, err
	}
	rd, err := stackcompress.NewReader(bytes.NewReader(file.Bytes()), int64(file.Len()), stackcompress.ReaderOptions{})
	if err != nil {
		return nil, fmt.Errorf("stackreport: %s: reading the DAG back: %w", v.Name(), err)
	}
	var got []uint64
	for i, s := range c.Samples {
		want := cv.stack(s.Stack)
		for _, src := range []interface {
			Stack(uint64, []uint64) ([]uint64, error)
		}{b, rd} {
			if got, err = src.Stack(ids[i], got[:0]); err != nil {
				return nil, fmt.Errorf("stackreport: %s: sample %d: %w", v.Name(), i, err)
			}
			if !slices.Equal(got, want) {
				return nil, fmt.Errorf("stackreport: %s: sample %d: stack %d came back as %x, want %x", v.Name(), i, ids[i], got, want)
			}
		}
		vr.Verified++
	}
	return vr, nil
}
