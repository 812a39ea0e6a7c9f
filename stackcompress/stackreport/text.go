package stackreport

import (
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/pctab/pctab/stackcompress"
	"github.com/pctab/pctab/stackinput"
)

// WriteText writes r as the text report of pctab-stats stacks.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("source:               %s\n", r.Source)
	p("stacks:               %d (%d frames, %d logical frames)\n", r.Stacks, r.Frames, r.LogicalFrames)
	p("raw:                  %d B (8 B per frame)\n", r.RawBytes)
	p("unique stacks:        %d (%d distinct PCs)\n", r.UniqueStacks, r.DistinctPCs)
	p("full-stack dedup:     %d B (Go tracer: 72 B + 8 B x (n+1) per unique stack)\n", r.DedupBytes)
	if r.Generations > 1 {
		p("  per generation:     %d B over %d generations (the tracer resets its table each generation)\n", r.DedupBytesPerGeneration, r.Generations)
	}
	if r.UniquePhysicalStacks > 0 {
		p("physical PCs:         %d frames, %d unique stacks as the tracer stores them (physical, CPU samples logical)\n", r.PhysicalFrames, r.UniquePhysicalStacks)
		p("  tracer dedup:       %d B", r.DedupBytesPhysical)
		if r.Generations > 1 {
			p(", %d B per generation", r.DedupBytesPhysicalPerGeneration)
		}
		p("\n")
	}
	p("cache key:            %s\n", r.CacheKey)
	p("text base:            %#x\n", r.TextBase)
	p("vs tracer:            the tracer's dedup bytes (physical if known) over the DAG's bytes\n")
	p("build B/node:         all the builder holds at the end (pages, open page, maps, caches) per node\n")
	p("frames/s:             frames inserted per second of the inserting thread's CPU time (wall time where unavailable)\n\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "variant\tnodes\tDAG B\tB/node\tvs tracer\tbuild B/node\tmap peak B\tprobe\tcache saved\tframes/s\tverified\t\n")
	tracer := r.DedupBytes
	if r.UniquePhysicalStacks > 0 {
		tracer = r.DedupBytesPhysical
	}
	for _, v := range r.Variants {
		vs := "-"
		if v.DAGBytes > 0 {
			vs = fmt.Sprintf("%.1fx", float64(tracer)/float64(v.DAGBytes))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%s\t%.2f\t%d\t%.3f\t%.1f%%\t%.3g\t%d\t\n",
			v.Name, v.Nodes, v.DAGBytes, v.BytesPerNode, vs, float64(v.BuildBytes)/float64(v.Nodes), v.MapPeakBytes, v.MeanProbe, 100*v.CacheSaved, v.FramesPerSecond, v.Verified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range r.Variants {
		if v.DictBytes > 0 || v.SymbolBytes > 0 {
			p("%s: pages %d B + dictionary %d B", v.Name, v.PageBytes, v.DictBytes)
			if v.SymbolBytes > 0 {
				p("; symbol table %d B (not in DAG B)", v.SymbolBytes)
			}
			p("\n")
		}
	}
	a := r.Anchors
	p("\nanchors: Superluminal %.0f-%.0f B/node, mean probe %.1f, %.0f-%.0f%% of lookups saved;\n",
		a.SuperluminalBytesPerNodeMin, a.SuperluminalBytesPerNodeMax, a.SuperluminalMeanProbe, 100*a.SuperluminalCacheSavedMin, 100*a.SuperluminalCacheSavedMax)
	p("         Pyroscope %.0f B/node building, %.0f B/node resolved; Go tracer as \"full-stack dedup\" above.\n",
		a.PyroscopeBuildBytesPerNode, a.PyroscopeBytesPerNode)
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// A FileReport describes a DAG written to a file and read back under a
// memory budget.
type FileReport struct {
	Variant   string                    `json:"variant"`
	Path      string                    `json:"path"`
	FileBytes int64                     `json:"file_bytes"`
	Pages     int                       `json:"pages"`
	Budget    int64                     `json:"budget_bytes"`     // 0: no budget
	MinBudget int64                     `json:"min_budget_bytes"` // the smallest budget the file allows: dictionary plus largest page
	Mmap      bool                      `json:"mmap"`             // whether pages were mapped rather than read
	Verified  uint64                    `json:"verified"`
	Reader    stackcompress.ReaderStats `json:"reader"`
}

// WriteFile builds variant v from the corpus, writes its DAG to path, opens
// it with the given memory budget, reads back every sample's stack in
// order, checks it, and reports the reader's page traffic.
func WriteFile(c *stackinput.Corpus, v Variant, opts Options, path string, budget int64, noMmap bool) (*FileReport, error) {
	base := opts.TextBase
	if base == 0 {
		base = stackinput.LowestPC(c.Locations)
	}
	var m stackinput.FrameMapper
	switch v.Frames {
	case FramesPC:
		m = stackinput.PCFrames{}
	case FramesText:
		m = stackinput.TextOffsetFrames{Base: base}
	case FramesLine:
		m = stackinput.NewLineFrames()
	default:
		return nil, fmt.Errorf("stackreport: unknown frame kind %q", v.Frames)
	}
	cv, err := convert(c, m)
	if err != nil {
		return nil, err
	}
	b, err := stackcompress.NewBuilder(opts.builderOptions(v))
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(c.Samples))
	for i, s := range c.Samples {
		if ids[i], err = b.Insert(cacheKey(s, opts.CacheKey), cv.stack(s.Stack)); err != nil {
			return nil, fmt.Errorf("stackreport: %s: sample %d: %w", v.Name(), i, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("stackreport: %w", err)
	}
	n, err := b.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("stackreport: writing %s: %w", path, err)
	}
	rd, err := stackcompress.Open(path, stackcompress.ReaderOptions{MemoryBudget: budget, NoMmap: noMmap})
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	fr := &FileReport{Variant: v.Name(), Path: path, FileBytes: n, Pages: rd.Pages(), Budget: budget, MinBudget: rd.MinBudget(), Mmap: rd.Mapped()}
	var got []uint64
	for i, s := range c.Samples {
		if got, err = rd.Stack(ids[i], got[:0]); err != nil {
			return nil, fmt.Errorf("stackreport: %s: sample %d: %w", path, i, err)
		}
		if !slices.Equal(got, cv.stack(s.Stack)) {
			return nil, fmt.Errorf("stackreport: %s: sample %d: stack %d came back as %x, want %x", path, i, ids[i], got, cv.stack(s.Stack))
		}
		fr.Verified++
	}
	fr.Reader = rd.Stats()
	return fr, nil
}

// WriteFileText writes fr as text.
func WriteFileText(w io.Writer, fr *FileReport) error {
	budget := "none"
	if fr.Budget > 0 {
		budget = fmt.Sprintf("%d B", fr.Budget)
	}
	how := "ReadAt"
	if fr.Mmap {
		how = "mmap"
	}
	_, err := fmt.Fprintf(w, "\nfile %s (%s): %d B, %d pages, read by %s with budget %s:\n"+
		"  %d stacks verified; %d page loads, %d hits, %d evictions, peak resident %d B\n",
		fr.Path, fr.Variant, fr.FileBytes, fr.Pages, how, budget,
		fr.Verified, fr.Reader.Loads, fr.Reader.Hits, fr.Reader.Evictions, fr.Reader.PeakResident)
	return err
}
