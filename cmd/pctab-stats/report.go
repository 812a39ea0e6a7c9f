package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
	"golang.org/x/perf/benchfmt"
)

// Output formats of the report.
const (
	formatText  = "text"
	formatJSON  = "json"
	formatBench = "bench"
)

// reportConfig is the parsed command line of the report subcommand.
type reportConfig struct {
	paths    []string
	format   string
	variants bool
	workers  int
	// bench selects the lookup benchmarks to run by name
	// ("set=hot/pcs=random/enc=linear"); nil means no -bench.
	bench    *regexp.Regexp
	run      lookupbench.RunOptions
	bopt     lookupbench.Options
	progress bool   // show progress on stderr
	pairs    string // -pairs: prefix of the pairs files, "" for none
	svg      string // -svg: directory of the plots, "" for none
}

// benchFlag is -bench: a boolean flag ("-bench" alone selects every lookup
// benchmark) that also accepts a regular expression, as go test -bench does.
type benchFlag struct {
	set bool
	re  *regexp.Regexp
}

// IsBoolFlag lets -bench stand alone, meaning -bench=true.
func (b *benchFlag) IsBoolFlag() bool { return true }

// String returns the flag's value: "", "true" or the regular expression.
func (b *benchFlag) String() string {
	if b == nil || !b.set {
		return ""
	}
	if b.re == nil {
		return "true"
	}
	return b.re.String()
}

// Set accepts a boolean or a regular expression.
func (b *benchFlag) Set(s string) error {
	if v, err := strconv.ParseBool(s); err == nil {
		b.set, b.re = v, nil
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return err
	}
	b.set, b.re = true, re
	return nil
}

// reportGCPercent is the GC percentage a report with -bench runs with,
// unless the GOGC environment variable sets one. When the size report
// built a Set per variant, its live heap was about half of what the
// default GOGC=100 let the heap grow to; measured on Go 1.26.8's compile
// (25.8 MB) on 2 cores: GOGC=100 peaked at 109-115 MB RSS in 0.85 s,
// GOGC=50 at 85-87 MB in 0.92 s, GOGC=30 at 77 MB in 1.0 s. The size report
// now allocates little beyond what it keeps, and runs with the default:
// GOGC=30 saved at most 2 MB on compile and gopls and nothing on go and
// gofmt, for 5-20% more CPU time. Unlike a fixed memory limit, a GC
// percentage scales with the binary and never makes the GC run back to back.
const reportGCPercent = 30

// reportCommand is "pctab-stats report", also "pctab-stats [flags] [BINARY...]".
var reportCommand = &cli.Command{
	Name:  "report",
	Args:  "[flags] [BINARY...]",
	Short: "table sizes, varint and linear, and lookup speed",
	Long: "Report reports the size of each binary's PC-value tables in Go's varint format and\n" +
		"in the linear-index format of golang/go#61984. Without a BINARY it reads\n" +
		"$(go env GOROOT)/bin/go.\n\n" +
		"With -bench it also times lookups: a hot set of 1,024 (table, PC) pairs in a\n" +
		"fixed order and shuffled every pass, and a cold set of 1,048,576 pairs, at\n" +
		"random PCs, PC 0, PC 4096 and return addresses, in every encoding, against\n" +
		"the runtime's own code shape (see go doc github.com/pctab/pctab/lookupbench).\n" +
		"The tables are decoded by host code: to time lookups on arm64, run an arm64\n" +
		"build under emulation; its numbers are labelled emulated:\n\n" +
		"\tGOARCH=arm64 go build -o pctab-stats-arm64 ./cmd/pctab-stats\n" +
		"\tqemu-aarch64 ./pctab-stats-arm64 -bench -format=bench BINARY\n\n" +
		"With -json, each binary's object holds the fields of report.Report and, with\n" +
		"-bench, \"speed\": a lookupbench.Result. A binary whose tables are already\n" +
		"linear (rewrite-binary, pctab-toolchain) is checked by pctab-stats verify.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		rf := declareReportFlags(fs)
		return func(env *cli.Env, args []string) error {
			cfg, err := rf.config(args, env.Stderr)
			if err != nil {
				return err
			}
			if os.Getenv("GOGC") == "" && cfg.bench != nil {
				defer debug.SetGCPercent(debug.SetGCPercent(reportGCPercent))
			}
			return doReport(cfg, env.Stdout, env.Stderr)
		}
	},
}

// reportFlags holds the report's flag values.
type reportFlags struct {
	jsonOut   *bool
	variants  *bool
	workers   *int
	bench     benchFlag
	count     *int
	benchtime lookupbench.BenchTime
	format    *string
	pairs     *string
	sample    *string
	svg       *string
}

func declareReportFlags(fs *flag.FlagSet) *reportFlags {
	rf := &reportFlags{benchtime: lookupbench.BenchTime{D: time.Second}}
	rf.jsonOut = fs.Bool("json", false, "print one JSON object per binary (same as -format=json)")
	rf.variants = fs.Bool("variants", true, "also size every linearpc variant and the hybrid encoding")
	rf.workers = fs.Int("j", 0, "worker goroutines (0 = GOMAXPROCS)")
	fs.Var(&rf.bench, "bench", "also time lookups in every encoding; -bench=`regexp` times only the benchmarks\n"+
		"whose name, such as set=hot/pcs=random/enc=linear, matches")
	rf.count = fs.Int("count", 1, "run each lookup benchmark `n` times, as go test -count")
	fs.Var(&rf.benchtime, "benchtime", "run each lookup benchmark for `t`: a duration, or Nx for N lookups, as go test -benchtime (default 1s)")
	rf.format = fs.String("format", formatText, "output `format`: text, json, or bench (Go benchmark lines only, for benchstat; implies -bench)")
	rf.pairs = fs.String("pairs", "", "with -bench, also write the spec-encoded tables and the sampled (table, PC) pairs of the hot sets\n"+
		"and the cold random set to `PREFIX`.BIN.SET-PCS.pairs, for timing another decoder on the same pairs\n"+
		"(format: go doc github.com/pctab/pctab/lookupbench Bench.WritePairs)")
	rf.svg = fs.String("svg", "", "write plots to `DIR`: BIN.table-kinds.svg (the size change per table kind) and, with -bench,\n"+
		"BIN.lookup-offset.svg (lookup time against the PC's offset into its function, 0 to 8 KiB in 512-byte buckets,\n"+
		"every encoding timed on a hot-shuffled set per bucket; benchmarks named set=hot-shuffled/pcs=offset=LO-HI/enc=E)")
	rf.sample = fs.String("sample", "refs", "draw lookup samples uniformly over `refs` (references of functions to tables) or tables (distinct tables)")
	return rf
}

// parseReportFlags parses the report's command line (flags and binaries).
func parseReportFlags(args []string, stderr io.Writer) (reportConfig, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rf := declareReportFlags(fs)
	if err := fs.Parse(args); err != nil {
		return reportConfig{}, cli.Usagef("%w", err)
	}
	return rf.config(fs.Args(), stderr)
}

// config checks the flags and returns the configuration of a report on
// the binaries paths (none: the local go binary).
func (rf *reportFlags) config(paths []string, stderr io.Writer) (reportConfig, error) {
	cfg := reportConfig{format: *rf.format, variants: *rf.variants, workers: *rf.workers}
	if cfg.workers < 0 {
		return cfg, cli.Usagef("-j=%d: want 0 (GOMAXPROCS) or more", cfg.workers)
	}
	switch cfg.format {
	case formatText, formatJSON, formatBench:
	default:
		return cfg, cli.Usagef("-format=%s: want text, json or bench", cfg.format)
	}
	if *rf.jsonOut {
		if cfg.format == formatBench {
			return cfg, cli.Usagef("-json and -format=bench conflict")
		}
		cfg.format = formatJSON
	}
	if rf.bench.set {
		cfg.bench = rf.bench.re
		if cfg.bench == nil {
			cfg.bench = regexp.MustCompile("")
		}
	} else if cfg.format == formatBench {
		cfg.bench = regexp.MustCompile("")
	}
	if *rf.count < 1 {
		return cfg, cli.Usagef("-count=%d: must be at least 1", *rf.count)
	}
	cfg.run = lookupbench.RunOptions{Count: *rf.count, BenchTime: rf.benchtime}
	s, err := lookupbench.ParseSampling(*rf.sample)
	if err != nil {
		return cfg, cli.Usagef("-sample: %w", err)
	}
	cfg.bopt = lookupbench.Options{Sampling: s, Workers: *rf.workers}
	cfg.pairs = *rf.pairs
	cfg.svg = *rf.svg
	if cfg.svg != "" && cfg.format == formatBench {
		return cfg, cli.Usagef("-svg needs the size report: not with -format=bench")
	}
	if cfg.pairs != "" && cfg.bench == nil {
		return cfg, cli.Usagef("-pairs needs -bench")
	}
	if cfg.paths, err = binariesOrDefault(paths); err != nil {
		return cfg, err
	}
	cfg.progress = isTerminal(stderr) && (cfg.bench != nil || len(cfg.paths) > 1)
	return cfg, nil
}

// reportSchemaVersion is the schema_version of the size report's JSON
// (testdata/report.fields lists its fields). Bump it when a field is
// removed, renamed or changes meaning, and say so in docs/json.md.
const reportSchemaVersion = 3

// jsonReport is the JSON form of one binary: the schema version, the size
// report's fields, unchanged, and with -bench the lookup speed under
// "speed".
type jsonReport struct {
	SchemaVersion int `json:"schema_version"`
	*report.Report
	Speed *lookupbench.Result `json:"speed,omitempty"`
}

// binResult is what the command computed for one binary.
type binResult struct {
	name    string // benchmark name of the binary
	size    *report.Report
	speed   *lookupbench.Result
	offsets *lookupbench.Result // with -bench and -svg: Bench.Offsets
}

func doReport(cfg reportConfig, stdout, stderr io.Writer) error {
	prog := &progress{w: stderr, on: cfg.progress}
	var bw *benchfmt.Writer
	if cfg.format == formatBench {
		bw = benchfmt.NewWriter(stdout)
	}
	if cfg.bench != nil {
		cfg.run.Match = cfg.bench.MatchString
	}
	names := benchNames(cfg.paths)
	var done []binResult
	failed := 0
	for i, p := range cfg.paths {
		prefix := ""
		if len(cfg.paths) > 1 {
			prefix = fmt.Sprintf("[%d/%d] ", i+1, len(cfg.paths))
		}
		res, err := measureFile(p, cfg, prog, prefix)
		prog.clear()
		if errors.Is(err, errOutput) {
			return err // not the binary's fault: the next would fail too
		}
		if err != nil {
			fmt.Fprintf(stderr, "pctab-stats: %v\n", err)
			failed++
			continue
		}
		res.name = names[i]
		done = append(done, res)
		if len(done) > 1 && cfg.format == formatText {
			fmt.Fprintln(stdout)
		}
		if err := writeResult(stdout, bw, cfg.format, res); err != nil {
			return err
		}
		if cfg.svg != "" {
			if err := writePlots(cfg.svg, res); err != nil {
				return fmt.Errorf("-svg %s: %w", cfg.svg, err)
			}
		}
	}
	if cfg.format == formatText && len(done) > 1 {
		if err := writeComparisons(stdout, done); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d binaries could not be read", failed, len(cfg.paths))
	}
	return nil
}

// writeResult writes one binary's report in format: a JSON line, Go
// benchmark lines to bw, or text.
func writeResult(stdout io.Writer, bw *benchfmt.Writer, format string, res binResult) error {
	switch format {
	case formatJSON:
		return jsonschema.WriteLine(stdout, jsonReport{reportSchemaVersion, res.size, res.speed})
	case formatBench:
		return lookupbench.WriteBench(bw, res.name, res.speed)
	}
	if err := report.WriteText(stdout, res.size); err != nil {
		return err
	}
	if res.speed != nil {
		fmt.Fprintln(stdout)
		if err := lookupbench.WriteText(stdout, res.speed); err != nil {
			return err
		}
	}
	if res.offsets != nil {
		fmt.Fprintf(stdout, "\nlookup speed by the PC's byte offset into its function (pcs=offset=LO-HI):\n")
		return lookupbench.WriteText(stdout, res.offsets)
	}
	return nil
}

// writeComparisons writes the text comparison of several binaries: their
// sizes and, for those timed, their lookup speeds.
func writeComparisons(stdout io.Writer, done []binResult) error {
	var sizes []*report.Report
	var speedNames []string
	var speeds []*lookupbench.Result
	for _, r := range done {
		sizes = append(sizes, r.size)
		if r.speed != nil {
			speedNames = append(speedNames, r.name)
			speeds = append(speeds, r.speed)
		}
	}
	fmt.Fprintln(stdout)
	if err := report.WriteComparison(stdout, sizes); err != nil {
		return err
	}
	if len(speeds) > 0 {
		fmt.Fprintln(stdout)
		return lookupbench.WriteComparison(stdout, speedNames, speeds)
	}
	return nil
}

// measureFile computes the size report (unless only benchmark lines are
// wanted) and, with -bench, the lookup speed of the binary at path.
func measureFile(path string, cfg reportConfig, prog *progress, prefix string) (binResult, error) {
	var res binResult
	prog.show("%sreading %s", prefix, path)
	f, err := objscan.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	if cfg.format != formatBench {
		prog.show("%ssizing %s", prefix, path)
		if res.size, err = report.Compute(f, report.Options{Variants: cfg.variants, Workers: cfg.workers}); err != nil {
			return res, fmt.Errorf("%s: %w", path, err)
		}
	}
	if cfg.bench == nil {
		return res, nil
	}
	prog.show("%spreparing lookup benchmarks for %s", prefix, path)
	b, err := lookupbench.New(f, cfg.bopt)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	if cfg.pairs != "" {
		if err := writePairs(cfg, b, filepath.Base(path)); err != nil {
			return res, fmt.Errorf("%w: %w", errOutput, err)
		}
	}
	ro := cfg.run
	start := time.Now()
	ro.Progress = func(done, total int, name string) {
		if name == "" {
			return
		}
		eta := ""
		if done > 0 {
			left := time.Duration(float64(time.Since(start)) / float64(done) * float64(total-done))
			eta = fmt.Sprintf(", about %s left", left.Round(time.Second))
		}
		prog.show("%s%s: benchmark %d/%d %s%s", prefix, filepath.Base(path), done+1, total, name, eta)
	}
	if res.speed, err = b.Run(ro); err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	if cfg.svg != "" {
		oo := lookupbench.OffsetOptions{Count: ro.Count, BenchTime: ro.BenchTime, Match: ro.Match, Progress: ro.Progress}
		start = time.Now()
		if res.offsets, err = b.Offsets(oo); err != nil {
			return res, fmt.Errorf("%s: %w", path, err)
		}
		if len(res.speed.Groups) == 0 {
			res.speed = nil // -bench selected only offset benchmarks
		}
	}
	return res, nil
}

// errOutput marks an error writing the command's files (-pairs), which
// stops the command, unlike an error reading one binary.
var errOutput = errors.New("writing the output")

// benchNames returns the name of each binary in benchmark names: its base
// name, with a suffix when several binaries share it.
func benchNames(paths []string) []string {
	names := make([]string, len(paths))
	seen := map[string]int{}
	for i, p := range paths {
		n := lookupbench.NameValue(filepath.Base(p))
		seen[n]++
		if k := seen[n]; k > 1 {
			n += "_" + strconv.Itoa(k)
		}
		names[i] = n
	}
	return names
}

// progress writes a one-line status to a terminal, overwriting it each time.
type progress struct {
	w     io.Writer
	on    bool
	shown bool
}

func (p *progress) show(format string, args ...any) {
	if !p.on {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
	p.shown = true
}

// clear erases the status line, before other output.
func (p *progress) clear() {
	if p.on && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writePairs writes the pairs files of -pairs for binary bin.
func writePairs(cfg reportConfig, b *lookupbench.Bench, bin string) error {
	hot, cold := cfg.bopt.HotSize, cfg.bopt.ColdSize
	if hot == 0 {
		hot = lookupbench.HotSize
	}
	if cold == 0 {
		cold = lookupbench.ColdSize
	}
	type job struct {
		set string
		pcs lookupbench.PCs
		n   int
	}
	var jobs []job
	for _, p := range lookupbench.AllPCs() {
		jobs = append(jobs, job{"hot", p, hot})
	}
	jobs = append(jobs, job{"cold", lookupbench.PCRandom, cold})
	for _, j := range jobs {
		name := fmt.Sprintf("%s.%s.%s-%s.pairs", cfg.pairs, lookupbench.NameValue(bin), j.set, j.pcs)
		var buf bytes.Buffer
		if err := b.WritePairs(&buf, j.pcs, j.n); err != nil {
			// A rule without pairs (no return addresses, no 4 KiB
			// function) has no file.
			continue
		}
		if err := os.WriteFile(name, buf.Bytes(), 0o666); err != nil {
			return fmt.Errorf("-pairs %s: %w", cfg.pairs, err)
		}
	}
	return nil
}
