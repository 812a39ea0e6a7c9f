package tracestore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/pctab/pctab/diskmap"
	"github.com/pctab/pctab/stackcompress"
	"golang.org/x/exp/trace"
)

// Manifest describes a store: what manifest.json holds.
type Manifest struct {
	SchemaVersion int    `json:"schema_version"`
	Source        string `json:"source"`      // the trace's file name, for reports
	TraceBytes    int64  `json:"trace_bytes"` // size of the trace read
	// BaseTime is the trace clock's time of the first event; every time
	// in the store is nanoseconds since it.
	BaseTime int64  `json:"base_time"`
	Duration int64  `json:"duration_ns"` // last event's time
	Events   uint64 `json:"events"`
	Pages    int    `json:"pages"`
	PageSize int    `json:"page_size"`
	Stacks   uint64 `json:"stack_nodes"` // DAG nodes
	Frames   int    `json:"frames"`
	Strings  int    `json:"strings"`
	Lanes    int    `json:"lanes"`
	Spans    int64  `json:"spans"`
	// TimeQuantum is the unit spans.bin stores durations in (with a
	// remainder where they are not whole), a power of two from 1 to
	// MaxTimeQuantum.
	TimeQuantum int64     `json:"time_quantum"`
	Files       []FileSum `json:"files"`
	// Truncated, if set, says that the trace ended early or turned
	// unreadable, and what the store lacks.
	Truncated *Truncation `json:"truncated,omitempty"`
}

// A FileSum is the size and CRC-32C of one file of a store.
//
// The manifest may list files beyond those Open reads (a later writer's
// extra indexes): Open ignores the names it does not know, and File reads
// any listed file, checked against its size and CRC-32C. A file marked
// Optional may be absent or fail its check without the store failing to
// open: its reader falls back to what the other files give.
type FileSum struct {
	Name     string `json:"name"`
	Bytes    int64  `json:"bytes"`
	CRC32    uint32 `json:"crc32c"`
	Optional bool   `json:"optional,omitempty"`
}

// Options configure Build.
type Options struct {
	// Source names the trace in the manifest.
	Source string
	// PageSize is the size of the event log's pages (the record bytes a
	// page holds before compression), a power of two from MinPageSize to
	// MaxPageSize; 0 means PageSize.
	PageSize int
	// MemLimit bounds the memory Build itself holds, in bytes: the spans
	// it gathers into lanes, the lanes' records and numbers and the keys
	// of the function and line indexes spill to temporary files in the
	// store's directory beyond it. 0 means DefaultMemLimit. It does not
	// bound the trace reader's own memory (a generation of the trace),
	// nor the distinct stacks and strings: see the package comment.
	MemLimit int64

	stats *buildStats // if set, what the build spilled (for tests)
	// probe, if set, is called every probeEvents events and at the
	// steps of the build's end (tests measure the heap there).
	probe func()
}

// probeEvents is how often Options.probe is called while the trace is
// read.
const probeEvents = 1 << 16

// buildStats counts what a build spilled to temporary files.
type buildStats struct {
	funcRuns, lineRuns int // sorted runs of func.idx's and line.idx's keys
	laneRuns           int // sorted runs of lane records (1: sorted in memory)
	spanGroups         int // groups the spans were gathered in
	// laneIDPages counts the pages of lane numbers read from their file
	// (-1: the numbers were held in memory).
	laneIDPages int64
}

// DefaultMemLimit is Options.MemLimit's default.
const DefaultMemLimit = 96 << 20

// MinMemLimit is the smallest Options.MemLimit.
const MinMemLimit = 4 << 20

// Build reads an execution trace from r and writes its store into dir,
// which must not exist or be an empty directory. It returns the store's
// manifest.
//
// Build writes the store into a temporary directory next to dir and
// renames it to dir only once it is complete and opens: a failed Build
// leaves no store at dir, and its error says why.
//
// A trace that ends early or turns unreadable part way (cut off, as a
// trace copied while it was written is, or corrupt) still gives a store:
// of every event the trace reader produced before it failed (the reader
// produces a generation's events only once it has read the whole
// generation). The manifest's Truncated field then says where the reader
// stopped and what was dropped. A trace with no readable event is an
// error.
func Build(r io.Reader, dir string, opts Options) (m *Manifest, err error) {
	ps := opts.PageSize
	if ps == 0 {
		ps = PageSize
	}
	if ps < MinPageSize || ps > MaxPageSize || ps&(ps-1) != 0 {
		return nil, fmt.Errorf("tracestore: page size %d is not a power of two in [%d, %d]", ps, MinPageSize, MaxPageSize)
	}
	if err := checkTarget(dir); err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o777); err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if opts.MemLimit == 0 {
		opts.MemLimit = DefaultMemLimit
	}
	if opts.MemLimit < MinMemLimit {
		return nil, fmt.Errorf("tracestore: memory limit %d is below %d bytes", opts.MemLimit, int64(MinMemLimit))
	}
	if m, err = buildInto(r, tmp, ps, opts); err != nil {
		return nil, err
	}
	// The store must pass Open's checks before it takes dir's place. The
	// builder's memory is garbage by now: collected first, the check
	// reuses it.
	debug.FreeOSMemory()
	if err := check(tmp); err != nil {
		return nil, fmt.Errorf("tracestore: the store built does not open: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	// os.Rename does not replace a directory: remove dir if it is there,
	// which fails unless it is still empty.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	return m, nil
}

// checkTarget checks that dir does not exist or is an empty directory.
func checkTarget(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("tracestore: %s is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("tracestore: %s is not empty", dir)
	}
	return nil
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		// FlushFileBuffers refuses a directory handle (Access is
		// denied), and there is no other way to sync one: NTFS journals
		// the directory's entries itself.
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("tracestore: syncing %s: %w", dir, err)
	}
	return nil
}

// A Truncation says what Build dropped of a trace that ended early or
// turned unreadable.
type Truncation struct {
	// Error is the trace reader's error.
	Error string `json:"error"`
	// AtByte is how many bytes the reader had consumed when it failed
	// (it reads ahead, so the fault may lie before: Framing says where,
	// when the trace's framing breaks).
	AtByte int64 `json:"at_byte"`
	// EventsKept is the number of events the reader produced and the
	// store holds. Generations is how many whole generations they span;
	// PartialEvents, how many of them are of the generation the reader
	// failed in after it had produced them, after its Sync (a generation
	// corrupt part way, or the last one of a trace of Go 1.22-1.25 cut
	// off): 0 when it failed between generations.
	EventsKept    uint64 `json:"events_kept"`
	Generations   int    `json:"generations"`
	PartialEvents uint64 `json:"partial_events"`
	// BytesKept is where the last generation kept, whole or in part,
	// ends in the trace (from its batch framing); BytesDropped the
	// trace's bytes after it.
	BytesKept    int64 `json:"bytes_kept"`
	BytesDropped int64 `json:"bytes_dropped"`
	// Framing, if set, is where the trace's batch framing breaks, and
	// how: a batch cut off, a byte that starts no batch, a second trace's
	// header.
	Framing string `json:"framing,omitempty"`
}

// String says where the trace was cut and what was kept and dropped.
func (t *Truncation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the trace is cut or unreadable: the reader failed after reading %d bytes: %s", t.AtByte, t.Error)
	if t.Framing != "" {
		fmt.Fprintf(&b, "; its batch framing breaks at %s", t.Framing)
	}
	fmt.Fprintf(&b, "; kept its first %d events (%d whole generation%s", t.EventsKept, t.Generations, plural(t.Generations))
	if t.PartialEvents > 0 {
		fmt.Fprintf(&b, " and the first %d events of generation %d, which the reader produced before it failed in it", t.PartialEvents, t.Generations+1)
	}
	fmt.Fprintf(&b, ", %d bytes), dropped its last %d bytes", t.BytesKept, t.BytesDropped)
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// buildInto writes the store into the empty directory dir.
func buildInto(r io.Reader, dir string, ps int, opts Options) (m *Manifest, err error) {
	b, err := newBuilder(dir, ps, opts.MemLimit)
	if err != nil {
		return nil, err
	}
	defer b.cleanup()
	b.stats, b.probe = opts.stats, opts.probe
	er, err := NewEventReader(r)
	if err != nil {
		return nil, err
	}
	defer er.Close()
	if err := b.addAll(er); err != nil {
		return nil, err
	}
	if er.Generations() == 0 {
		return nil, fmt.Errorf("tracestore: the trace has no events (%d bytes)", er.BytesRead())
	}
	m, err = b.finish()
	if err != nil {
		return nil, err
	}
	m.Source, m.TraceBytes, m.Truncated = opts.Source, er.BytesRead(), er.Truncated()
	if err := writeManifest(dir, m); err != nil {
		return nil, err
	}
	// The coarse levels, in what the rest of the store leaves of the
	// trace's size (see coarseBudget).
	var rest int64
	for _, f := range m.Files {
		rest += f.Bytes
	}
	debug.FreeOSMemory()
	if _, err := writeCoarse(dir, coarseBudget(m.TraceBytes, rest+manifestReserve)); err != nil {
		return nil, err
	}
	sum, err := sumFile(filepath.Join(dir, fileCoarse))
	if err != nil {
		return nil, err
	}
	sum.Name = fileCoarse
	m.Files = append(m.Files, sum)
	if err := writeManifest(dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

// addAll adds the events of er. An event the builder cannot take (a
// malformed trace's) ends the trace before it, as the reader's own errors
// do (EventReader.Cut); an error writing the store ends the build.
func (b *builder) addAll(er *EventReader) error {
	for {
		ev, err := er.ReadEvent()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = b.addChecked(&ev)
		if b.probe != nil && b.events%probeEvents == 0 {
			b.probe()
		}
		if errors.Is(err, errWrite) {
			return err
		}
		if err != nil {
			er.Cut(err)
		}
	}
}

// manifestReserve is what coarseBudget reckons the manifest takes.
const manifestReserve = 4 << 10

// errWrite marks errors writing the store, which end a build, unlike
// errors reading the trace.
var errWrite = errors.New("tracestore: writing the store")

func newTraceReader(r io.Reader) (tr *trace.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("trace reader panicked: %v", p)
		}
		err = shortReaderError(err)
	}()
	return trace.NewReader(r)
}

// readEvent reads an event; x/exp/trace can panic on malformed input.
func readEvent(tr *trace.Reader) (ev trace.Event, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("trace reader panicked: %v", p)
		}
		err = shortReaderError(err)
	}()
	return tr.ReadEvent()
}

// maxReaderError bounds the message of an error of x/exp/trace's that
// errors and warnings repeat.
const maxReaderError = 512

// A readerError is an error of x/exp/trace's whose message is cut to its
// first line and maxReaderError bytes: some ("broken trace: failed to
// advance") carry a dump of the reader's state, a line per goroutine,
// which made a warning of 800 KB and 20,000 lines of a trace of 30,000
// goroutines with two bytes changed, and a manifest as large.
type readerError struct {
	err error
	msg string
}

func (e *readerError) Error() string { return e.msg }
func (e *readerError) Unwrap() error { return e.err }

// A cutError is an error of x/exp/trace's that wraps io.EOF, of a trace
// that ends inside a batch's header ("error reading batch gen: EOF"): the
// trace is cut there, which is not its end, so it wraps
// io.ErrUnexpectedEOF instead. Taken for the end, it made a trace cut
// there read as whole.
type cutError struct{ err error }

func (e *cutError) Error() string { return e.err.Error() }
func (e *cutError) Unwrap() error { return io.ErrUnexpectedEOF }

// shortReaderError returns err, an error of x/exp/trace's, its message
// cut if it is long, as a cutError if it wraps io.EOF but is not io.EOF
// itself, the reader's end.
func shortReaderError(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if errors.Is(err, io.EOF) {
		err = &cutError{err}
	}
	msg := err.Error()
	first, rest, _ := strings.Cut(msg, "\n")
	if rest == "" && len(first) <= maxReaderError {
		return err
	}
	if len(first) > maxReaderError {
		first = strings.ToValidUTF8(first[:maxReaderError], "")
	}
	first = strings.TrimRight(first, " :")
	return &readerError{err, fmt.Sprintf("%s (x/exp/trace's message cut from %d bytes and %d lines)", first, len(msg), strings.Count(msg, "\n")+1)}
}

// addChecked adds ev, turning a panic of x/exp/trace's accessors on a
// malformed event into an error.
func (b *builder) addChecked(ev *trace.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("trace event %d: the trace reader panicked: %v", b.events, p)
		}
	}()
	return b.add(ev)
}

type countingReader struct {
	r    io.Reader
	n    int64
	head []byte // the first 16 bytes read: the trace's header
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if len(c.head) < 16 {
		c.head = append(c.head, p[:min(n, 16-len(c.head))]...)
	}
	return n, err
}

// rowKey identifies a set of rows of one layer of one track.
type rowKey struct {
	track TrackKind
	id    int64
	layer Layer
}

// openSpan is a span that has begun.
type openSpan struct {
	span  Span
	depth int
	name  string // range name, to match an end
}

type stackInfo struct {
	id   uint64
	keys []uint32 // hashes of the function names and file:lines, distinct
	line []uint32
}

type builder struct {
	dir    string
	mem    int64 // Options.MemLimit
	stats  *buildStats
	probe  func()
	events uint64
	base   int64 // trace time of the first event
	last   int64
	haveT  bool
	// genStart is the time of the current generation's start. A
	// goroutine's or proc's first event in a generation, a transition from
	// an undetermined state, says what state it has been in since then.
	genStart int64

	// event log
	evFile   *os.File
	evW      *bufio.Writer
	page     []byte
	pageN    uint32
	pageT    int64 // base time of the current page
	rec      recState
	pageIdxF *os.File      // pages.idx
	pageIdxW *bufio.Writer // its records, written as pages are
	pageFrst uint64
	pageLast int64
	pages    int
	pageOff  int64   // bytes of events.log written
	pageEvs  []Event // the page's events
	pageEnc  pageEncoder
	pageOut  []byte

	// names and stacks
	strings  map[string]uint32
	strList  []string
	frames   map[[3]uint32]uint64
	frameTab []byte
	dag      *stackcompress.Builder
	stacks   map[trace.Stack]*stackInfo // this generation's stacks
	frameBuf []uint64

	funcIdx, lineIdx *diskmap.Builder

	// timeline
	// live holds the lanes of the rows in rows, by lane number; a
	// retired goroutine's lanes go to laneTmp (see spillLane).
	live     map[int32]*laneState
	numLanes int64                           // lanes numbered so far
	rows     map[rowKey]*rowSet              // each layer's rows
	gState   map[int64]*openSpan             // goroutine -> current state span
	pState   map[int64]*openSpan             // proc -> running span
	ranges   map[rowKey]map[string]*openSpan // track -> open ranges by name
	regions  map[int64]*regionStack          // goroutine -> open regions
	tasks    map[trace.TaskID]*openSpan
	// retired holds the goroutines that exited, whose row state is
	// dropped (see retire); droppedSpans counts the spans a malformed
	// trace gave them later.
	retired      idSet
	droppedSpans int64
	laneTmp      *os.File
	laneW        *bufio.Writer
	lanesOut     int64 // lane records in laneTmp
	spanTmp      *os.File
	spanW        *bufio.Writer
	spanRec      [4 + spanBytes]byte
	numSpans     int64
	// durSample is the first spans' durations, from which quantum
	// picks q, the store's time quantum.
	durSample []int64
	q         int64
}

// newBuilder returns a builder of a store in dir, of the given page size,
// that holds about mem bytes (Options.MemLimit).
func newBuilder(dir string, pageSize int, mem int64) (*builder, error) {
	dag, err := stackcompress.NewBuilder(stackcompress.Options{})
	if err != nil {
		return nil, err
	}
	b := &builder{
		dir:     dir,
		mem:     mem,
		page:    make([]byte, 0, pageSize),
		strings: map[string]uint32{"": 0},
		strList: []string{""},
		frames:  map[[3]uint32]uint64{},
		dag:     dag,
		stacks:  map[trace.Stack]*stackInfo{},
		// Each index holds an eighth of the limit before it spills.
		funcIdx: diskmap.NewSpillBuilder(dir, max(mem/8, minIndexBytes)),
		lineIdx: diskmap.NewSpillBuilder(dir, max(mem/8, minIndexBytes)),
		rows:    map[rowKey]*rowSet{},
		gState:  map[int64]*openSpan{},
		pState:  map[int64]*openSpan{},
		ranges:  map[rowKey]map[string]*openSpan{},
		regions: map[int64]*regionStack{},
		tasks:   map[trace.TaskID]*openSpan{},
		retired: idSet{},
		live:    map[int32]*laneState{},
	}
	if b.evFile, err = os.Create(filepath.Join(dir, fileEvents)); err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	b.evW = bufio.NewWriterSize(b.evFile, ioBuffer)
	if b.pageIdxF, err = os.Create(filepath.Join(dir, filePages)); err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	b.pageIdxW = bufio.NewWriterSize(b.pageIdxF, 16<<10)
	if b.spanTmp, err = os.CreateTemp(dir, "spans-*.tmp"); err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	b.spanW = bufio.NewWriterSize(b.spanTmp, ioBuffer)
	if b.laneTmp, err = os.CreateTemp(dir, "lanes-*.tmp"); err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	b.laneW = bufio.NewWriterSize(b.laneTmp, 16<<10)
	return b, nil
}

func (b *builder) cleanup() {
	for _, f := range []*os.File{b.evFile, b.pageIdxF} {
		if f != nil {
			f.Close()
		}
	}
	for _, x := range []*diskmap.Builder{b.funcIdx, b.lineIdx} {
		if x != nil {
			x.Close()
		}
	}
	for _, f := range []*os.File{b.spanTmp, b.laneTmp} {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
}

func (b *builder) str(s string) uint32 {
	if id, ok := b.strings[s]; ok {
		return id
	}
	id := uint32(len(b.strList))
	b.strings[s] = id
	b.strList = append(b.strList, s)
	return id
}

// stack returns the DAG id and index keys of s, interning its frames.
func (b *builder) stack(s trace.Stack, g int64) (*stackInfo, error) {
	if s == trace.NoStack {
		return nil, nil
	}
	if si, ok := b.stacks[s]; ok {
		return si, nil
	}
	si := &stackInfo{}
	b.frameBuf = b.frameBuf[:0]
	seen := map[uint32]bool{}
	for f := range s.Frames() {
		fn, file := b.str(f.Func), b.str(f.File)
		key := [3]uint32{fn, file, uint32(f.Line)}
		id, ok := b.frames[key]
		if !ok {
			id = uint64(len(b.frames))
			b.frames[key] = id
			b.frameTab = binary.LittleEndian.AppendUint32(b.frameTab, fn)
			b.frameTab = binary.LittleEndian.AppendUint32(b.frameTab, file)
			b.frameTab = binary.LittleEndian.AppendUint32(b.frameTab, uint32(f.Line))
		}
		b.frameBuf = append(b.frameBuf, id)
		if h := diskmap.Hash([]byte(f.Func)); !seen[h] {
			seen[h] = true
			si.keys = append(si.keys, h)
		}
		si.line = append(si.line, diskmap.Hash([]byte(lineKey(f.File, f.Line))))
	}
	if len(b.frameBuf) > maxStackFrames {
		return nil, fmt.Errorf("trace event %d: a stack of %d frames, more than %d", b.events, len(b.frameBuf), maxStackFrames)
	}
	if len(b.frameBuf) > 0 {
		id, err := b.dag.Insert(uint64(g+1), b.frameBuf)
		if err != nil {
			return nil, fmt.Errorf("tracestore: stack DAG: %w", err)
		}
		si.id = id
	}
	b.stacks[s] = si
	return si, nil
}

func lineKey(file string, line uint64) string {
	return file + ":" + strconv.FormatUint(line, 10)
}

func (b *builder) add(ev *trace.Event) error {
	t := int64(ev.Time())
	if !b.haveT {
		b.base, b.haveT = t, true
	}
	// Times are kept in [0, maxTime) from the first event, so no span's
	// arithmetic can overflow, and a span's start and duration leave two
	// bits free (putSpan).
	if d := t - b.base; (t < b.base) != (d < 0) || d >= maxTime {
		return fmt.Errorf("trace event %d: time %d is %d ns or more after the first event's, %d", b.events, t, int64(maxTime), b.base)
	} else {
		t = d
	}
	if t < b.last {
		t = b.last // the reader orders events; keep the log monotone regardless
	}
	b.last = t
	if ev.Kind() == trace.EventSync {
		clear(b.stacks) // stack handles are per generation
		b.genStart = t
	}
	e := Event{Index: b.events, Time: t, Kind: ev.Kind(), G: int64(ev.Goroutine()), P: int64(ev.Proc()), M: int64(ev.Thread())}
	st := ev.Stack()
	if ev.Kind() == trace.EventStateTransition && st == trace.NoStack {
		st = ev.StateTransition().Stack
	}
	si, err := b.stack(st, e.G)
	if err != nil {
		return err
	}
	if si != nil {
		e.Stack = si.id
	}
	if err := b.timeline(ev, &e); err != nil {
		return err
	}
	if err := b.appendEvent(&e); err != nil {
		return err
	}
	if si != nil {
		for _, h := range si.keys {
			b.funcIdx.AddHash(h, uint32(b.pages))
		}
		for _, h := range si.line {
			b.lineIdx.AddHash(h, uint32(b.pages))
		}
	}
	b.events++
	return nil
}

// appendEvent adds e to the current page, starting a new page when it is
// full. b.pages is then the page that holds e.
func (b *builder) appendEvent(e *Event) error {
	var rec [maxEventBytes]byte
	if b.pageN == 0 {
		b.rec = newRecState(e.Time)
	}
	st := b.rec
	r := appendEvent(rec[:0], e, &st)
	if len(b.page)+len(r) > cap(b.page) {
		if err := b.flushPage(); err != nil {
			return err
		}
		b.rec = newRecState(e.Time)
		st = b.rec
		r = appendEvent(rec[:0], e, &st)
	}
	if b.pageN == 0 {
		b.pageT, b.pageFrst = e.Time, e.Index
	}
	b.rec = st
	b.page = append(b.page, r...)
	b.pageEvs = append(b.pageEvs, *e)
	b.pageN++
	b.pageLast = e.Time
	return nil
}

func (b *builder) flushPage() error {
	if b.pageN == 0 {
		return nil
	}
	b.pageOut = b.pageEnc.appendPage(b.pageOut[:0], b.pageEvs)
	if _, err := b.evW.Write(b.pageOut); err != nil {
		return fmt.Errorf("%w: %s: %w", errWrite, fileEvents, err)
	}
	var rec [pageIndexBytes]byte
	binary.LittleEndian.PutUint64(rec[0:], uint64(b.pageT))
	binary.LittleEndian.PutUint64(rec[8:], uint64(b.pageLast))
	binary.LittleEndian.PutUint64(rec[16:], b.pageFrst)
	binary.LittleEndian.PutUint64(rec[24:], uint64(b.pageOff))
	if _, err := b.pageIdxW.Write(rec[:]); err != nil {
		return fmt.Errorf("%w: %s: %w", errWrite, filePages, err)
	}
	b.pageOff += int64(len(b.pageOut))
	b.pages++
	b.pageN = 0
	b.page = b.page[:0]
	b.pageEvs = b.pageEvs[:0]
	return nil
}

// minIndexBytes is the least memory each index may hold before it spills
// (tests lower it).
var minIndexBytes int64 = 256 << 10

// ioBuffer is the size of the builder's file buffers.
const ioBuffer = 64 << 10
