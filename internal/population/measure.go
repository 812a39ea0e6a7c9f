package population

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
	"github.com/pctab/pctab/toolchain"
)

// SchemaVersion is the version of the Line JSON schema.
const SchemaVersion = 1

// A Line is one program's result, one JSON line of the population's output.
type Line struct {
	SchemaVersion int      `json:"schema_version"`
	Program       string   `json:"program"`
	Module        string   `json:"module"`
	Package       string   `json:"package"`
	Version       string   `json:"version"`
	GoVersion     string   `json:"go_version"`  // the local release every build used
	BuildFlags    []string `json:"build_flags"` // go build flags of every build
	Stock         *Stock   `json:"stock,omitempty"`
	Formats       []Result `json:"formats"`
	Error         string   `json:"error,omitempty"` // why the program has no (or no complete) result
}

// Stock is what a program's stock build measures.
type Stock struct {
	Bytes        int64 `json:"bytes"`         // file size
	Functions    int   `json:"functions"`     // functab entries
	PCTabBytes   int64 `json:"pctab_bytes"`   // varint tables
	PclntabBytes int64 `json:"pclntab_bytes"` // the whole pclntab
	// Estimates are pctab-stats' estimates (package report) from the
	// stock binary, one per linearpc variant.
	Estimates []Estimate `json:"estimates"`
	Run       Run        `json:"run"`
}

// An Estimate is report's predicted file change for one linear variant.
type Estimate struct {
	Variant string `json:"variant"`
	// Doc is the variant's description when it was estimated
	// (linearpc.Variant.Doc): a cached estimate of a variant whose
	// description has changed since, as it does when its encoder's rules
	// do, is estimated again.
	Doc string `json:"doc"`
	// TablesFileDeltaPercent is the tables' change alone, in percent of
	// the file: the estimate for derived function lengths.
	TablesFileDeltaPercent float64 `json:"tables_file_delta_percent"`
	// FileDeltaPercent adds a uint32 per function: the estimate for a
	// length field in _func.
	FileDeltaPercent float64 `json:"file_delta_percent"`
}

// A Result is one program in one format.
type Result struct {
	Format string   `json:"format"`
	Tags   []string `json:"tags"`
	Bytes  int64    `json:"bytes"` // the patched build's file size
	// FileDeltaBytes and FileDeltaPercent are the real change of the file
	// against the stock build.
	FileDeltaBytes   int64   `json:"file_delta_bytes"`
	FileDeltaPercent float64 `json:"file_delta_percent"`
	TwinBytes        int64   `json:"twin_bytes"`
	// TwinDeltaPercent is the change against the twin: the same code with
	// varint tables, so the tables' cost alone.
	TwinDeltaPercent float64 `json:"twin_delta_percent"`
	PCTabBytes       int64   `json:"pctab_bytes"`
	TwinPCTabBytes   int64   `json:"twin_pctab_bytes"`
	// EstimateVariant and EstimateFileDeltaPercent are pctab-stats'
	// estimate of FileDeltaPercent (from Stock.Estimates); absent when
	// report does not know the format's variant.
	EstimateVariant          string   `json:"estimate_variant,omitempty"`
	EstimateFileDeltaPercent *float64 `json:"estimate_file_delta_percent,omitempty"`
	Check                    Check    `json:"check"`
	// Run is the patched binary's run. (The twin does not run: its
	// patched runtime refuses the varint tables the stock linker wrote.)
	Run Run `json:"run"`
	// SameRun reports whether the patched binary exited as the stock
	// build did, with the same output.
	SameRun bool `json:"same_run"`
}

// Check is toolchain.Check's verdict on the patched build against its twin.
type Check struct {
	OK         bool     `json:"ok"`
	Tables     int      `json:"tables"`
	PCs        int64    `json:"pcs"`
	Mismatches int64    `json:"mismatches"`
	Examples   []string `json:"examples,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// Run is one run of a binary with the program's arguments.
type Run struct {
	Args         []string `json:"args"`
	ExitCode     int      `json:"exit_code"` // -1 when it did not exit (timeout, signal)
	TimedOut     bool     `json:"timed_out"`
	OutputBytes  int      `json:"output_bytes"`  // stdout and stderr
	OutputSHA256 string   `json:"output_sha256"` // of stdout, a NUL, stderr
	Error        string   `json:"error,omitempty"`
}

// RunTimeout bounds each run of a binary.
const RunTimeout = 30 * time.Second

// maxOutput bounds what a run's output may take in memory.
const maxOutput = 4 << 20

// RunBinary runs path with args once, as argv[0] name, in an empty
// temporary directory that is also its HOME, with no input and a timeout.
func RunBinary(ctx context.Context, path, name string, args []string, timeout time.Duration) Run {
	r := Run{Args: slices.Clone(args), ExitCode: -1}
	dir, err := os.MkdirTemp("", "pctab-population-run-")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Args[0] = name
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_CACHE_HOME="+dir, "NO_COLOR=1", "TERM=dumb")
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		r.TimedOut = true
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.ExitCode = 0
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitCode()
	default:
		r.Error = err.Error()
	}
	r.OutputBytes = stdout.n + stderr.n
	h := sha256.New()
	h.Write(stdout.b.Bytes())
	h.Write([]byte{0})
	h.Write(stderr.b.Bytes())
	r.OutputSHA256 = hex.EncodeToString(h.Sum(nil))
	return r
}

// limitedBuffer keeps the first maxOutput bytes and counts them all.
type limitedBuffer struct {
	b bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.n += len(p)
	if room := maxOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func sameRun(a, b Run) bool {
	return a.Error == "" && b.Error == "" && !a.TimedOut && !b.TimedOut &&
		a.ExitCode == b.ExitCode && a.OutputSHA256 == b.OutputSHA256
}

func fileSize(p string) (int64, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a-b) / float64(b)
}

// stockResultPath and resultPath are the cached result files.
func (b *Builder) stockResultPath(p Program) string {
	return filepath.Join(filepath.Dir(b.StockPath(p)), "stock.json")
}

func (b *Builder) resultPath(p Program, f toolchain.Format) string {
	return b.FormatPath(p, f, false) + ".json"
}

// readCached decodes path into v; it reports whether it could.
func readCached(path string, v any) bool {
	data, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(data, v) == nil
}

func writeCached(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// MeasureStock measures p's stock build (cached in a result file).
func (b *Builder) MeasureStock(ctx context.Context, p Program) (*Stock, error) {
	path := b.stockResultPath(p)
	var s Stock
	cached := readCached(path, &s)
	if cached && hasEstimates(&s) {
		return &s, nil
	}
	// A result cached before report sized every variant (or the mix) gets
	// its estimates again; the build and its run stay.
	bin := b.StockPath(p)
	f, err := objscan.Open(bin)
	if err != nil {
		if cached {
			// The binary is gone but its result stays: keep it, without
			// the newer estimates.
			b.logf("population: %s: cannot estimate again (%v); keeping the cached result\n", p.Name, err)
			return &s, nil
		}
		return nil, err
	}
	defer f.Close()
	if s.Bytes, err = fileSize(bin); err != nil {
		return nil, err
	}
	s.Functions, s.PCTabBytes, s.PclntabBytes = len(f.Funcs), f.Sizes.PCTab, f.Sizes.Total
	b.logf("population: estimating %s (pctab-stats report)\n", p.Name)
	if err := estimate(f, &s); err != nil {
		return nil, fmt.Errorf("report of %s: %w", bin, err)
	}
	if !cached {
		s.Run = RunBinary(ctx, bin, p.Name, p.Args, RunTimeout)
	}
	if err := writeCached(path, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// estimate sets s.Estimates from report's sizes of f, the stock build of
// s.Bytes bytes: one per linearpc variant, and the mix (report.MixName).
func estimate(f *objscan.File, s *Stock) error {
	r, err := report.Compute(f, report.Options{Variants: true})
	if err != nil {
		return err
	}
	if r.Mix == nil {
		return fmt.Errorf("no %s row", report.MixName)
	}
	s.Estimates = s.Estimates[:0]
	for _, v := range append(r.Variants, *r.Mix) {
		s.Estimates = append(s.Estimates, Estimate{
			Variant:                v.Name,
			Doc:                    v.Doc,
			TablesFileDeltaPercent: pct(s.Bytes+v.Bytes-r.Tables.VarintBytes, s.Bytes),
			FileDeltaPercent:       v.FileDeltaPercent,
		})
	}
	return nil
}

func hasEstimate(s *Stock, variant, doc string) bool {
	return slices.ContainsFunc(s.Estimates, func(e Estimate) bool { return e.Variant == variant && e.Doc == doc })
}

// hasEstimates reports whether s has an estimate of every linearpc variant
// and of the mix, as estimate gives today: each of the variant as
// described today.
func hasEstimates(s *Stock) bool {
	for _, v := range linearpc.Variants() {
		if !hasEstimate(s, v.Name, v.Doc) {
			return false
		}
	}
	return hasEstimate(s, report.MixName, report.MixDoc)
}

// FormatVariant returns the linearpc variant a format's tables use and
// whether it stores each function's length in a _func field.
func FormatVariant(f toolchain.Format) (variant string, field bool) {
	field = slices.Contains(f.Tags, toolchain.FuncFieldTag)
	variant = strings.TrimSuffix(f.Name, "-field")
	return variant, field
}

// Measure measures p's build in format f against its twin and the stock
// build s (cached in a result file).
func (b *Builder) Measure(ctx context.Context, p Program, f toolchain.Format, s *Stock) (*Result, error) {
	path := b.resultPath(p, f)
	var r Result
	if readCached(path, &r) {
		// Estimates may be newer than the result (MeasureStock).
		setEstimate(&r, f, s)
		return &r, nil
	}
	r = Result{Format: f.Name, Tags: slices.Clone(f.Tags)}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	bin, twin := b.FormatPath(p, f, false), b.FormatPath(p, f, true)
	var err error
	if r.Bytes, err = fileSize(bin); err != nil {
		return nil, err
	}
	if r.TwinBytes, err = fileSize(twin); err != nil {
		return nil, err
	}
	r.FileDeltaBytes = r.Bytes - s.Bytes
	r.FileDeltaPercent = pct(r.Bytes, s.Bytes)
	r.TwinDeltaPercent = pct(r.Bytes, r.TwinBytes)
	setEstimate(&r, f, s)
	b.logf("population: checking %s %s against its twin\n", p.Name, f.Name)
	r.Check = check(bin, twin, &r)
	r.Run = RunBinary(ctx, bin, p.Name, p.Args, RunTimeout)
	r.SameRun = sameRun(s.Run, r.Run)
	if err := writeCached(path, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// check runs toolchain.Check on a patched build and its twin.
func check(bin, twin string, r *Result) Check {
	var c Check
	fl, err := objscan.Open(bin)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	defer fl.Close()
	ft, err := objscan.Open(twin)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	defer ft.Close()
	r.PCTabBytes, r.TwinPCTabBytes = fl.Sizes.PCTab, ft.Sizes.PCTab
	res, err := toolchain.Check(fl, ft)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	c.OK, c.Tables, c.PCs, c.Mismatches, c.Examples = res.OK(), res.Tables, res.PCs, res.Mismatches, res.Examples
	return c
}

// setEstimate sets r's estimate from s's for format f, if report sizes
// f's variant.
func setEstimate(r *Result, f toolchain.Format, s *Stock) {
	variant, field := FormatVariant(f)
	r.EstimateVariant, r.EstimateFileDeltaPercent = "", nil
	for _, e := range s.Estimates {
		if e.Variant == variant {
			v := e.TablesFileDeltaPercent
			if field {
				v = e.FileDeltaPercent
			}
			r.EstimateVariant, r.EstimateFileDeltaPercent = variant, &v
		}
	}
}
