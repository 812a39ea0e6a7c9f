package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/runtimeshim"
	"github.com/pctab/pctab/stackcompress"
	"github.com/pctab/pctab/stackcompress/stackreport"
	"github.com/pctab/pctab/stackinput"
	"github.com/pctab/pctab/tracestore"
)

// stacksCommand is "pctab-stats stacks": the traceback memory report of
// stackcompress on the stacks of an execution trace or a pprof profile.
var stacksCommand = &cli.Command{
	Name:  "stacks",
	Args:  "(-trace FILE | -pprof FILE) [flags] [BINARY]",
	Short: "traceback memory of real stacks as a DAG",
	Long: "Stacks builds the stackcompress DAG of every stack in the input, in several\n" +
		"layouts (frames/layout variants), checks that every stack round-trips, and\n" +
		"reports its memory against the Go tracer's full-stack dedup. BINARY, the\n" +
		"program that produced the input, gives the text base for text-offset frames\n" +
		"and, for a trace, the physical frames the tracer really stores (through\n" +
		"runtimeshim).",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		f := declareStacksFlags(fs)
		return func(env *cli.Env, args []string) error { return runStacks(f, args, env.Stdout, env.Stderr) }
	},
}

// stacksFlags holds the flag values of pctab-stats stacks.
type stacksFlags struct {
	tracePath, pprofPath *string
	jsonOut              *bool
	pageNodes            *int
	cacheKey             *string
	maxThreads           *int
	textBase             *uint64
	layouts              *string
	outPath              *string
	fileLayout           *string
	budget               *int64
	noMmap               *bool
}

func declareStacksFlags(fs *flag.FlagSet) *stacksFlags {
	return &stacksFlags{
		tracePath:  fs.String("trace", "", "read the stacks of this Go execution trace `file`"),
		pprofPath:  fs.String("pprof", "", "read the stacks of this pprof profile `file`"),
		jsonOut:    fs.Bool("json", false, "print the report as one JSON object"),
		pageNodes:  fs.Int("pagenodes", stackcompress.DefaultPageNodes, "`n` nodes per DAG page (a power of two)"),
		cacheKey:   fs.String("cachekey", stackreport.KeyGoroutine, "coherency cache key: goroutine, thread, single or off"),
		maxThreads: fs.Int("maxthreads", stackcompress.DefaultMaxThreads, "threads the coherency cache remembers at most"),
		textBase:   fs.Uint64("textbase", 0, "run-time text base for text frames, used as given (default: the BINARY's, moved by the load offset found in the trace, else the lowest PC seen)"),
		layouts:    fs.String("layouts", "", "comma-separated `frames/layout` variants to measure, e.g. pc/seed,text/delta32,pc/packed (default: all)"),
		outPath:    fs.String("o", "", "also write the DAG in the -filelayout to this `file` and read every stack back from it"),
		fileLayout: fs.String("filelayout", "pc/packed", "the `frames/layout` variant that -o writes"),
		budget:     fs.Int64("budget", 0, "memory budget in `bytes` for reading the -o file back (0: none)"),
		noMmap:     fs.Bool("nommap", false, "read the -o file with ReadAt instead of mapping it"),
	}
}

// check checks the flags and the arguments args of pctab-stats stacks,
// before any input is read, and returns -filelayout's variant.
func (f *stacksFlags) check(args []string) (stackreport.Variant, error) {
	var none stackreport.Variant
	if (*f.tracePath == "") == (*f.pprofPath == "") {
		return none, cli.Usagef("give exactly one of -trace and -pprof")
	}
	if len(args) > 1 {
		return none, cli.Usagef("at most one BINARY, got %q", args)
	}
	switch *f.cacheKey {
	case stackreport.KeyGoroutine, stackreport.KeyThread, stackreport.KeySingle, stackreport.KeyOff:
	default:
		return none, cli.Usagef("-cachekey=%s: want goroutine, thread, single or off", *f.cacheKey)
	}
	if n := *f.pageNodes; n < 1 || n > stackcompress.MaxPageNodes || n&(n-1) != 0 {
		return none, cli.Usagef("-pagenodes=%d: want a power of two from 1 to %d", n, stackcompress.MaxPageNodes)
	}
	if *f.maxThreads < 0 {
		return none, cli.Usagef("-maxthreads=%d: want 0 or more", *f.maxThreads)
	}
	if *f.budget < 0 {
		return none, cli.Usagef("-budget=%d: want 0 (no budget) or more bytes", *f.budget)
	}
	fileVariant, err := parseVariant(*f.fileLayout)
	if err != nil {
		return none, cli.Usagef("-filelayout: %w", err)
	}
	if err := cli.CheckOutput("-o", *f.outPath, append([]string{*f.tracePath, *f.pprofPath}, args...)...); err != nil {
		return none, err
	}
	return fileVariant, nil
}

// runStacks runs pctab-stats stacks with flags f on the arguments args.
func runStacks(f *stacksFlags, args []string, stdout, stderr io.Writer) error {
	nargs := len(args)
	fileVariant, err := f.check(args)
	if err != nil {
		return err
	}
	opts := stackreport.Options{PageNodes: *f.pageNodes, CacheKey: *f.cacheKey, TextBase: *f.textBase, MaxThreads: *f.maxThreads}
	if *f.layouts != "" {
		for _, s := range strings.Split(*f.layouts, ",") {
			v, err := parseVariant(s)
			if err != nil {
				return cli.Usagef("-layouts: %w", err)
			}
			opts.Variants = append(opts.Variants, v)
		}
	}
	corpus, cut, err := readCorpus(*f.tracePath, *f.pprofPath)
	if err != nil {
		return err
	}
	warnCut(stderr, *f.tracePath, cut)
	if nargs == 1 {
		if err := fromBinary(args[0], corpus, &opts, *f.tracePath != "", stderr); err != nil {
			return err
		}
	}
	rep, err := stackreport.Measure(corpus, opts)
	if err != nil {
		return err
	}
	var fileRep *stackreport.FileReport
	if *f.outPath != "" {
		if fileRep, err = stackreport.WriteFile(corpus, fileVariant, opts, *f.outPath, *f.budget, *f.noMmap); err != nil {
			return err
		}
	}
	if *f.jsonOut {
		return jsonschema.Write(stdout, stacksJSON{stacksSchemaVersion, rep, fileRep, cut})
	}
	if err := stackreport.WriteText(stdout, rep); err != nil {
		return err
	}
	if cut != nil {
		fmt.Fprintln(stdout, cutLine(cut))
	}
	if fileRep != nil {
		return stackreport.WriteFileText(stdout, fileRep)
	}
	return nil
}

// stacksSchemaVersion is the schema_version of stacks' JSON
// (testdata/stacks.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in docs/json.md.
// Version 3: truncated.partial_events and truncated.framing, and
// truncated.generations counts only whole generations.
const stacksSchemaVersion = 3

// stacksJSON is the JSON form of the stacks report: the schema version, the
// report's fields and, with -o, the file read back under "file".
type stacksJSON struct {
	SchemaVersion int `json:"schema_version"`
	*stackreport.Report
	File *stackreport.FileReport `json:"file,omitempty"`
	// Truncated, if set, says that the trace (-trace) was cut or turned
	// unreadable part way, and that the stacks are those of its whole
	// generations.
	Truncated *tracestore.Truncation `json:"truncated,omitempty"`
}

// fromBinary takes the text base from the binary and, for a trace, the
// physical frames of every sample, which runtimeshim derives from the
// binary's inline trees, so that the report costs the tracer's table with
// the PCs the runtime stores. The binary's text base is moved by the load
// offset (slide) found in the trace's PCs; a text base the user gave
// (opts.TextBase != 0) is a run-time address already and is kept as it is.
func fromBinary(path string, c *stackinput.Corpus, opts *stackreport.Options, isTrace bool, stderr io.Writer) error {
	f, err := objscan.Open(path)
	if err != nil {
		return fmt.Errorf("stacks: %w", err)
	}
	defer f.Close()
	userBase := opts.TextBase != 0
	if !userBase {
		opts.TextBase = f.TextStart
	}
	if !isTrace {
		return nil
	}
	md, err := runtimeshim.NewModule(f)
	if err != nil {
		return fmt.Errorf("stacks: %w", err)
	}
	enc, _ := runtimeshim.EncodingByName("varint")
	shim, err := md.NewShim(enc)
	if err != nil {
		return fmt.Errorf("stacks: %w", err)
	}
	slide, err := shim.FindSlide(c.Locations)
	if err != nil {
		fmt.Fprintf(stderr, "pctab-stats: warning: %s: no physical frames: %v\n", path, err)
		return nil
	}
	if !userBase {
		opts.TextBase += slide
	}
	stacks, _ := shim.StacksFromCorpus(c, slide)
	opts.Physical = make([][]uint64, len(stacks))
	for i, s := range stacks {
		opts.Physical[i] = s.PCs
	}
	return nil
}

// parseVariant parses "frames/layout", such as "text/delta32".
func parseVariant(s string) (stackreport.Variant, error) {
	frames, layout, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return stackreport.Variant{}, fmt.Errorf("variant %q is not frames/layout", s)
	}
	switch frames {
	case stackreport.FramesPC, stackreport.FramesText, stackreport.FramesLine:
	default:
		return stackreport.Variant{}, fmt.Errorf("variant %q: frames must be pc, text or line", s)
	}
	l, err := stackcompress.ParseLayout(layout)
	if err != nil {
		return stackreport.Variant{}, fmt.Errorf("variant %q: %w", s, err)
	}
	return stackreport.Variant{Frames: frames, Layout: l}, nil
}

// readCorpus reads the stacks of the trace or the profile: of a cut
// trace, those of its whole generations, and what was dropped.
func readCorpus(tracePath, pprofPath string) (*stackinput.Corpus, *tracestore.Truncation, error) {
	path, read := tracePath, readTraceStacks
	if pprofPath != "" {
		path = pprofPath
		read = func(r io.Reader) (*stackinput.Corpus, *tracestore.Truncation, error) {
			c, err := stackinput.ReadPprof(r)
			return c, nil, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("stacks: %w", err)
	}
	defer f.Close()
	c, cut, err := read(f)
	if err != nil {
		return nil, nil, fmt.Errorf("stacks: %s: %w", path, err)
	}
	c.Source = filepath.Base(path) + " (" + c.Source + ")"
	return c, cut, nil
}
