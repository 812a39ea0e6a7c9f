package toolchain

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pctab/pctab/internal/benchrun"
)

// A Flavour is one build that Bench compares.
type Flavour struct {
	Name string   // the value of the "toolchain" configuration key
	Tags []string // build tags
	// Stock builds with the local toolchain instead of the patched one.
	Stock bool
	// LDFlags are the build's linker flags (go build -ldflags).
	// LayoutControl uses them to place stock's code at other addresses.
	LDFlags []string
	// Layout, if not zero, seeds the linker's random order of functions
	// (-ldflags=-randlayout=Layout), so that builds of the same flavour
	// with different seeds run the same code at other addresses.
	Layout int64
}

// BuildFlags returns the go command flags that select fl's build: -tags
// and -ldflags where fl has them.
func (fl Flavour) BuildFlags() []string {
	var args []string
	if len(fl.Tags) > 0 {
		args = append(args, "-tags", strings.Join(fl.Tags, ","))
	}
	ld := fl.LDFlags
	if fl.Layout != 0 {
		ld = append(slices.Clip(ld), fmt.Sprintf("-randlayout=%d", fl.Layout))
	}
	if len(ld) > 0 {
		args = append(args, "-ldflags="+strings.Join(ld, " "))
	}
	return args
}

// Baseline reports whether fl is the build every ratio is taken to: the
// stock toolchain with no other flags, in any function layout.
func (fl Flavour) Baseline() bool { return fl.Stock && len(fl.Tags) == 0 && len(fl.LDFlags) == 0 }

// LayoutControl is the flavour "stock-align64": the stock toolchain with
// every function aligned to 64 bytes instead of 32 (-ldflags=-funcalign=64).
// It runs the same instructions as stock at other addresses, so its ratios
// to stock are what code placement alone moves a benchmark by: the floor
// under which a patched flavour's ratio says nothing about its code.
func LayoutControl() Flavour {
	return Flavour{Name: "stock-align64", Stock: true, LDFlags: []string{"-funcalign=64"}}
}

// Flavours returns the builds Bench compares: the stock toolchain; the
// patched toolchain's default flavour (no tags: cf-palette-short tables,
// the direct-mapped pcvalue cache and the per-PC unwind caches);
// default-cf, the same with compact-fast tables (CompactFastTag; the
// default flavour until patch 0009); the earlier flavours, spec tables
// (linear) and compact-fast tables (linear-cf), each with the stock
// pcvalue cache and without a cache (-nocache); and cf-palette-short
// tables without a pcvalue cache (palette-nocache); and the default with
// its pcln tables left in varint (varln, VarlnTag), or with cfps-offset
// tables (offset, OffsetTag, and offset-nocache without a pcvalue cache);
// and the default without the walk of cached frames on the goroutine's
// stack (nofastcallers, NoFastCallersTag: patch 0011's unwinding).
// All derive function lengths from the functab. Last comes LayoutControl,
// stock's code at other addresses. The stock flavour is first and the
// default second.
func Flavours() []Flavour {
	return []Flavour{
		{Name: "stock", Stock: true},
		{Name: "default"},
		{Name: "default-cf", Tags: []string{CompactFastTag}},
		{Name: "linear", Tags: []string{SpecTag, StockCacheTag}},
		{Name: "linear-nocache", Tags: []string{SpecTag, NoCacheTag}},
		{Name: "linear-cf", Tags: []string{CompactFastTag, StockCacheTag}},
		{Name: "linear-cf-nocache", Tags: []string{CompactFastTag, NoCacheTag}},
		{Name: "palette-nocache", Tags: []string{NoCacheTag}},
		{Name: "varln", Tags: []string{VarlnTag}},
		{Name: "offset", Tags: []string{OffsetTag}},
		{Name: "offset-nocache", Tags: []string{OffsetTag, NoCacheTag}},
		{Name: "nofastcallers", Tags: []string{NoFastCallersTag}},
		LayoutControl(),
	}
}

// RoundFlavours returns the builds round r of a round-robin comparison of
// fls runs, in order: fls rotated by r, so that no flavour always runs
// first or after the same one, and if layouts is not zero each in random
// function layout r%layouts+1 (Flavour.Layout), so that the rounds spread
// every flavour's code over that many placements alike.
func RoundFlavours(fls []Flavour, layouts, r int) []Flavour {
	out := make([]Flavour, len(fls))
	for i := range out {
		out[i] = fls[(i+r)%len(fls)]
		if layouts > 0 {
			out[i].Layout = int64(r%layouts) + 1
		}
	}
	return out
}

// LayoutBuilds returns every build that RoundFlavours(fls, layouts, r)
// returns for some r: each flavour in each layout, or fls if layouts is
// zero.
func LayoutBuilds(fls []Flavour, layouts int) []Flavour {
	if layouts <= 0 {
		return fls
	}
	var out []Flavour
	for r := range layouts {
		out = append(out, RoundFlavours(fls, layouts, r)...)
	}
	return out
}

// FlavourNames returns the names of Flavours, in order: stock first.
func FlavourNames() []string {
	var names []string
	for _, fl := range Flavours() {
		names = append(names, fl.Name)
	}
	return names
}

// BenchOptions configure Bench.
type BenchOptions struct {
	Dir       string // directory of the package's module, "" for a standard-library package
	Package   string // package whose tests to build: "runtime", "."
	Bench     string // -test.bench regular expression
	BenchTime string // -test.benchtime, e.g. "200ms" or "1x"
	Count     int    // rounds; each runs every flavour once, in turn
	Work      string // directory for the test binaries
	// Flavours names the flavours to run besides stock (default: all of
	// Flavours).
	Flavours []string
	// Interleave runs the benchmarks one at a time: in each round, each
	// benchmark in every flavour in turn (package benchrun), so that the
	// runs a round pairs are adjacent in time.
	Interleave bool
	// Layouts, if not zero, builds every flavour in that many random
	// function layouts and runs round r in layout r%Layouts+1
	// (RoundFlavours).
	Layouts int
}

// Bench builds the tests of a package in every Flavour (go test -c) and
// runs their benchmarks round-robin, o.Count rounds, the flavours' order
// rotated by one each round, so that the machine's drift over time falls
// on every flavour alike (with o.Interleave, benchmark by benchmark), and
// with o.Layouts each round in its function layout. It writes the results
// to w in the Go benchmark format, each run's block after a "toolchain:
// NAME" configuration line (and "layout: SEED" with o.Layouts):
// `benchstat -col toolchain -ignore layout FILE` compares them.
// Progress goes to log.
func (tc *Toolchain) Bench(ctx context.Context, o BenchOptions, w io.Writer, log io.Writer) error {
	if o.Count < 1 {
		o.Count = 1
	}
	flavours, err := selectFlavours(o.Flavours)
	if err != nil {
		return err
	}
	bins, err := tc.buildTests(ctx, LayoutBuilds(flavours, o.Layouts), o.Dir, o.Package, o.Work, log)
	if err != nil {
		return err
	}
	patterns := []string{o.Bench}
	if o.Interleave {
		names, err := benchrun.Names(ctx, bins[buildName(LayoutBuilds(flavours, o.Layouts)[0])], o.Dir, o.Bench, nil)
		if err != nil {
			return err
		}
		patterns = patterns[:0]
		for _, n := range names {
			patterns = append(patterns, benchrun.Pattern(n))
		}
	}
	bw := bufio.NewWriter(w)
	header := true
	for round := range o.Count {
		for _, pat := range patterns {
			for _, fl := range RoundFlavours(flavours, o.Layouts, round) {
				fmt.Fprintf(log, "toolchain: round %d of %d, %s %s\n", round+1, o.Count, buildName(fl), pat)
				if err := runBench(ctx, bins[buildName(fl)], o.Dir, pat, o.BenchTime, fl, bw, header); err != nil {
					return err
				}
				header = false
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// runBench runs the benchmarks of bin, flavour fl's, that pattern selects
// once and writes their result lines to w after a "toolchain: NAME" line
// (and "layout: SEED" if fl has one), with the goos, goarch, pkg and cpu
// lines if header is set.
func runBench(ctx context.Context, bin, dir, pattern, benchtime string, fl Flavour, w io.Writer, header bool) error {
	name := fl.Name
	cmd := exec.CommandContext(ctx, bin, "-test.run=NONE", "-test.bench="+pattern, "-test.benchtime="+benchtime, "-test.count=1")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("toolchain: running the %s benchmarks: %w\n%s%s", name, err, out, stderr.Bytes())
	}
	fmt.Fprintf(w, "toolchain: %s\n", name)
	if fl.Layout != 0 {
		fmt.Fprintf(w, "layout: %d\n", fl.Layout)
	}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			fmt.Fprintln(w, line)
		case header && (strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "goarch:") || strings.HasPrefix(line, "pkg:") || strings.HasPrefix(line, "cpu:")):
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

// buildName names build fl: its flavour's name, and its layout's seed if
// it has one.
func buildName(fl Flavour) string {
	if fl.Layout == 0 {
		return fl.Name
	}
	return fmt.Sprintf("%s.%d", fl.Name, fl.Layout)
}

// buildTests builds the tests of pkg (in the module at dir, "" for the
// standard library) in each build of flavours (go test -c) into work and
// returns the binaries' paths by buildName.
func (tc *Toolchain) buildTests(ctx context.Context, flavours []Flavour, dir, pkg, work string, log io.Writer) (map[string]string, error) {
	bins := map[string]string{}
	for _, fl := range flavours {
		bin := filepath.Join(work, buildName(fl)+".test")
		bins[buildName(fl)] = bin
		args := append([]string{"test", "-c", "-o", bin}, fl.BuildFlags()...)
		args = append(args, pkg)
		var cmd *exec.Cmd
		if fl.Stock {
			cmd = exec.CommandContext(ctx, tc.StockGoCommand(), args...)
			cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
		} else {
			cmd = exec.CommandContext(ctx, tc.GoCommand(false), args...)
			cmd.Env = tc.Env(false)
		}
		cmd.Dir = dir
		fmt.Fprintf(log, "toolchain: go test -c %s (%s)\n", pkg, buildName(fl))
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("toolchain: building the %s tests of %s: %w\n%s", fl.Name, pkg, err, out)
		}
	}
	return bins, nil
}
