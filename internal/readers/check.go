package readers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/toolchain"
	"golang.org/x/tools/txtar"
)

// Binaries are one program built for the readers: by the patched toolchain
// in one format, by its twin (the stock linker: the same addresses, varint
// tables; it does not run, its runtime being the patched one) and by the
// stock toolchain (which runs, for the readers that run the program), each
// with symbols and DWARF and stripped (-ldflags='-s -w'). All are built
// with -trimpath, so that file names do not depend on the GOROOT.
type Binaries struct {
	Format                                       string // the format's name, and /TARGET for a cross build
	GOOS, GOARCH                                 string // empty for the host's
	Patched, Twin, Stock                         string
	PatchedStripped, TwinStripped, StockStripped string
}

// Stripped returns the stripped binaries of b as b's unstripped ones
// (Format " stripped"), for the checks that read Patched and Twin.
func (b *Binaries) Stripped() *Binaries {
	s := *b
	s.Format += " stripped"
	s.Patched, s.Twin, s.Stock = b.PatchedStripped, b.TwinStripped, b.StockStripped
	return &s
}

// CheckFormats returns the names of the formats (toolchain.Formats) the
// tests and pctab-toolchain readers build by default: the compact-fast and
// cf-palette-short variants with derived lengths, and the spec with a
// length field (the other _func layout).
func CheckFormats() []string { return []string{"compact-fast", "cf-palette-short", "spec-field"} }

// variantTags are the build tags that select each linear variant.
var variantTags = map[string]string{
	"spec":             toolchain.SpecTag,
	"compact-fast":     toolchain.CompactFastTag,
	"cf-palette-short": toolchain.PaletteTag,
}

// formatVariant returns the variant of the format called name ("spec" for
// "spec-field") and whether its lengths are derived from the functab.
func formatVariant(name string) (variant string, derived bool) {
	if name == objscan.LinearVarintPCLnName {
		// The readers' patches do not know varint pcln tables; the
		// variant is what objscan reports for the other kinds.
		return "cf-palette-short", true
	}
	variant, field := strings.CutSuffix(name, "-field")
	return variant, !field
}

// Formats returns the formats of toolchain.Formats called names, in that
// order, each with the build tag of its variant added if its tags do not
// have it, so that a format builds what its name says whichever variant
// is the toolchain's default.
func Formats(names ...string) ([]toolchain.Format, error) {
	var fs []toolchain.Format
	for _, name := range names {
		i := slices.IndexFunc(toolchain.Formats(), func(f toolchain.Format) bool { return f.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("readers: unknown format %q (toolchain.Formats)", name)
		}
		f := toolchain.Formats()[i]
		v, _ := formatVariant(f.Name)
		if tag, ok := variantTags[v]; ok && !slices.Contains(f.Tags, tag) {
			f.Tags = append(slices.Clip(f.Tags), tag)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// BuildProgram unpacks the txtar archive (a Go module) into dir and builds
// it there in format f, for target if it is not empty (binaries only the
// probes read: they do not run here): GOARCH for linux/GOARCH, or
// GOOS/GOARCH.
func BuildProgram(ctx context.Context, tc *toolchain.Toolchain, archive, dir string, f toolchain.Format, target string) (*Binaries, error) {
	ar, err := txtar.ParseFile(archive)
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "src")
	for _, file := range ar.Files {
		p := filepath.Join(src, filepath.FromSlash(file.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, file.Data, 0o644); err != nil {
			return nil, err
		}
	}
	b := &Binaries{Format: f.Name}
	var env []string
	if target != "" {
		b.GOOS, b.GOARCH, _ = strings.Cut(target, "/")
		if b.GOARCH == "" {
			b.GOOS, b.GOARCH = "linux", target
		}
		b.Format += "/" + target
		env = []string{"GOOS=" + b.GOOS, "GOARCH=" + b.GOARCH}
	}
	for _, c := range []struct {
		out         *string
		name        string
		twin, stock bool
		ldflags     string
	}{
		{&b.Patched, "patched", false, false, ""},
		{&b.Twin, "twin", true, false, ""},
		{&b.Stock, "stock", false, true, ""},
		{&b.PatchedStripped, "patched.stripped", false, false, "-s -w"},
		{&b.TwinStripped, "twin.stripped", true, false, "-s -w"},
		{&b.StockStripped, "stock.stripped", false, true, "-s -w"},
	} {
		*c.out = filepath.Join(dir, f.Name+"."+c.name)
		o := toolchain.BuildOptions{Dir: src, Package: ".", Out: *c.out, Twin: c.twin, Stock: c.stock, Tags: f.Tags,
			Flags: []string{"-trimpath", "-ldflags=" + c.ldflags}, Env: env}
		if c.stock {
			o.Tags = nil
		}
		if err := tc.GoBuild(ctx, o); err != nil {
			return nil, err
		}
	}
	if err := checkFormat(b.Patched, f.Name); err != nil {
		return nil, err
	}
	return b, nil
}

// checkFormat returns an error if the pclntab of the binary at path is not
// in the format called name: its variant name and its magic (derived
// lengths or a length field).
func checkFormat(path, name string) error {
	variant, derived := formatVariant(name)
	if _, ok := variantTags[variant]; !ok {
		return nil // a format this package does not know: not checked
	}
	f, err := objscan.Open(path)
	if err != nil {
		return err
	}
	if f.Linear == nil || f.Linear.Variant != variant || f.Linear.Derived != derived {
		got := "no linear tables"
		if f.Linear != nil {
			got = fmt.Sprintf("variant %q, derived lengths %v", f.Linear.Variant, f.Linear.Derived)
		}
		return fmt.Errorf("readers: %s, built in format %s, has %s; want variant %q, derived lengths %v", path, name, got, variant, derived)
	}
	return nil
}

// A Result is one check of a reader on the binaries of one format: what
// the released reader and the patched one do with the patched binary,
// against the truth (the same reader on the twin or on the stock build).
type Result struct {
	Reader, Version, Format string
	Check                   string // what was run
	Released                string // what the released reader did on the patched binary
	Patched                 string // what the patched reader did on it
	Broken                  bool   // the released reader's answer differs from the truth
	OK                      bool   // the patched reader's answer is the truth
}

// NoTableFuncs returns the entries of the functions of the binary at path
// that have no line or no file table (pctab offset 0), read with objscan.
func NoTableFuncs(path string) (map[uint64]bool, error) {
	f, err := objscan.Open(path)
	if err != nil {
		return nil, err
	}
	m := map[uint64]bool{}
	for _, fn := range f.Funcs {
		if fn.PCLn == 0 || fn.PCFile == 0 {
			m[fn.Entry] = true
		}
	}
	return m, nil
}

// ProbeStep is the PC sampling step of CheckProbe: every third PC.
const ProbeStep = 3

// CheckProbe compares what the reader's gosym copy, released and patched,
// reads from b's patched binary with what it reads from the twin (see
// [Diff]). OK also requires the patched copy to read the twin as the
// released one does.
func CheckProbe(ctx context.Context, stock, patched *Build, b *Binaries) (*Result, error) {
	r := &Result{Reader: stock.Reader.Name, Version: stock.Reader.Version, Format: b.Format, Check: "decoder probe, every 3rd PC"}
	want, err := ReadProbe(ctx, stock, b.Twin, ProbeStep)
	if err != nil {
		return nil, err
	}
	noTable, err := NoTableFuncs(b.Twin)
	if err != nil {
		return nil, err
	}
	twin, err := ReadProbe(ctx, patched, b.Twin, ProbeStep)
	if err != nil {
		return nil, err
	}
	same, err := Diff(twin, want, noTable)
	if err != nil {
		return nil, err
	}
	got, err := ReadProbe(ctx, patched, b.Patched, ProbeStep)
	if err != nil {
		return nil, err
	}
	c, err := Diff(got, want, noTable)
	if err != nil {
		return nil, err
	}
	bad, err := ReadProbe(ctx, stock, b.Patched, ProbeStep)
	if err != nil {
		return nil, err
	}
	cb, err := Diff(bad, want, noTable)
	if err != nil {
		return nil, err
	}
	r.Released = fmt.Sprintf("%d functions of %d", len(bad.Funcs), len(want.Funcs))
	if bad.Err != "" {
		r.Released += ", error: " + bad.Err
	}
	if cb.Info > 0 {
		n := 0
		for i := range max(len(bad.Info), len(want.Info)) {
			if i >= len(bad.Info) || i >= len(want.Info) || bad.Info[i] != want.Info[i] {
				n++
			}
		}
		r.Released += fmt.Sprintf(", %d report lines, %d of them unlike the twin's", len(bad.Info), n)
		if len(bad.Info) != len(want.Info) {
			r.Released += fmt.Sprintf(" (%d)", len(want.Info))
		}
	}
	r.Patched = fmt.Sprintf("%d functions, %d inlined calls, %d PCs: %d differences", c.Funcs, c.Inlined, c.PCs, c.Differ)
	if c.Info > 0 {
		r.Patched += fmt.Sprintf(", %d report lines", c.Info)
	}
	if c.Deltas > 0 {
		r.Patched += fmt.Sprintf(", %d stack deltas", c.Deltas)
	}
	if c.NoTable > 0 {
		r.Patched += fmt.Sprintf(" (%d PCs of functions without tables skipped)", c.NoTable)
	}
	if same.Differ != 0 {
		r.Patched += fmt.Sprintf("; on the twin %d differences from the released copy", same.Differ)
	}
	if len(c.Diffs) > 0 {
		r.Patched += "; first: " + c.Diffs[0]
	}
	r.Broken = cb.Differ != 0
	r.OK = c.Differ == 0 && same.Differ == 0 && c.Funcs > 0 && (c.PCs > 0 || c.Info > 0)
	return r, nil
}

// CheckGovulncheck runs govulncheck -mode=binary, released and patched,
// with the database db (see [WriteVulnDB]) on b's patched binary; the truth
// is the released govulncheck on the stock build and on the twin.
func CheckGovulncheck(ctx context.Context, stock, patched *Build, b *Binaries, db string) (*Result, error) {
	r := &Result{Reader: stock.Reader.Name, Version: stock.Reader.Version, Format: b.Format, Check: "-mode=binary, symbols found"}
	want, err := Govulncheck(ctx, stock.Bin, db, b.Stock)
	if err != nil {
		return nil, err
	}
	twin, err := Govulncheck(ctx, stock.Bin, db, b.Twin)
	if err != nil {
		return nil, err
	}
	got, err := Govulncheck(ctx, patched.Bin, db, b.Patched)
	if err != nil {
		return nil, err
	}
	bad, err := Govulncheck(ctx, stock.Bin, db, b.Patched)
	if err != nil {
		return nil, err
	}
	r.Released = strings.Join(bad, " ")
	r.Patched = strings.Join(got, " ")
	r.Broken = !slices.Equal(bad, want)
	r.OK = slices.Equal(got, want) && slices.Equal(twin, want) && len(want) > 0
	if !slices.Equal(twin, want) {
		r.Patched += fmt.Sprintf(" (the twin gives %v, the stock build %v)", twin, want)
	}
	return r, nil
}

// delveFuncs are the breakpoints of CheckDelve.
var delveFuncs = []string{"main.worker", "main.bigFunc"}

// DelveStops is the number of times CheckDelve continues and prints the
// stack: enough to reach main.bigFunc after the four workers of the
// features program. Workers that hit their breakpoint together make one
// stop, so the stacks compare as a set.
const DelveStops = 5

// CheckDelve runs dlv exec, released and patched, on b's patched binary
// (stripped or not) with breakpoints on main.worker and main.bigFunc (the
// features program's) and prints the stacks
// at the first DelveStops stops; the truth is the released dlv on the
// stock build. Breakpoints and frames compare by function, file and line.
func CheckDelve(ctx context.Context, stock, patched *Build, b *Binaries, stripped bool) (*Result, error) {
	stockBin, bin, what := b.Stock, b.Patched, "with DWARF"
	if stripped {
		stockBin, bin, what = b.StockStripped, b.PatchedStripped, "stripped"
	}
	r := &Result{Reader: stock.Reader.Name, Version: stock.Reader.Version, Format: b.Format,
		Check: "exec " + what + ": breakpoints, stacks"}
	bad, err := Delve(ctx, stock.Bin, bin, delveFuncs, DelveStops)
	if err != nil {
		return nil, err
	}
	// Delve's stacks of a stripped binary come from frame pointers and
	// memory reads, not the tables, and under load a run now and then
	// stops a stack early (seen on this machine with one CPU for seven
	// processes); a mismatch is run again, the truth too, up to
	// delveAttempts times.
	for attempt := 1; ; attempt++ {
		want, err := Delve(ctx, stock.Bin, stockBin, delveFuncs, DelveStops)
		if err != nil {
			return nil, err
		}
		wantStacks := distinctStacks(want)
		if len(want.Breakpoints) != len(delveFuncs) || len(wantStacks) != len(delveFuncs) {
			return nil, fmt.Errorf("readers: the released dlv on the stock build: %d breakpoints, %d distinct stacks, want %d of each:\n%s",
				len(want.Breakpoints), len(wantStacks), len(delveFuncs), want.Output)
		}
		same := func(s *DelveSession) bool {
			return slices.Equal(s.Breakpoints, want.Breakpoints) && slices.Equal(distinctStacks(s), wantStacks)
		}
		got, err := Delve(ctx, patched.Bin, bin, delveFuncs, DelveStops)
		if err != nil {
			return nil, err
		}
		r.Released, r.Patched = summarize(bad), summarize(got)
		r.Broken, r.OK = !same(bad), same(got)
		if !r.OK {
			r.Patched += fmt.Sprintf("; want %s", summarize(want))
		}
		if attempt > 1 {
			r.Patched += fmt.Sprintf(" (attempt %d)", attempt)
		}
		if r.OK || attempt == delveAttempts {
			return r, nil
		}
	}
}

// delveAttempts bounds CheckDelve's runs of a mismatching check.
const delveAttempts = 3

// distinctStacks returns the distinct stacks of s, each as its frames'
// function, file and line, sorted.
func distinctStacks(s *DelveSession) []string {
	var out []string
	for _, st := range s.Stacks {
		var b strings.Builder
		for _, f := range st {
			fmt.Fprintf(&b, "%s %s:%d; ", f.Func, f.File, f.Line)
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// summarize describes a Delve session in a line: its breakpoints and the
// depth of its stacks, or its first error.
func summarize(s *DelveSession) string {
	for _, line := range strings.Split(s.Output, "\n") {
		if i := strings.Index(line, "location "); i >= 0 && strings.Contains(line, "not found") {
			return strings.TrimSpace(line[i:])
		}
	}
	var bps []string
	for _, b := range s.Breakpoints {
		bps = append(bps, fmt.Sprintf("%s %s:%d", b.Func, filepath.Base(b.File), b.Line))
	}
	var tops []string
	for _, st := range distinctStacks(s) {
		f := strings.Split(strings.TrimSuffix(st, "; "), "; ")
		tops = append(tops, fmt.Sprintf("%s (%d frames)", strings.Fields(f[0])[0], len(f)))
	}
	return fmt.Sprintf("breakpoints %s; stacks at %s", strings.Join(bps, ", "), strings.Join(tops, ", "))
}
