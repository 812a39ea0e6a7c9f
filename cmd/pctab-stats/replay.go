package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/internal/stat"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/runtimeshim"
	"github.com/pctab/pctab/runtimeshim/synth"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/tracestore"
)

// replayConfig is the parsed command line of "pctab-stats replay".
type replayConfig struct {
	binary    string
	tracePath string
	pprofPath string
	synthetic int
	seed      uint64
	minDepth  int
	maxDepth  int
	json      bool
	count     int
	maxFrames int
	limit     int // mismatches to print
	name      string
	slide     string // "auto" or a number
	encodings []runtimeshim.Encoding
	workloads []runtimeshim.Workload
}

// replayCommand is "pctab-stats replay": the runtime's stack lookups
// (runtimeshim) replayed over real or synthetic stacks with every encoding.
var replayCommand = &cli.Command{
	Name:  "replay",
	Args:  "(-trace FILE | -pprof FILE | -synthetic N) [flags] BINARY",
	Short: "replay stacks through the runtime's lookups",
	Long: "Replay replays the runtime's per-frame table lookups (unwind, callers, symbolize,\n" +
		"gcscan) over the stacks of an execution trace or CPU profile of BINARY, or over\n" +
		"synthetic stacks from its call graph, with every table encoding. It first checks\n" +
		"that the shim symbolizes every recorded frame as the runtime did (or, for\n" +
		"synthetic stacks, as debug/gosym does) and exits 1 on any mismatch. It prints\n" +
		"ns/frame (thread CPU time on Linux), table lookups, table walks and the pcvalue\n" +
		"cache's hit rate per physical frame, in the Go benchmark format.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		rf := declareReplayFlags(fs)
		return func(env *cli.Env, args []string) error {
			cfg, err := rf.config(args)
			if err != nil {
				return err
			}
			return runReplay(cfg, env.Stdout, env.Stderr)
		}
	},
}

// runReplay runs a replay and writes its report.
func runReplay(cfg replayConfig, stdout, stderr io.Writer) error {
	rep, err := doReplay(cfg)
	if rep != nil {
		warnCut(stderr, cfg.tracePath, rep.Truncated)
		if werr := writeReplay(stdout, cfg, rep); werr != nil && err == nil {
			err = werr
		}
		for _, d := range rep.Check.Details {
			fmt.Fprintf(stderr, "pctab-stats replay: mismatch: %s\n", d)
		}
		if err == nil && rep.Check.Mismatches > 0 {
			err = fmt.Errorf("replay: %d mismatching frames (%d shown above)", rep.Check.Mismatches, len(rep.Check.Details))
		}
	}
	return err
}

// replayFlags holds the flag values of pctab-stats replay: the config's
// fields set directly, and the lists parsed by config.
type replayFlags struct {
	cfg         replayConfig
	encs, works *string
}

func declareReplayFlags(fs *flag.FlagSet) *replayFlags {
	rf := &replayFlags{}
	cfg := &rf.cfg
	fs.StringVar(&cfg.tracePath, "trace", "", "replay the stacks of this Go execution trace `file`, written by BINARY")
	fs.StringVar(&cfg.pprofPath, "pprof", "", "replay the stacks of this CPU profile `file`, written by BINARY")
	fs.IntVar(&cfg.synthetic, "synthetic", 0, "replay `N` stacks drawn from BINARY's static call graph (amd64, 386 and arm64)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the synthetic stacks")
	fs.IntVar(&cfg.minDepth, "mindepth", 4, "smallest target depth of a synthetic stack")
	fs.IntVar(&cfg.maxDepth, "maxdepth", 40, "largest target depth of a synthetic stack")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON object instead of benchmark lines")
	fs.IntVar(&cfg.count, "count", 10, "`n` timed passes per input, workload and encoding")
	fs.IntVar(&cfg.maxFrames, "frames", 300000, "replay at most about this many physical frames per input (0: all); the first stacks are kept")
	fs.IntVar(&cfg.limit, "mismatches", 20, "print at most this many mismatching frames")
	fs.StringVar(&cfg.name, "name", "", "name of the binary in benchmark names (default: its base name)")
	fs.StringVar(&cfg.slide, "slide", "auto", "load offset to subtract from recorded PCs, or auto")
	rf.encs = fs.String("enc", "", "comma-separated encodings (default: all of "+strings.Join(encodingNames(), ",")+")")
	rf.works = fs.String("workload", "", "comma-separated workloads (default: unwind,callers,symbolize,gcscan)")
	return rf
}

// parseReplayFlags parses replay's command line (flags and BINARY).
func parseReplayFlags(args []string, stderr io.Writer) (replayConfig, error) {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rf := declareReplayFlags(fs)
	if err := fs.Parse(args); err != nil {
		return replayConfig{}, cli.Usagef("%w", err)
	}
	return rf.config(fs.Args())
}

// config checks the flags and returns the configuration of a replay of the
// binary in args.
func (rf *replayFlags) config(args []string) (replayConfig, error) {
	cfg := rf.cfg
	if err := cfg.checkCounts(); err != nil {
		return cfg, err
	}
	n := 0
	for _, set := range []bool{cfg.tracePath != "", cfg.pprofPath != "", cfg.synthetic > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return cfg, cli.Usagef("give exactly one of -trace, -pprof and -synthetic")
	}
	if len(args) != 1 {
		return cfg, cli.Usagef("want one BINARY, got %q", args)
	}
	if cfg.count < 1 {
		return cfg, cli.Usagef("-count must be at least 1")
	}
	cfg.binary = args[0]
	if cfg.name == "" {
		cfg.name = strings.TrimSuffix(filepath.Base(cfg.binary), ".exe")
	}
	if cfg.slide != "auto" {
		if _, err := strconv.ParseUint(cfg.slide, 0, 64); err != nil {
			return cfg, cli.Usagef("-slide: %w", err)
		}
	}
	if *rf.encs == "" {
		cfg.encodings = runtimeshim.Encodings()
	} else {
		for _, name := range strings.Split(*rf.encs, ",") {
			e, ok := runtimeshim.EncodingByName(strings.TrimSpace(name))
			if !ok {
				return cfg, cli.Usagef("-enc: unknown encoding %q (have %s)", name, strings.Join(encodingNames(), ", "))
			}
			cfg.encodings = append(cfg.encodings, e)
		}
	}
	if *rf.works == "" {
		cfg.workloads = runtimeshim.Workloads()
	} else {
		for _, name := range strings.Split(*rf.works, ",") {
			w, err := runtimeshim.ParseWorkload(strings.TrimSpace(name))
			if err != nil {
				return cfg, cli.Usagef("-workload: %w", err)
			}
			cfg.workloads = append(cfg.workloads, w)
		}
	}
	return cfg, nil
}

// Limits of the synthetic stacks: no real stack is deeper than
// maxSyntheticDepth frames (the tracer and pprof record at most 128), and
// -synthetic N draws at most maxSyntheticFrames frames in all (N stacks of
// up to -maxdepth frames, 8 bytes a frame, held at once), so that a count
// on the command line cannot exhaust the memory.
const (
	maxSyntheticDepth  = 4096
	maxSyntheticFrames = 1 << 26
)

// checkCounts checks the numeric flags: counts that cannot be negative,
// the synthetic stacks' depth range and their size in all.
func (cfg *replayConfig) checkCounts() error {
	switch {
	case cfg.synthetic < 0:
		return cli.Usagef("-synthetic=%d: want a number of stacks, 1 or more", cfg.synthetic)
	case cfg.maxFrames < 0:
		return cli.Usagef("-frames=%d: want 0 (all) or more", cfg.maxFrames)
	case cfg.limit < 0:
		return cli.Usagef("-mismatches=%d: want 0 or more", cfg.limit)
	case cfg.minDepth < 1 || cfg.maxDepth < cfg.minDepth || cfg.maxDepth > maxSyntheticDepth:
		return cli.Usagef("-mindepth=%d -maxdepth=%d: want 1 <= -mindepth <= -maxdepth <= %d", cfg.minDepth, cfg.maxDepth, maxSyntheticDepth)
	case cfg.synthetic > maxSyntheticFrames/cfg.maxDepth:
		return cli.Usagef("-synthetic=%d -maxdepth=%d: at most %d frames in all (-synthetic × -maxdepth)", cfg.synthetic, cfg.maxDepth, maxSyntheticFrames)
	}
	return nil
}

func encodingNames() []string {
	var names []string
	for _, e := range runtimeshim.Encodings() {
		names = append(names, e.Name)
	}
	return names
}

// replaySchemaVersion is the schema_version of replay's JSON
// (testdata/replay.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in docs/json.md.
// Version 4: truncated.partial_events and truncated.framing, and
// truncated.generations counts only whole generations.
const replaySchemaVersion = 4

// replayReport is everything a replay run found; it is also the JSON
// output.
type replayReport struct {
	SchemaVersion int            `json:"schema_version"`
	Binary        string         `json:"binary"`
	Name          string         `json:"name"`
	GOOS          string         `json:"goos"`
	GOARCH        string         `json:"goarch"`
	GoVersion     string         `json:"go_version"`
	Source        string         `json:"source"` // "trace", "pprof" or "synthetic"
	File          string         `json:"file,omitempty"`
	Slide         uint64         `json:"slide"`
	Timer         string         `json:"timer"`
	Check         replayCheck    `json:"check"`
	Inputs        []replayInput  `json:"inputs"`
	Results       []replayResult `json:"results"`
	Ratios        []replayRatio  `json:"ratios"`
	// Truncated, if set, says that the trace (-trace) was cut or turned
	// unreadable part way, and that the stacks are those of its whole
	// generations.
	Truncated *tracestore.Truncation `json:"truncated,omitempty"`
}

// replayCheck is the outcome of the correctness checks.
type replayCheck struct {
	Against    string   `json:"against"`    // what the frames are checked against
	Stacks     int      `json:"stacks"`     // distinct stacks (or locations) checked
	Frames     int      `json:"frames"`     // frames checked, per encoding
	Encodings  int      `json:"encodings"`  // encodings checked
	Mismatches int      `json:"mismatches"` // frames that disagree, over all encodings, plus workload disagreements
	Details    []string `json:"details,omitempty"`
}

// replayInput describes one list of stacks that was replayed.
type replayInput struct {
	Name          string `json:"name"`
	Stacks        int    `json:"stacks"`
	Frames        int    `json:"frames"`         // physical frames replayed per pass
	LogicalFrames int    `json:"logical_frames"` // recorded (logical) frames they came from, if any
	Ms            int    `json:"ms"`             // simulated Ms
	Truncated     int    `json:"truncated"`      // stacks left out by -frames
}

// replayResult is one input, workload and encoding.
type replayResult struct {
	Input           string    `json:"input"`
	Workload        string    `json:"workload"`
	Encoding        string    `json:"encoding"`
	Frames          uint64    `json:"frames"`
	LogicalFrames   uint64    `json:"logical_frames"`
	Lookups         uint64    `json:"lookups"`
	Walks           uint64    `json:"walks"`
	CacheHits       uint64    `json:"cache_hits"`
	CacheMisses     uint64    `json:"cache_misses"`
	NsPerFrame      []float64 `json:"ns_per_frame"` // one per timed pass
	MedianNs        float64   `json:"median_ns_per_frame"`
	CILowNs         float64   `json:"ci_low_ns_per_frame,omitempty"` // 95% CI of the median (benchmath), with at least 6 passes
	CIHighNs        float64   `json:"ci_high_ns_per_frame,omitempty"`
	LookupsPerFrame float64   `json:"lookups_per_frame"`
	WalksPerFrame   float64   `json:"walks_per_frame"`
	CacheHitRate    float64   `json:"cache_hit_rate"`
}

// replayRatio compares an encoding's time with the baseline's: Ratio is the
// median over passes of the two times in the same pass (benchmath), with
// its 95% confidence interval when there are at least 6 passes, and
// MedianRatio the ratio of the two medians.
type replayRatio struct {
	Input       string  `json:"input"`
	Workload    string  `json:"workload"`
	Encoding    string  `json:"encoding"`
	Baseline    string  `json:"baseline"`
	Ratio       float64 `json:"ratio"`
	CILow       float64 `json:"ci_low,omitempty"`
	CIHigh      float64 `json:"ci_high,omitempty"`
	MedianRatio float64 `json:"median_ratio"`
}

// namedStacks is one input to replay.
type namedStacks struct {
	info   replayInput
	stacks []runtimeshim.Stack
}

func doReplay(cfg replayConfig) (*replayReport, error) {
	obj, err := objscan.Open(cfg.binary)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer obj.Close()
	md, err := runtimeshim.NewModule(obj)
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", cfg.binary, err)
	}
	rep := &replayReport{SchemaVersion: replaySchemaVersion, Binary: cfg.binary, Name: cfg.name, GOOS: obj.GOOS, GOARCH: obj.GOARCH, GoVersion: obj.GoVersion, Timer: runtimeshim.Timer()}
	shims := make([]*runtimeshim.Shim, len(cfg.encodings))
	for i, e := range cfg.encodings {
		if shims[i], err = md.NewShim(e); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	inputs, err := replayInputs(cfg, obj, shims, rep)
	if err != nil || rep.Check.Mismatches > 0 {
		return rep, err
	}
	// The baseline is the runtime's code: varint+cache (runtime.pcvalue's
	// shape behind its cache), else the first cached encoding selected.
	baseline := ""
	for _, e := range cfg.encodings {
		if e.Cached() && (baseline == "" || e.Name == "varint+cache") {
			baseline = e.Name
		}
	}
	for _, in := range inputs {
		rep.Inputs = append(rep.Inputs, in.info)
		for _, w := range cfg.workloads {
			counts, times := runtimeshim.Compare(shims, w, in.stacks, cfg.count)
			medians := map[string]float64{}
			passes := map[string][]float64{}
			for i, s := range shims {
				c := counts[i]
				ref := counts[0]
				if c.Sum != ref.Sum || c.Lookups != ref.Lookups || c.LogicalFrames != ref.LogicalFrames || c.Errors != ref.Errors || c.Unresolved != ref.Unresolved {
					rep.Check.Mismatches++
					rep.Check.Details = append(rep.Check.Details, fmt.Sprintf("input %s workload %s: encoding %s gives %+v, %s gives %+v", in.info.Name, w, s.Encoding().Name, c, shims[0].Encoding().Name, ref))
				}
				r := replayResult{
					Input: in.info.Name, Workload: w.String(), Encoding: s.Encoding().Name,
					Frames: c.Frames, LogicalFrames: c.LogicalFrames, Lookups: c.Lookups, Walks: c.Walks(),
					CacheHits: c.Hits, CacheMisses: c.Misses,
				}
				for _, d := range times[i] {
					r.NsPerFrame = append(r.NsPerFrame, perFrame(float64(d.Nanoseconds()), c.Frames))
				}
				sum := stat.Of(r.NsPerFrame)
				r.MedianNs = sum.Median
				r.CILowNs, r.CIHighNs = sum.Low, sum.High
				passes[r.Encoding] = r.NsPerFrame
				r.LookupsPerFrame = perFrame(float64(c.Lookups), c.Frames)
				r.WalksPerFrame = perFrame(float64(c.Walks()), c.Frames)
				r.CacheHitRate = c.HitRate()
				medians[r.Encoding] = r.MedianNs
				rep.Results = append(rep.Results, r)
			}
			if base, ok := medians[baseline]; ok && base > 0 {
				for _, e := range cfg.encodings {
					if e.Name != baseline {
						// Ratios of the passes timed side by side.
						rs := stat.Ratios(passes[e.Name], passes[baseline])
						rep.Ratios = append(rep.Ratios, replayRatio{Input: in.info.Name, Workload: w.String(), Encoding: e.Name, Baseline: baseline,
							Ratio: rs.Median, CILow: rs.Low, CIHigh: rs.High, MedianRatio: medians[e.Name] / base})
					}
				}
			}
		}
	}
	return rep, nil
}

// replayInputs reads or draws the stacks, checks the symbolization of
// every frame with every shim, and returns the inputs to time.
func replayInputs(cfg replayConfig, obj *objscan.File, shims []*runtimeshim.Shim, rep *replayReport) ([]namedStacks, error) {
	check := func(r runtimeshim.CheckResult, enc string) {
		rep.Check.Stacks, rep.Check.Frames = r.Stacks, r.Frames
		rep.Check.Encodings++
		rep.Check.Mismatches += r.Mismatched
		for _, m := range r.Mismatches {
			if len(rep.Check.Details) < cfg.limit {
				rep.Check.Details = append(rep.Check.Details, fmt.Sprintf("encoding %s: %v", enc, m))
			}
		}
	}
	ref := shims[0]
	if cfg.synthetic > 0 {
		rep.Source = "synthetic"
		rep.Check.Against = "debug/gosym"
		g, err := synth.Build(obj)
		if err != nil {
			return nil, fmt.Errorf("replay: %s: %w", cfg.binary, err)
		}
		stacks, err := g.Stacks(cfg.synthetic, synth.Options{Seed: cfg.seed, MinDepth: cfg.minDepth, MaxDepth: cfg.maxDepth})
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		for _, s := range shims {
			r, err := s.CheckGosym(stacks, cfg.limit)
			if err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
			check(r, s.Encoding().Name)
		}
		in := limitStacks(namedStacks{info: replayInput{Name: "synthetic", Ms: 1}, stacks: stacks}, cfg.maxFrames)
		return []namedStacks{in}, nil
	}

	var c *stackinput.Corpus
	var err error
	if cfg.tracePath != "" {
		rep.Source, rep.File, rep.Check.Against = "trace", cfg.tracePath, "execution trace frames"
		err = readInput(cfg.tracePath, func(r io.Reader) (err error) { c, rep.Truncated, err = readTraceStacks(r); return err })
	} else {
		rep.Source, rep.File, rep.Check.Against = "pprof", cfg.pprofPath, "pprof locations"
		err = readInput(cfg.pprofPath, func(r io.Reader) (err error) { c, err = stackinput.ReadPprof(r); return err })
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if cfg.slide == "auto" {
		if rep.Slide, err = ref.FindSlide(c.Locations); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	} else {
		rep.Slide, _ = strconv.ParseUint(cfg.slide, 0, 64) // checked by parseReplayFlags
	}
	for _, s := range shims {
		var r runtimeshim.CheckResult
		if rep.Source == "trace" {
			r = s.CheckTrace(c, rep.Slide, cfg.limit)
		} else {
			r = s.CheckPprof(c, rep.Slide, cfg.limit)
		}
		check(r, s.Encoding().Name)
	}
	stacks, st := ref.StacksFromCorpus(c, rep.Slide)
	if rep.Source == "pprof" {
		in := namedStacks{info: replayInput{Name: "pprof", Ms: st.Ms, LogicalFrames: st.LogicalFrames}, stacks: stacks}
		return []namedStacks{limitStacks(in, cfg.maxFrames)}, nil
	}
	events := namedStacks{info: replayInput{Name: "trace-events", Ms: st.Ms, LogicalFrames: st.LogicalFrames}, stacks: stacks}
	distinct := namedStacks{info: replayInput{Name: "trace-distinct", Ms: 1}, stacks: runtimeshim.DistinctStacks(stacks)}
	return []namedStacks{limitStacks(events, cfg.maxFrames), limitStacks(distinct, cfg.maxFrames)}, nil
}

// readInput opens path and passes it to read.
func readInput(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := read(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// limitStacks keeps the first stacks of in that hold at most about
// maxFrames physical frames (all of them when maxFrames is 0), and fills in
// the counts.
func limitStacks(in namedStacks, maxFrames int) namedStacks {
	n, frames := 0, 0
	for _, s := range in.stacks {
		if maxFrames > 0 && frames+len(s.PCs) > maxFrames && n > 0 {
			break
		}
		frames += len(s.PCs)
		n++
	}
	in.info.Truncated = len(in.stacks) - n
	in.stacks = in.stacks[:n]
	in.info.Stacks, in.info.Frames = n, frames
	return in
}

func perFrame(x float64, frames uint64) float64 {
	if frames == 0 {
		return 0
	}
	return x / float64(frames)
}

// writeReplay prints the report: one JSON object, or configuration lines
// and one benchmark line per timed pass followed by the ratios as comments.
func writeReplay(w io.Writer, cfg replayConfig, rep *replayReport) error {
	if cfg.json {
		return jsonschema.Write(w, rep)
	}
	file := []benchfmt.Config{
		{Key: "binary", Value: []byte(rep.Binary), File: true},
		{Key: "binary-goos", Value: []byte(rep.GOOS), File: true},
		{Key: "binary-goarch", Value: []byte(rep.GOARCH), File: true},
		{Key: "binary-go", Value: []byte(rep.GoVersion), File: true},
		{Key: "source", Value: []byte(strings.TrimSpace(rep.Source + " " + rep.File)), File: true},
		{Key: "slide", Value: []byte(fmt.Sprintf("%#x", rep.Slide)), File: true},
		{Key: "timer", Value: []byte(rep.Timer), File: true},
		{Key: "checked-against", Value: []byte(rep.Check.Against), File: true},
		{Key: "stacks-checked", Value: []byte(strconv.Itoa(rep.Check.Stacks)), File: true},
		{Key: "frames-checked", Value: []byte(strconv.Itoa(rep.Check.Frames)), File: true},
		{Key: "encodings-checked", Value: []byte(strconv.Itoa(rep.Check.Encodings)), File: true},
		{Key: "mismatches", Value: []byte(strconv.Itoa(rep.Check.Mismatches)), File: true},
	}
	bw := benchfmt.NewWriter(w)
	if len(rep.Results) == 0 {
		// No benchmark line carries the configuration: print it alone.
		for _, c := range file {
			if _, err := fmt.Fprintf(w, "%s: %s\n", c.Key, c.Value); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range rep.Results {
		for _, ns := range r.NsPerFrame {
			res := &benchfmt.Result{
				Config: file,
				Name:   benchfmt.Name(fmt.Sprintf("Replay/bin=%s/input=%s/enc=%s/workload=%s", rep.Name, r.Input, r.Encoding, r.Workload)),
				Iters:  int(r.Frames),
				Values: []benchfmt.Value{
					{Value: ns, Unit: "ns/frame"},
					{Value: r.LookupsPerFrame, Unit: "lookups/frame"},
					{Value: r.WalksPerFrame, Unit: "walks/frame"},
				},
			}
			if r.CacheHits+r.CacheMisses > 0 {
				res.Values = append(res.Values, benchfmt.Value{Value: 100 * r.CacheHitRate, Unit: "cache-hit-%"})
			}
			if err := bw.Write(res); err != nil {
				return err
			}
		}
	}
	for _, in := range rep.Inputs {
		from := ""
		if in.LogicalFrames > 0 {
			from = fmt.Sprintf(" (from %d recorded frames)", in.LogicalFrames)
		}
		if _, err := fmt.Fprintf(w, "# input %s: %d stacks, %d physical frames per pass%s, %d Ms, %d stacks left out by -frames\n",
			in.Name, in.Stacks, in.Frames, from, in.Ms, in.Truncated); err != nil {
			return err
		}
	}
	for _, r := range rep.Ratios {
		ci := "no CI: fewer than 6 passes"
		if r.CIHigh > 0 {
			ci = fmt.Sprintf("95%% CI [%.3f, %.3f]", r.CILow, r.CIHigh)
		}
		if _, err := fmt.Fprintf(w, "# ratio input=%s workload=%s: %s / %s = %.3f, %s (median of per-pass ratios)\n", r.Input, r.Workload, r.Encoding, r.Baseline, r.Ratio, ci); err != nil {
			return err
		}
	}
	return nil
}
