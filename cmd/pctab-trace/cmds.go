package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/tracestore/view"
	"github.com/pctab/pctab/trampoline"
)

// timeFlag parses nanoseconds or a duration.
type timeFlag struct {
	ns  int64
	set bool
}

func (t *timeFlag) String() string { return strconv.FormatInt(t.ns, 10) }

func (t *timeFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return fmt.Errorf("%q is neither nanoseconds nor a duration", s)
		}
		n = int64(d)
	}
	if n < 0 {
		return fmt.Errorf("%q is before the trace's start: times count from its first event", s)
	}
	t.ns, t.set = n, true
	return nil
}

// checkRange checks the time range [from, to) of -from and -to (from
// defaults to 0): given -to, it must be after from. An empty or reversed
// range is a usage error.
func checkRange(from, to timeFlag) error {
	if !to.set || to.ns > from.ns {
		return nil
	}
	what := "reversed"
	if to.ns == from.ns {
		what = "empty"
	}
	return cli.Usagef("-from %d -to %d: the time range [from, to) is %s: want -to after -from (ns or durations since the trace's start)", from.ns, to.ns, what)
}

// defaultTo sets an unset -to to end, the trace's end, and checks that
// -from is before it: a -from past the trace's end is an empty range
// too.
func defaultTo(from timeFlag, to *timeFlag, end int64) error {
	if to.set {
		return nil
	}
	to.ns = end
	if from.ns >= end {
		return cli.Usagef("-from %d: the time range [from, the trace's end) is empty: the trace ends at %d ns", from.ns, end-1)
	}
	return nil
}

// byteSize is a flag of bytes, with an optional unit.
type byteSize int64

func (b *byteSize) String() string {
	for _, u := range byteUnits[:3] {
		if int64(*b)%u.n == 0 && int64(*b) >= u.n {
			return strconv.FormatInt(int64(*b)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(*b), 10)
}

var byteUnits = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}}

func (b *byteSize) Set(s string) error {
	num, mul := s, int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.name) {
			num, mul = strings.TrimSpace(strings.TrimSuffix(s, u.name)), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return fmt.Errorf("%q is not a size in bytes (such as 96MiB)", s)
	}
	*b = byteSize(n * mul)
	return nil
}

// buildCommand is "pctab-trace build": ingest a trace into a store.
var buildCommand = &cli.Command{
	Name:  "build",
	Args:  "[-pagesize N] [-mem SIZE] [-labels HISTORY.json] TRACE STORE",
	Short: "ingest an execution trace into a store directory",
	Long: "Build reads the execution trace TRACE and writes the store, a directory, to\n" +
		"STORE, and prints how the store's size compares with the trace's, part by part.\n" +
		"-mem bounds the memory the builder itself holds: the spans, the lanes'\n" +
		"records and numbers and the function and line indexes' keys spill to\n" +
		"temporary files beyond it, in the store's directory; the distinct stacks\n" +
		"and strings and the live goroutines' state stay in memory, and the trace\n" +
		"reader holds one generation of the trace besides.\n" +
		"With -labels, it also indexes the trace's CPU samples by the trampoline labels\n" +
		"of the history (trampoline.WriteHistory's JSON) into STORE/labels.idx, for\n" +
		"query -label and the viewer, holding half of -mem of samples.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		pageSize := fs.Int("pagesize", tracestore.PageSize, "size of the event log's pages in `bytes` (a power of two), before compression")
		mem := byteSize(tracestore.DefaultMemLimit)
		fs.Var(&mem, "mem", "bound the builder's own memory to `size` (bytes, or with a unit: KiB, MiB, GiB, kB, MB, GB)")
		histPath := fs.String("labels", "", "index CPU samples by the labels of this trampoline history `file`")
		return func(env *cli.Env, args []string) error {
			if len(args) != 2 {
				return cli.Usagef("want TRACE STORE, got %q", args)
			}
			if ps := *pageSize; ps < tracestore.MinPageSize || ps > tracestore.MaxPageSize || ps&(ps-1) != 0 {
				return cli.Usagef("-pagesize=%d: want a power of two from %d to %d", ps, tracestore.MinPageSize, tracestore.MaxPageSize)
			}
			if minMem := byteSize(tracestore.MinMemLimit); mem < minMem {
				return cli.Usagef("-mem=%s: want at least %s", mem.String(), minMem.String())
			}
			var hist *trampoline.History
			if *histPath != "" {
				// Read before the store is built: a bad history leaves
				// nothing behind.
				h, err := readHistory(*histPath)
				if err != nil {
					return err
				}
				hist = &h
			}
			notRegular := fmt.Errorf("%s: build -labels reads the trace twice, so it must be a regular file, not a pipe or device: save it to a file first", args[0])
			if hist != nil {
				// The label index reads the trace a second time. Checked
				// before the open too, which waits for a writer on a
				// named pipe.
				if fi, err := os.Stat(args[0]); err == nil && !fi.Mode().IsRegular() {
					return notRegular
				}
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if hist != nil {
				if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
					return notRegular
				}
			}
			_, statErr := os.Stat(args[1])
			existed := statErr == nil
			start := time.Now()
			// The trace's parts are measured as it is read, so that a
			// pipe (/dev/stdin) is read once.
			pr, pw := io.Pipe()
			type measurement struct {
				ts  tracestore.TraceSize
				err error
			}
			measure := make(chan measurement, 1)
			go func() {
				ts, err := tracestore.MeasureTrace(pr)
				io.Copy(io.Discard, pr) // what it did not read
				measure <- measurement{ts, err}
			}()
			m, err := tracestore.Build(io.TeeReader(f, pw), args[1], tracestore.Options{Source: args[0], PageSize: *pageSize, MemLimit: int64(mem)})
			pw.Close()
			ms := <-measure
			if err != nil {
				return fmt.Errorf("building %s from %s: %w", args[1], args[0], err)
			}
			if hist != nil {
				if err := buildLabels(env, f, *hist, args[1], m.BaseTime, int64(mem)); err != nil {
					// A failed command leaves no store behind, as a
					// failed Build does.
					removeStore(args[1], existed)
					return err
				}
			}
			wall := time.Since(start)
			if m.Truncated != nil {
				fmt.Fprintf(env.Stderr, "pctab-trace: warning: %s: %s\n", args[0], m.Truncated)
			}
			ts, err := ms.ts, ms.err
			measured := true
			if errors.Is(err, tracestore.ErrOldFormat) {
				// A trace of Go 1.21 or older has no batch framing to split.
				ts, measured = tracestore.TraceSize{Total: m.TraceBytes}, false
			} else if err != nil {
				if m.Truncated == nil {
					removeStore(args[1], existed)
					return fmt.Errorf("measuring %s: %w", args[0], err)
				}
				ts.Total = m.TraceBytes // the parts measured are those before the cut
			}
			bytesOf := map[string]int64{}
			var total int64
			for _, s := range m.Files {
				bytesOf[s.Name] = s.Bytes
				total += s.Bytes
			}
			sum := func(names ...string) int64 {
				var n int64
				for _, x := range names {
					n += bytesOf[x]
				}
				return n
			}
			fmt.Fprintf(env.Stdout, "%s: %d events, %d stack nodes, %d lanes, %d spans, %.3fs of trace; built in %v\n", args[0], m.Events, m.Stacks, m.Lanes, m.Spans, float64(m.Duration)/1e9, wall.Round(time.Millisecond))
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "part\ttrace bytes\tstore bytes\tstore files\t")
			row := func(part string, tb int64, files ...string) {
				t := "-"
				if tb >= 0 && measured {
					t = strconv.FormatInt(tb, 10)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t\n", part, t, sum(files...), strings.Join(files, " "))
			}
			row("events", ts.Events+ts.Header+ts.Sync+ts.CPUSamples+ts.Experimental, "events.log", "pages.idx")
			row("stacks", ts.Stacks, "stacks.dag", "frames.tab")
			row("strings", ts.Strings, "strings.tab")
			row("timeline", -1, "lanes.tab", "lanes.idx", "spans.bin", "blocks.idx", "forest.bin", "spanattr.bin", "attr.idx")
			row("zoomed out", -1, "coarse.bin")
			row("indexes", -1, "func.idx", "line.idx")
			fmt.Fprintf(tw, "total\t%d\t%d\t%.2fx the trace\t\n", ts.Total, total, float64(total)/float64(ts.Total))
			return tw.Flush()
		}
	},
}

// readHistory reads the trampoline history at path.
func readHistory(path string) (trampoline.History, error) {
	hf, err := os.Open(path)
	if err != nil {
		return trampoline.History{}, err
	}
	defer hf.Close()
	h, err := trampoline.ReadHistory(hf)
	if err != nil {
		return trampoline.History{}, fmt.Errorf("-labels %s: %w", path, err)
	}
	return h, nil
}

// removeStore removes the store dir that build wrote, leaving the empty
// directory in its place if there was one before.
func removeStore(dir string, existed bool) {
	os.RemoveAll(dir)
	if existed {
		os.Mkdir(dir, 0o777)
	}
}

// buildLabels writes the label index of the trace f into the store dir,
// holding half of mem bytes of samples (the rest spill to a temporary
// file in dir).
func buildLabels(env *cli.Env, f *os.File, h trampoline.History, dir string, base, mem int64) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(dir, labels.FileName))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	st, err := labels.BuildWith(bufio.NewReader(f), h, base, w, labels.Options{MemLimit: mem / 2, TempDir: dir})
	if err == nil {
		err = w.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Listed in the manifest, with its size and checksum, as an
		// optional file: a store without it still opens.
		err = tracestore.AddFile(dir, labels.FileName, true)
	}
	if err != nil {
		os.Remove(out.Name())
		return err
	}
	fmt.Fprintf(env.Stdout, "%s: %d CPU samples, %d through a trampoline, %d labelled, %d unattributed\n", labels.FileName, st.Samples, st.Through, st.Labelled, st.Unattributed)
	return nil
}

// openLabels reads the store's label index, or returns nil if it has none.
func openLabels(dir string) (*labels.Index, error) {
	data, err := os.ReadFile(filepath.Join(dir, labels.FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	x, err := labels.Read(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, labels.FileName), err)
	}
	return x, nil
}

// Schema versions of the -json outputs.
const (
	labelSchemaVersion = 1
	querySchemaVersion = 1
	aggSchemaVersion   = 1
)

// queryResult is query's -json output.
type queryResult struct {
	SchemaVersion int                   `json:"schema_version"`
	Store         string                `json:"store"`
	Func          string                `json:"func,omitempty"`
	Line          string                `json:"line,omitempty"`
	From          int64                 `json:"from_ns"`
	To            int64                 `json:"to_ns"`
	Stats         tracestore.QueryStats `json:"stats"`
	Pages         int                   `json:"store_pages"`
	Kinds         map[string]uint64     `json:"events_by_kind"`
	First         []queryEvent          `json:"first_events"`
	Seconds       float64               `json:"seconds"`
}

type queryEvent struct {
	Time int64  `json:"time_ns"`
	Kind string `json:"kind"`
	G    int64  `json:"goroutine"`
	P    int64  `json:"proc"`
	M    int64  `json:"thread"`
}

// labelResult is query -label's -json output.
type labelResult struct {
	SchemaVersion int                `json:"schema_version"`
	Store         string             `json:"store"`
	Label         string             `json:"label"`
	From          int64              `json:"from_ns"`
	To            int64              `json:"to_ns"`
	Samples       int                `json:"samples"`
	LabelSamples  int                `json:"label_samples"` // of the label in the whole trace
	Funcs         []labels.FuncCount `json:"funcs"`
}

// queryLabel answers query -label.
func queryLabel(env *cli.Env, dir, label string, from, to timeFlag, asJSON bool, show int) error {
	l, err := labels.ParseLabel(label)
	if err != nil {
		return cli.Usagef("-label: %v", err)
	}
	s, err := tracestore.Open(dir)
	if err != nil {
		return err
	}
	end := s.Manifest().Duration + 1
	s.Close()
	if err := defaultTo(from, &to, end); err != nil {
		return err
	}
	x, err := openLabels(dir)
	if err != nil {
		return err
	}
	if x == nil {
		return fmt.Errorf("%s has no %s: build it with pctab-trace build -labels", dir, labels.FileName)
	}
	ss := x.Samples(l, from.ns, to.ns)
	res := labelResult{SchemaVersion: labelSchemaVersion, Store: dir, Label: l.String(), From: from.ns, To: to.ns, Samples: len(ss), LabelSamples: len(x.Samples(l, -1<<63, 1<<63-1)), Funcs: x.ByFunc(ss)}
	if asJSON {
		return jsonschema.Write(env.Stdout, res)
	}
	fmt.Fprintf(env.Stdout, "%s: %d CPU samples in [%d, %d) (%d in the whole trace)\n", res.Label, res.Samples, from.ns, to.ns, res.LabelSamples)
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flat\tflat%\tcum\tcum%\tfunction\t")
	for i, f := range res.Funcs {
		if i == show {
			break
		}
		fmt.Fprintf(tw, "%d\t%.1f%%\t%d\t%.1f%%\t%s\t\n", f.Flat, 100*float64(f.Flat)/float64(max(1, res.Samples)), f.Cum, 100*float64(f.Cum)/float64(max(1, res.Samples)), f.Func)
	}
	return tw.Flush()
}

// queryCommand is "pctab-trace query": events through a function or line.
var queryCommand = &cli.Command{
	Name:  "query",
	Args:  "[-json] [-from T] [-to T] [-show N] (-func F | -line FILE:LINE | -label KEY=VALUE) STORE",
	Short: "events whose stack passes through a function or line",
	Long: "Query prints the events in the time range whose stack passes through the\n" +
		"function F or the line FILE:LINE, using the store's indexes to read only the\n" +
		"pages that hold such events. With -label, it prints the CPU samples of that\n" +
		"trampoline label in the time range by function, from the store's label index\n" +
		"(pctab-trace build -labels).",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		var from, to timeFlag
		fs.Var(&from, "from", "start `t` of the time range (ns or a duration since the trace's start)")
		fs.Var(&to, "to", "end `t` of the time range (default: the trace's end)")
		fn := fs.String("func", "", "function name, as in the trace's stacks")
		line := fs.String("line", "", "FILE:LINE")
		label := fs.String("label", "", "KEY=VALUE: the CPU samples of this label, by function")
		asJSON := fs.Bool("json", false, "print JSON")
		show := fs.Int("show", 10, "print the first `n` events")
		return func(env *cli.Env, args []string) error {
			n := 0
			for _, v := range []string{*fn, *line, *label} {
				if v != "" {
					n++
				}
			}
			if len(args) != 1 || n != 1 {
				return cli.Usagef("want one of -func, -line and -label, and STORE")
			}
			if *show < 0 {
				return cli.Usagef("-show %d: want 0 or more", *show)
			}
			if err := checkRange(from, to); err != nil {
				return err
			}
			if *label != "" {
				return queryLabel(env, args[0], *label, from, to, *asJSON, *show)
			}
			var file string
			var lineNo uint32
			if *line != "" {
				i := strings.LastIndexByte(*line, ':')
				n, err := strconv.ParseUint((*line)[i+1:], 10, 32)
				if i < 0 || err != nil {
					return cli.Usagef("-line %q is not FILE:LINE", *line)
				}
				file, lineNo = (*line)[:i], uint32(n)
			}
			s, err := tracestore.Open(args[0])
			if err != nil {
				return err
			}
			defer s.Close()
			m := s.Manifest()
			if err := defaultTo(from, &to, m.Duration+1); err != nil {
				return err
			}
			res := queryResult{SchemaVersion: querySchemaVersion, Store: args[0], Func: *fn, Line: *line, From: from.ns, To: to.ns, Pages: m.Pages, Kinds: map[string]uint64{}, First: []queryEvent{}}
			visit := func(e *tracestore.Event) bool {
				res.Kinds[e.Kind.String()]++
				if len(res.First) < *show {
					res.First = append(res.First, queryEvent{Time: e.Time, Kind: e.Kind.String(), G: e.G, P: e.P, M: e.M})
				}
				return true
			}
			start := time.Now()
			if *fn != "" {
				res.Stats, err = s.EventsThrough(*fn, from.ns, to.ns, visit)
			} else {
				res.Stats, err = s.EventsAtLine(file, lineNo, from.ns, to.ns, visit)
			}
			res.Seconds = time.Since(start).Seconds()
			if err != nil {
				return err
			}
			if *asJSON {
				return jsonschema.Write(env.Stdout, res)
			}
			what := *fn
			if what == "" {
				what = *line
			}
			fmt.Fprintf(env.Stdout, "%d events through %s in [%d, %d) ns; read %d of %d pages (the index named %d%s), scanned %d events, %.3f ms\n",
				res.Stats.Matched, what, from.ns, to.ns, res.Stats.PagesRead, m.Pages, res.Stats.IndexPages, map[bool]string{true: ", corrupt: every page"}[res.Stats.IndexCorrupt], res.Stats.Scanned, res.Seconds*1e3)
			kinds := make([]string, 0, len(res.Kinds))
			for k := range res.Kinds {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			for _, k := range kinds {
				fmt.Fprintf(env.Stdout, "  %-16s %d\n", k, res.Kinds[k])
			}
			for _, e := range res.First {
				fmt.Fprintf(env.Stdout, "  %12d ns  %-16s g=%d p=%d m=%d\n", e.Time, e.Kind, e.G, e.P, e.M)
			}
			return nil
		}
	},
}

// trackKinds returns the names of the track kinds, -track's values.
func trackKinds() []string {
	return []string{
		tracestore.TrackGoroutine.String(), tracestore.TrackProc.String(),
		tracestore.TrackThread.String(), tracestore.TrackGlobal.String(),
	}
}

// aggResult is agg's -json output.
type aggResult struct {
	SchemaVersion int       `json:"schema_version"`
	Store         string    `json:"store"`
	From          int64     `json:"from_ns"`
	To            int64     `json:"to_ns"`
	Lanes         []laneAgg `json:"lanes"`
}

type laneAgg struct {
	Track       string `json:"track"`
	ID          int64  `json:"id"`
	Layer       string `json:"layer"`
	Depth       int    `json:"depth"`
	Spans       int64  `json:"spans"`
	Busy        int64  `json:"busy_ns"`
	LongestKind string `json:"longest_kind,omitempty"`
	LongestName string `json:"longest_name,omitempty"`
	LongestNs   int64  `json:"longest_ns"`
	LongestAt   int64  `json:"longest_start_ns"`
}

// aggCommand is "pctab-trace agg": per-lane aggregates.
var aggCommand = &cli.Command{
	Name:  "agg",
	Args:  "[-json] [-from T] [-to T] [-track KIND] [-top N] STORE",
	Short: "per-lane span counts, busy time and longest span",
	Long: "Agg prints, for each lane (goroutine, proc or global track) with spans in the\n" +
		"time range, its span count, busy time and longest span, busiest first.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		var from, to timeFlag
		fs.Var(&from, "from", "start `t` of the time range (ns or a duration since the trace's start)")
		fs.Var(&to, "to", "end `t` of the time range (default: the trace's end)")
		track := fs.String("track", "", "only lanes of this track `kind`: "+strings.Join(trackKinds(), ", "))
		top := fs.Int("top", 20, "print the `n` busiest lanes")
		asJSON := fs.Bool("json", false, "print JSON (every lane)")
		return func(env *cli.Env, args []string) error {
			if len(args) != 1 {
				return cli.Usagef("want STORE")
			}
			if *top < 0 {
				return cli.Usagef("-top %d: want 0 or more lanes", *top)
			}
			if *track != "" && !slices.Contains(trackKinds(), *track) {
				return cli.Usagef("-track %q: want one of %s", *track, strings.Join(trackKinds(), ", "))
			}
			if err := checkRange(from, to); err != nil {
				return err
			}
			s, err := tracestore.Open(args[0])
			if err != nil {
				return err
			}
			defer s.Close()
			if err := defaultTo(from, &to, s.Manifest().Duration+1); err != nil {
				return err
			}
			res, err := aggregate(s, args[0], *track, from.ns, to.ns)
			if err != nil {
				return err
			}
			if *asJSON {
				return jsonschema.Write(env.Stdout, res)
			}
			lanes := append([]laneAgg(nil), res.Lanes...)
			sort.SliceStable(lanes, func(i, j int) bool { return lanes[i].Busy > lanes[j].Busy })
			fmt.Fprintf(env.Stdout, "%d lanes with spans in [%d, %d) ns; the %d busiest:\n", len(lanes), from.ns, to.ns, min(*top, len(lanes)))
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "track\tid\tlayer\tdepth\tspans\tbusy ms\tlongest\tms\tat ms")
			for _, la := range lanes[:min(*top, len(lanes))] {
				name := la.LongestKind
				if la.LongestName != "" {
					name += " " + strconv.Quote(la.LongestName)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.3f\t%s\t%.3f\t%.3f\n", la.Track, la.ID, la.Layer, la.Depth, la.Spans, float64(la.Busy)/1e6, name, float64(la.LongestNs)/1e6, float64(la.LongestAt)/1e6)
			}
			return tw.Flush()
		}
	},
}

// aggregate computes agg's lanes of store s (at dir) in [t0, t1), of the
// track kind track if it is not "". The store's lazy checks answer a
// corrupt lane as if it had no spans and a span whose chunk of
// attributes is corrupt with kind NoSpan, and its forests' inner nodes
// are read unchecked: aggregate checks forest.bin against its checksum
// first and fails on a lane or span found corrupt, saying where, so that
// agg never prints a wrong answer for a corrupt store.
func aggregate(s *tracestore.Store, dir, track string, t0, t1 int64) (aggResult, error) {
	res := aggResult{SchemaVersion: aggSchemaVersion, Store: dir, From: t0, To: t1, Lanes: []laneAgg{}}
	if _, err := s.File("forest.bin"); err != nil {
		return res, err
	}
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		if err := s.LaneError(l); err != nil {
			return res, fmt.Errorf("lane %d: %w", l, err)
		}
		if track != "" && ln.Track.String() != track {
			continue
		}
		a := s.Query(l, t0, t1)
		if err := s.LaneError(l); err != nil {
			return res, fmt.Errorf("lane %d (%s %d %s %d): %w", l, ln.Track, ln.ID, ln.Layer, ln.Depth, err)
		}
		if a.Count == 0 {
			continue
		}
		la := laneAgg{Track: ln.Track.String(), ID: ln.ID, Layer: ln.Layer.String(), Depth: ln.Depth, Spans: a.Count, Busy: a.Busy, LongestNs: -1}
		if a.Longest >= 0 {
			sp := s.Span(l, a.Longest)
			if sp.Kind == tracestore.NoSpan {
				// Its chunk of spanattr.bin is corrupt: Verify says where.
				err := s.Verify()
				if err == nil {
					err = errors.New("its kind and name are unreadable")
				}
				return res, fmt.Errorf("lane %d (%s %d %s %d), span %d: %w", l, ln.Track, ln.ID, ln.Layer, ln.Depth, a.Longest, err)
			}
			la.LongestKind, la.LongestName, la.LongestNs, la.LongestAt = sp.Kind.String(), s.String(sp.Name), sp.Dur, sp.Start
		}
		res.Lanes = append(res.Lanes, la)
	}
	return res, nil
}

// serveCommand is "pctab-trace serve": the timeline viewer.
var serveCommand = &cli.Command{
	Name:  "serve",
	Args:  "[-addr HOST:PORT] [-allowhost LIST] STORE",
	Short: "serve the zoomable timeline viewer",
	Long: "Serve serves the store's zoomable timeline viewer (package tracestore/view) over\n" +
		"HTTP until it is stopped.",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		addr := fs.String("addr", "localhost:8080", "address to listen on (port 0 picks a free one)")
		allow := fs.String("allowhost", "", "comma-separated host names the Host header may name besides loopback ones and -addr's host (\"*\": any)")
		return func(env *cli.Env, args []string) error {
			if len(args) != 1 {
				return cli.Usagef("want STORE")
			}
			s, err := tracestore.Open(args[0])
			if err != nil {
				return err
			}
			defer s.Close()
			ln, err := net.Listen("tcp", *addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "serving %s at http://%s/\n", args[0], ln.Addr())
			x, err := openLabels(args[0])
			if err != nil {
				return err
			}
			opts := view.Options{Hosts: allowedHosts(*addr, ln.Addr().String(), *allow), Labels: x}
			return view.NewServer(view.NewHandler(s, opts)).Serve(ln)
		}
	},
}

// allowedHosts returns the Host names serve allows besides loopback ones:
// the listen address's host as given (-addr) and as bound, and -allowhost's.
func allowedHosts(addr, bound, allow string) []string {
	var hosts []string
	for _, a := range []string{bound, addr} {
		// Not an unspecified address (every interface): no client
		// names it.
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				hosts = append(hosts, h)
			}
		}
	}
	for _, h := range strings.Split(allow, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
