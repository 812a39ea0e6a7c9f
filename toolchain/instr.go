package toolchain

import (
	"path/filepath"

	cg "github.com/pctab/pctab/internal/cachegrind"

	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/perf/benchfmt"
)

// InstrOptions configure Instructions.
type InstrOptions struct {
	Dir     string // directory of the package's module, "" for a standard-library package
	Package string // package whose tests to build: "runtime", "."
	Bench   string // -test.bench regular expression
	Work    string // directory for the test binaries
	// Target is about how long the smaller of each benchmark's two runs
	// takes natively (default 20ms); the larger runs 5 times as many
	// iterations.
	Target time.Duration
	// Parallel is how many valgrind runs go at once (default 1).
	Parallel int
	// Flavours names the flavours to count (default: all of Flavours);
	// stock is always counted.
	Flavours []string
}

// Instructions builds the tests of a package in every Flavour, as Bench
// does, and counts the instructions each benchmark executes per operation
// under cachegrind (valgrind --tool=cachegrind --cache-sim=no), with the
// garbage collector off (GOGC=off: its timing makes the counts wander) and
// GOMAXPROCS=1. Each benchmark runs twice, with -test.benchtime=Nx for a
// small and a 5 times larger N chosen from the stock build's native speed
// (o.Target), and the difference of the two counts divided by the
// difference of the Ns is the count per operation, free of the start-up
// and calibration work both runs share. Counts do not depend on the
// machine's load. It writes them to w in the Go benchmark format (unit
// instructions/op), each flavour's block after a "toolchain: NAME"
// configuration line; SummarizeInstructions tabulates them. Progress goes
// to log.
func (tc *Toolchain) Instructions(ctx context.Context, o InstrOptions, w io.Writer, log io.Writer) error {
	if o.Target <= 0 {
		o.Target = 20 * time.Millisecond
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		return fmt.Errorf("toolchain: counting instructions needs valgrind: %w", err)
	}
	flavours, err := selectFlavours(o.Flavours)
	if err != nil {
		return err
	}
	bins, err := tc.buildTests(ctx, flavours, o.Dir, o.Package, o.Work, log)
	if err != nil {
		return err
	}
	// The benchmarks and their native speed, from the stock build.
	cmd := exec.CommandContext(ctx, bins[buildName(flavours[0])], "-test.run=NONE", "-test.bench="+o.Bench, "-test.benchtime=20ms", "-test.count=1")
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("toolchain: running the stock benchmarks of %s: %w\n%s", o.Package, err, out)
	}
	type bench struct {
		name   string
		lo, hi int
	}
	var benches []bench
	r := benchfmt.NewReader(bytes.NewReader(out), "stock")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		ns, ok := res.Value("sec/op")
		if !ok || ns <= 0 {
			continue
		}
		lo := max(2, min(1_000_000, int(o.Target.Seconds()/ns)))
		benches = append(benches, bench{string(res.Name), lo, 5 * lo})
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(benches) == 0 {
		return fmt.Errorf("toolchain: no benchmarks of %s match %q", o.Package, o.Bench)
	}
	type job struct {
		b, f, n int // bench, flavour, -test.benchtime count
		ir      int64
		err     error
	}
	var jobs []*job
	for b, be := range benches {
		for f := range flavours {
			jobs = append(jobs, &job{b: b, f: f, n: be.lo}, &job{b: b, f: f, n: be.hi})
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Parallel)
	var logMu sync.Mutex
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			logMu.Lock()
			fmt.Fprintf(log, "toolchain: cachegrind %d of %d: %s %s %dx\n", i+1, len(jobs), flavours[j.f].Name, benches[j.b].name, j.n)
			logMu.Unlock()
			j.ir, j.err = cachegrind(ctx, o.Dir, bins[buildName(flavours[j.f])], BenchRegexp("Benchmark"+benches[j.b].name), j.n)
		}()
	}
	wg.Wait()
	bw := bufio.NewWriter(w)
	for f, fl := range flavours {
		fmt.Fprintf(bw, "toolchain: %s\n", fl.Name)
		for b, be := range benches {
			lo, hi := jobs[2*(b*len(flavours)+f)], jobs[2*(b*len(flavours)+f)+1]
			if err := errors.Join(lo.err, hi.err); err != nil {
				return fmt.Errorf("toolchain: %s %s: %w", fl.Name, be.name, err)
			}
			per := float64(hi.ir-lo.ir) / float64(hi.n-lo.n)
			fmt.Fprintf(bw, "Benchmark%s\t%d\t%.0f instructions/op\n", be.name, hi.n-lo.n, per)
		}
	}
	return bw.Flush()
}

// BenchRegexp returns the -test.bench expression that selects exactly the
// benchmark of full name name (e.g. "BenchmarkCallers/no-cache"): each
// slash-separated element anchored and quoted, as the testing package
// splits both the name and the expression at slashes.
func BenchRegexp(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// cachegrind returns the instructions a test binary executes running the
// benchmarks re n times each.
func cachegrind(ctx context.Context, dir, bin, re string, n int) (int64, error) {
	_, p, err := cg.Run(ctx, cg.Cmd{
		Path: bin,
		Args: []string{"-test.run=NONE", "-test.bench=" + re, "-test.benchtime=" + strconv.Itoa(n) + "x", "-test.count=1"},
		Dir:  dir,
		Env:  append(os.Environ(), "GOGC=off", "GOMAXPROCS=1"),
	})
	if err != nil {
		return 0, err
	}
	return p.Total, nil
}

// IsSymtabFile reports whether path, a source file's path as the compiler
// records it, is one of the runtime's files that unwind the stack and read
// the symbol tables (runtime/symtab*.go, symtabinl.go, traceback.go and
// extern.go, which holds Caller and Callers): the code the table format
// and the pcvalue cache change.
func IsSymtabFile(path string) bool {
	dir, file := filepath.Split(filepath.ToSlash(path))
	if !strings.HasSuffix(dir, "/runtime/") && dir != "runtime/" {
		return false
	}
	return strings.HasPrefix(file, "symtab") && strings.HasSuffix(file, ".go") ||
		file == "traceback.go" || file == "extern.go"
}

// SummarizeInstructions reads Instructions' output and writes one row per
// benchmark: each flavour's instructions per operation (Flavours order)
// and its ratio to the stock flavour's.
func SummarizeInstructions(r io.Reader, w io.Writer) error {
	vals := map[string]map[string]float64{}
	var names []string
	br := benchfmt.NewReader(r, "instructions")
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		v, ok := res.Value("instructions/op")
		if !ok {
			continue
		}
		name := strings.TrimPrefix(string(res.Name), "Benchmark")
		if vals[name] == nil {
			vals[name] = map[string]float64{}
			names = append(names, name)
		}
		vals[name][res.GetConfig("toolchain")] = v
	}
	if err := br.Err(); err != nil {
		return fmt.Errorf("toolchain: reading instruction counts: %w", err)
	}
	var flavours []string
	for _, fl := range Flavours() {
		for _, n := range names {
			if _, ok := vals[n][fl.Name]; ok {
				flavours = append(flavours, fl.Name)
				break
			}
		}
	}
	fmt.Fprintf(w, "| instructions/op | %s |\n|---|%s\n", strings.Join(flavours, " | "), strings.Repeat("---:|", len(flavours)))
	for _, n := range names {
		fmt.Fprintf(w, "| %s |", n)
		stock, hasStock := vals[n]["stock"]
		for _, fl := range flavours {
			v, ok := vals[n][fl]
			switch {
			case !ok:
				fmt.Fprint(w, " |")
			case fl == "stock" || !hasStock || stock == 0:
				fmt.Fprintf(w, " %s |", commas(v))
			default:
				fmt.Fprintf(w, " %s (%.3f×) |", commas(v), v/stock)
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

// commas formats v rounded to an integer with thousands separators.
func commas(v float64) string {
	s := strconv.FormatInt(int64(v+0.5*sign(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

// selectFlavours returns the stock flavour and those of Flavours named in
// names, in Flavours order; all of them if names is empty.
func selectFlavours(names []string) ([]Flavour, error) {
	all := Flavours()
	if len(names) == 0 {
		return all, nil
	}
	var fls []Flavour
	for _, fl := range all {
		if fl.Baseline() || slices.Contains(names, fl.Name) {
			fls = append(fls, fl)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(all, func(fl Flavour) bool { return fl.Name == n }) {
			return nil, fmt.Errorf("toolchain: no flavour %q", n)
		}
	}
	return fls, nil
}
