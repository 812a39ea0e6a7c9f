// Package labels indexes the CPU samples of an execution trace by label,
// for a trace store: "the CPU samples of query=q3 in [t0, t1), by
// function".
//
// A sample's label comes from a trampoline history (package trampoline):
// the innermost trampoline frame of the sample's stack names a
// trampoline, and the binding that trampoline held at the sample's time
// names the label, as package trampoline/resolve attributes a trace's
// samples. Labels set with runtime/pprof.Do or SetGoroutineLabels are not
// in execution traces (the tracer records no goroutine labels, and a CPU
// sample in a trace carries a stack, a time, a goroutine, a proc and a
// thread, but not the profiler's label set), so they cannot be indexed
// from a trace; a pprof CPU profile has them but no times.
//
// The index is one file, labels.idx, written next to a store's files:
//
//	header (32 bytes, little-endian): magic "TSL1", CRC-32C (Castagnoli)
//	    of every byte after the header, the trace clock's base time
//	    (int64), and the counts of strings, labels, stacks and samples
//	    (uint32 each)
//	strings: for each, its length (uvarint) and bytes
//	labels:  for each, key and value (string indexes, uvarints) and its
//	    number of samples (uvarint); label 0 is the empty label, of the
//	    samples with none
//	stacks:  for each, its depth and its functions' string indexes,
//	    innermost first (uvarints); trampoline frames are named
//	    resolve.Folded
//	samples: label after label, by time: the time since the label's
//	    previous sample (since the base time for its first), the
//	    goroutine plus one (0 for none) and the stack index (uvarints)
//
// Read checks every count against the bytes that remain before it
// allocates, and every index against its table.
package labels

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/trampoline"
	"github.com/pctab/pctab/trampoline/resolve"
	"golang.org/x/exp/trace"
)

// FileName is the index's file name in a store directory.
const FileName = "labels.idx"

const (
	magic      = "TSL1"
	headerSize = 32
)

// ErrFormat is wrapped by the errors Read returns for an index that is
// truncated, corrupt or inconsistent.
var ErrFormat = errors.New("labels: malformed index")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// A Label is a key and a value.
type Label struct {
	Key, Value string
}

// String returns "key=value".
func (l Label) String() string { return l.Key + "=" + l.Value }

// ParseLabel parses "key=value".
func ParseLabel(s string) (Label, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return Label{}, fmt.Errorf("labels: %q is not key=value", s)
	}
	return Label{k, v}, nil
}

// A Sample is one CPU sample: its time in nanoseconds since the index's
// base time, its goroutine (-1 for none) and its stack (an index into
// Index.Stacks).
type Sample struct {
	Time      int64
	Goroutine int64
	Stack     int
}

// Index is a decoded label index.
type Index struct {
	BaseTime int64
	labels   []Label
	stacks   [][]string
	samples  [][]Sample // by label, sorted by time
	byLabel  map[Label]int
}

// Stats count what Build found.
type Stats struct {
	Samples      int64 `json:"samples"`      // CPU samples in the trace
	Through      int64 `json:"through"`      // through a trampoline frame
	Labelled     int64 `json:"labelled"`     // given a label
	Unattributed int64 `json:"unattributed"` // through a trampoline that held no binding at the time
	// Truncated, if set, says that the trace was cut or turned
	// unreadable, and what was dropped: the index holds the samples of
	// the events the trace reader produced, as a store built from it
	// holds those events (tracestore.EventReader).
	Truncated *tracestore.Truncation `json:"truncated,omitempty"`
}

// Build reads the CPU samples of the execution trace r, labels each from
// the history h, and writes the index to w. Of a cut or unreadable
// trace, it indexes the samples of the events the trace reader produced
// (tracestore.EventReader), as tracestore.Build keeps those events, and
// Stats.Truncated says what it dropped; a trace of which the reader
// produces no event is an error.
// baseTime is the trace clock's
// time that the index's times count from (a store's Manifest.BaseTime).
// It holds every sample in memory; BuildWith bounds them.
func Build(r io.Reader, h trampoline.History, baseTime int64, w io.Writer) (Stats, error) {
	return BuildWith(r, h, baseTime, w, Options{})
}

// Options configure BuildWith.
type Options struct {
	// MemLimit bounds the samples held in memory, in bytes, counting
	// SampleBytes a sample: beyond it they go to a temporary file in
	// TempDir, sorted by label and time, and are merged from it as the
	// index is written (twice: once for its checksum). 0 holds every
	// sample in memory. The index is the same either way.
	MemLimit int64
	// TempDir is the temporary file's directory; "" means os.TempDir.
	TempDir string
}

// SampleBytes is what a sample counts against Options.MemLimit: its
// size in memory, and in the temporary file.
const SampleBytes = 24

// BuildWith is Build with options.
func BuildWith(r io.Reader, h trampoline.History, baseTime int64, w io.Writer, opts Options) (Stats, error) {
	var st Stats
	tr, err := tracestore.NewEventReader(r)
	if err != nil {
		return st, fmt.Errorf("labels: %w", err)
	}
	defer tr.Close()
	bindings := indexHistory(h)
	b := &builder{strIdx: map[string]int{"": 0}, strs: []string{""}, stackIdx: map[string]int{}, labelIdx: map[Label]int{{}: 0}, labels: []Label{{}}, samples: [][]Sample{nil}, opts: opts}
	defer b.close()
	var funcs []string
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, fmt.Errorf("labels: reading the trace after %d samples: %w", st.Samples, err)
		}
		if ev.Kind() != trace.EventStackSample {
			continue
		}
		st.Samples++
		funcs = funcs[:0]
		n := -1
		for f := range ev.Stack().Frames() {
			name := f.Func
			if k := resolve.Number(name); k >= 0 {
				if n < 0 {
					n = k
				}
				name = resolve.Folded
			}
			funcs = append(funcs, name)
		}
		label := 0
		t := int64(ev.Time())
		if n >= 0 {
			st.Through++
			if bd, ok := bindings.at(n, t); ok {
				st.Labelled++
				label = b.label(Label{bd.Key, bd.Value})
			} else {
				st.Unattributed++
			}
		}
		g := int64(-1)
		if id := ev.Goroutine(); id != trace.NoGoroutine {
			g = int64(id)
		}
		b.samples[label] = append(b.samples[label], Sample{Time: t - baseTime, Goroutine: g, Stack: b.stack(funcs)})
		if b.held++; opts.MemLimit > 0 && b.held*SampleBytes > opts.MemLimit {
			if err := b.spill(); err != nil {
				return st, err
			}
		}
	}
	st.Truncated = tr.Truncated()
	return st, b.write(w, baseTime)
}

type builder struct {
	strIdx   map[string]int
	strs     []string
	stackIdx map[string]int
	stacks   [][]int
	labelIdx map[Label]int
	labels   []Label
	samples  [][]Sample

	// Spilling (spill.go).
	opts    Options
	held    int64   // samples in memory
	spilled []int64 // by label, samples in runs
	runs    *os.File
	runW    *bufio.Writer
	bounds  []int64 // run k ends at bounds[k]
}

func (b *builder) str(s string) int {
	if i, ok := b.strIdx[s]; ok {
		return i
	}
	b.strIdx[s] = len(b.strs)
	b.strs = append(b.strs, s)
	return len(b.strs) - 1
}

func (b *builder) label(l Label) int {
	if i, ok := b.labelIdx[l]; ok {
		return i
	}
	b.labelIdx[l] = len(b.labels)
	b.labels = append(b.labels, l)
	b.samples = append(b.samples, nil)
	return len(b.labels) - 1
}

func (b *builder) stack(funcs []string) int {
	key := strings.Join(funcs, "\x00")
	if i, ok := b.stackIdx[key]; ok {
		return i
	}
	ids := make([]int, len(funcs))
	for i, f := range funcs {
		ids[i] = b.str(f)
	}
	b.stackIdx[key] = len(b.stacks)
	b.stacks = append(b.stacks, ids)
	return len(b.stacks) - 1
}

func (b *builder) write(w io.Writer, baseTime int64) error {
	for _, l := range b.labels {
		b.str(l.Key)
		b.str(l.Value)
	}
	var body []byte
	for _, s := range b.strs {
		body = binary.AppendUvarint(body, uint64(len(s)))
		body = append(body, s...)
	}
	if b.runs != nil {
		// Everything to the runs, merged below.
		if err := b.spill(); err != nil {
			return err
		}
	}
	var n int
	for i, l := range b.labels {
		body = binary.AppendUvarint(body, uint64(b.strIdx[l.Key]))
		body = binary.AppendUvarint(body, uint64(b.strIdx[l.Value]))
		c := len(b.samples[i])
		if i < len(b.spilled) {
			c += int(b.spilled[i])
		}
		body = binary.AppendUvarint(body, uint64(c))
		n += c
	}
	for _, st := range b.stacks {
		body = binary.AppendUvarint(body, uint64(len(st)))
		for _, f := range st {
			body = binary.AppendUvarint(body, uint64(f))
		}
	}
	sum := crc32.Checksum(body, castagnoli)
	if b.runs != nil {
		// The samples, merged from the runs: once for the checksum, once
		// to w after the header.
		var err error
		if sum, err = b.mergeRuns(sum, nil); err != nil {
			return err
		}
	} else {
		for _, ss := range b.samples {
			slices.SortStableFunc(ss, func(x, y Sample) int { return cmp.Compare(x.Time, y.Time) })
			var prev int64
			for _, s := range ss {
				body = appendSample(body, s, &prev)
			}
		}
		sum = crc32.Checksum(body, castagnoli)
	}
	var hdr [headerSize]byte
	copy(hdr[:], magic)
	binary.LittleEndian.PutUint32(hdr[4:], sum)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(baseTime))
	for i, c := range []int{len(b.strs), len(b.labels), len(b.stacks), n} {
		if uint64(c) > 1<<32-1 {
			return fmt.Errorf("labels: %d items do not fit the index's 32-bit counts", c)
		}
		binary.LittleEndian.PutUint32(hdr[16+4*i:], uint32(c))
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	if b.runs != nil {
		if _, err := b.mergeRuns(0, w); err != nil {
			return err
		}
	}
	return nil
}

// appendSample appends the index's record of s, the time since prev
// (which it advances), to body.
func appendSample(body []byte, s Sample, prev *int64) []byte {
	t := max(s.Time, *prev) // samples before the base time count from it
	body = binary.AppendUvarint(body, uint64(t-*prev))
	body = binary.AppendUvarint(body, uint64(s.Goroutine+1))
	body = binary.AppendUvarint(body, uint64(s.Stack))
	*prev = t
	return body
}

// history indexes a trampoline history: each trampoline's bindings by
// start.
type history [][]trampoline.Binding

func indexHistory(h trampoline.History) history {
	n := 0
	for _, b := range h.Bindings {
		if b.Trampoline >= 0 && b.Trampoline < trampoline.MaxTrampolines {
			n = max(n, b.Trampoline+1)
		}
	}
	x := make(history, n)
	for _, b := range h.Bindings {
		if b.Trampoline >= 0 && b.Trampoline < n {
			x[b.Trampoline] = append(x[b.Trampoline], b)
		}
	}
	for _, bs := range x {
		slices.SortStableFunc(bs, func(a, b trampoline.Binding) int { return cmp.Compare(a.StartMono, b.StartMono) })
	}
	return x
}

// at returns the binding trampoline n held at time t: the last to start
// at or before t, if it had not ended by t.
func (x history) at(n int, t int64) (trampoline.Binding, bool) {
	if n >= len(x) {
		return trampoline.Binding{}, false
	}
	bs := x[n]
	i := sort.Search(len(bs), func(i int) bool { return bs[i].StartMono > t }) - 1
	if i < 0 || bs[i].EndMono != 0 && t >= bs[i].EndMono {
		return trampoline.Binding{}, false
	}
	return bs[i], true
}

// reader reads the index's body, checking every step.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = fmt.Errorf("%w: %s at offset %#x: bad varint", ErrFormat, what, headerSize+r.off)
		return 0
	}
	r.off += n
	return v
}

// index reads a uvarint that must be below n.
func (r *reader) index(what string, n int) int {
	at := r.off
	v := r.uvarint(what)
	if r.err == nil && v >= uint64(n) {
		r.err = fmt.Errorf("%w: %s at offset %#x: %d, not below %d", ErrFormat, what, headerSize+at, v, n)
		return 0
	}
	return int(v)
}

// fits checks that n items of at least one byte each fit in what remains.
func (r *reader) fits(what string, n uint64) {
	if r.err == nil && n > uint64(len(r.b)-r.off) {
		r.err = fmt.Errorf("%w: %d %s do not fit in the %d bytes left at offset %#x", ErrFormat, n, what, len(r.b)-r.off, headerSize+r.off)
	}
}

// Read decodes an index that Build wrote. Its memory is a small multiple
// of len(data).
func Read(data []byte) (*Index, error) {
	if len(data) < headerSize || string(data[:4]) != magic {
		return nil, fmt.Errorf("%w: no %q header in %d bytes", ErrFormat, magic, len(data))
	}
	body := data[headerSize:]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[4:]); got != want {
		return nil, fmt.Errorf("%w: checksum %#x, the header says %#x", ErrFormat, got, want)
	}
	var counts [4]uint64
	for i := range counts {
		counts[i] = uint64(binary.LittleEndian.Uint32(data[16+4*i:]))
	}
	nStr, nLab, nStk, nSmp := counts[0], counts[1], counts[2], counts[3]
	r := &reader{b: body}
	// Every string, label, stack and sample takes at least one byte.
	r.fits("strings", nStr)
	if r.err != nil {
		return nil, r.err
	}
	x := &Index{BaseTime: int64(binary.LittleEndian.Uint64(data[8:])), byLabel: map[Label]int{}}
	strs := make([]string, 0, nStr)
	for range nStr {
		n := r.uvarint("string length")
		r.fits("string bytes", n)
		if r.err != nil {
			return nil, r.err
		}
		strs = append(strs, string(r.b[r.off:r.off+int(n)]))
		r.off += int(n)
	}
	str := func(what string) string {
		i := r.index(what, len(strs))
		if r.err != nil {
			return ""
		}
		return strs[i]
	}
	r.fits("labels", nLab)
	if r.err != nil {
		return nil, r.err
	}
	counts2 := make([]uint64, 0, nLab)
	var total uint64
	for i := range nLab {
		key := str("label key")
		l := Label{key, str("label value")}
		c := r.uvarint("label samples")
		if r.err != nil {
			return nil, r.err
		}
		if _, dup := x.byLabel[l]; dup || (i == 0) != (l == Label{}) {
			return nil, fmt.Errorf("%w: label %d (%s) twice, or the empty label not first", ErrFormat, i, l)
		}
		if c > nSmp-total {
			return nil, fmt.Errorf("%w: label %d: %d samples past the %d of the header", ErrFormat, i, c, nSmp)
		}
		total += c
		x.byLabel[l] = len(x.labels)
		x.labels = append(x.labels, l)
		counts2 = append(counts2, c)
	}
	if total != nSmp {
		return nil, fmt.Errorf("%w: labels hold %d samples, the header says %d", ErrFormat, total, nSmp)
	}
	if nLab == 0 {
		return nil, fmt.Errorf("%w: no labels (the empty label is always there)", ErrFormat)
	}
	r.fits("stacks", nStk)
	if r.err != nil {
		return nil, r.err
	}
	x.stacks = make([][]string, 0, nStk)
	for range nStk {
		d := r.uvarint("stack depth")
		r.fits("frames", d)
		if r.err != nil {
			return nil, r.err
		}
		st := make([]string, 0, d)
		for range d {
			st = append(st, str("frame"))
		}
		if r.err != nil {
			return nil, r.err
		}
		x.stacks = append(x.stacks, st)
	}
	r.fits("samples", nSmp)
	if r.err != nil {
		return nil, r.err
	}
	x.samples = make([][]Sample, len(x.labels))
	for i, c := range counts2 {
		ss := make([]Sample, 0, c)
		var t int64
		for range c {
			at := r.off
			d := r.uvarint("sample time")
			g := r.uvarint("sample goroutine")
			s := r.index("sample stack", len(x.stacks))
			if r.err != nil {
				return nil, r.err
			}
			if d > 1<<62 || int64(d) > 1<<62-t || g > 1<<62 {
				return nil, fmt.Errorf("%w: sample at offset %#x: time or goroutine out of range", ErrFormat, headerSize+at)
			}
			t += int64(d)
			ss = append(ss, Sample{Time: t, Goroutine: int64(g) - 1, Stack: s})
		}
		x.samples[i] = ss
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%w: %d bytes after the last sample", ErrFormat, len(r.b)-r.off)
	}
	return x, nil
}

// Labels returns the index's labels, the empty one (of unlabelled
// samples) first.
func (x *Index) Labels() []Label { return x.labels }

// Stack returns stack i's functions, innermost first.
func (x *Index) Stack(i int) []string { return x.stacks[i] }

// Samples returns label l's samples in [t0, t1), by time, or nil if the
// index has no such label.
func (x *Index) Samples(l Label, t0, t1 int64) []Sample {
	i, ok := x.byLabel[l]
	if !ok {
		return nil
	}
	ss := x.samples[i]
	lo := sort.Search(len(ss), func(j int) bool { return ss[j].Time >= t0 })
	hi := sort.Search(len(ss), func(j int) bool { return ss[j].Time >= t1 })
	return ss[lo:max(lo, hi)]
}

// A FuncCount is one function's CPU samples: where it was running (Flat)
// and where it was on the stack (Cum).
type FuncCount struct {
	Func string `json:"func"`
	Flat int64  `json:"flat"`
	Cum  int64  `json:"cum"`
}

// ByFunc returns the functions of samples, by Flat, then Cum, then name,
// descending.
func (x *Index) ByFunc(samples []Sample) []FuncCount {
	m := map[string]*FuncCount{}
	get := func(f string) *FuncCount {
		c := m[f]
		if c == nil {
			c = &FuncCount{Func: f}
			m[f] = c
		}
		return c
	}
	seen := map[string]bool{}
	for _, s := range samples {
		st := x.stacks[s.Stack]
		if len(st) > 0 {
			get(st[0]).Flat++
		}
		clear(seen)
		for _, f := range st {
			if !seen[f] {
				seen[f] = true
				get(f).Cum++
			}
		}
	}
	out := make([]FuncCount, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b FuncCount) int {
		return cmp.Or(cmp.Compare(b.Flat, a.Flat), cmp.Compare(b.Cum, a.Cum), cmp.Compare(a.Func, b.Func))
	})
	return out
}
