package tracestore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/pctab/pctab/diskmap"
	"github.com/pctab/pctab/forest"
	"github.com/pctab/pctab/stackcompress"
)

// A Store is an open trace store. Its query methods are safe for
// concurrent use, except Close.
type Store struct {
	dir      string
	m        Manifest
	strings  []string
	frames   []Frame
	lanes    []Lane
	forests  []*forest.Forest[Agg]
	pageIdx  []byte
	spans    []byte
	events   *os.File
	dag      *stackcompress.Reader
	funcIdx  *diskmap.Map
	lineIdx  *diskmap.Map
	closers  []func() error
	dagMu    chanMutex
	pageSize int64
}

// chanMutex is a mutex that stackcompress's reader needs around it (the
// reader keeps an LRU of pages).
type chanMutex chan struct{}

func (m chanMutex) lock()   { m <- struct{}{} }
func (m chanMutex) unlock() { <-m }

// Open opens the store in dir and checks it (see the package comment).
func Open(dir string) (*Store, error) {
	s := &Store{dir: dir, dagMu: make(chanMutex, 1), pageSize: PageSize}
	if err := s.open(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

func (s *Store) open() error {
	data, err := os.ReadFile(s.path(fileManifest))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if err := json.Unmarshal(data, &s.m); err != nil {
		return fmt.Errorf("tracestore: %s: %w", fileManifest, err)
	}
	if s.m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("tracestore: %s: schema_version %d, this reader knows %d", fileManifest, s.m.SchemaVersion, SchemaVersion)
	}
	if ps := s.m.PageSize; ps < MinPageSize || ps > MaxPageSize || ps&(ps-1) != 0 {
		return fmt.Errorf("tracestore: %s: page_size %d is not a power of two in [%d, %d]", fileManifest, ps, MinPageSize, MaxPageSize)
	}
	if s.m.Pages < 0 || s.m.Spans < 0 || s.m.Lanes < 0 {
		return fmt.Errorf("tracestore: %s: negative counts", fileManifest)
	}
	s.pageSize = int64(s.m.PageSize)
	sums := map[string]FileSum{}
	for _, f := range s.m.Files {
		sums[f.Name] = f
	}
	// read returns a file's bytes after checking its size and checksum.
	read := func(name string) ([]byte, error) {
		want, ok := sums[name]
		if !ok {
			return nil, fmt.Errorf("tracestore: %s lists no %s", fileManifest, name)
		}
		b, err := mapFile(s.path(name), &s.closers)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) != want.Bytes {
			return nil, fmt.Errorf("tracestore: %s: %d bytes, the manifest says %d", name, len(b), want.Bytes)
		}
		if crc(b) != want.CRC32 {
			return nil, fmt.Errorf("tracestore: %s: checksum mismatch", name)
		}
		return b, nil
	}
	strTab, err := read(fileStrings)
	if err != nil {
		return err
	}
	if s.strings, err = decodeStrings(strTab); err != nil {
		return err
	}
	ft, err := read(fileFrames)
	if err != nil {
		return err
	}
	if len(ft)%12 != 0 {
		return fmt.Errorf("tracestore: %s: %d bytes, not a multiple of 12", fileFrames, len(ft))
	}
	for o := 0; o < len(ft); o += 12 {
		fn, file := binary.LittleEndian.Uint32(ft[o:]), binary.LittleEndian.Uint32(ft[o+4:])
		if int(fn) >= len(s.strings) || int(file) >= len(s.strings) {
			return fmt.Errorf("tracestore: %s: frame %d (offset %#x): string index out of range", fileFrames, o/12, o)
		}
		s.frames = append(s.frames, Frame{Func: s.strings[fn], File: s.strings[file], Line: binary.LittleEndian.Uint32(ft[o+8:])})
	}
	if s.pageIdx, err = read(filePages); err != nil {
		return err
	}
	if len(s.pageIdx) != 24*s.m.Pages {
		return fmt.Errorf("tracestore: %s: %d bytes for %d pages", filePages, len(s.pageIdx), s.m.Pages)
	}
	if s.spans, err = read(fileSpans); err != nil {
		return err
	}
	if int64(len(s.spans)) != s.m.Spans*spanBytes {
		return fmt.Errorf("tracestore: %s: %d bytes for %d spans", fileSpans, len(s.spans), s.m.Spans)
	}
	fb, err := read(fileForest)
	if err != nil {
		return err
	}
	if len(fb)%aggBytes != 0 {
		return fmt.Errorf("tracestore: %s: %d bytes, not a multiple of %d", fileForest, len(fb), aggBytes)
	}
	vals := make([]Agg, len(fb)/aggBytes)
	for i := range vals {
		vals[i] = getAgg(fb[i*aggBytes:])
	}
	lt, err := read(fileLanes)
	if err != nil {
		return err
	}
	if len(lt) != laneBytes*s.m.Lanes {
		return fmt.Errorf("tracestore: %s: %d bytes for %d lanes", fileLanes, len(lt), s.m.Lanes)
	}
	var spanOff, forestOff int64
	for i := range s.m.Lanes {
		l := getLane(lt[i*laneBytes:])
		if l.spanOff != spanOff || l.forestOff != forestOff || l.Spans < 0 || l.Spans > s.m.Spans-spanOff {
			return fmt.Errorf("tracestore: %s: lane %d (offset %#x): spans [%d, +%d) do not follow the previous lane's", fileLanes, i, i*laneBytes, l.spanOff, l.Spans)
		}
		nv := forestValues(l.Spans)
		if forestOff+nv > int64(len(vals)) {
			return fmt.Errorf("tracestore: %s: lane %d: forest past the end of %s", fileLanes, i, fileForest)
		}
		f, err := forest.FromValues(vals[forestOff:forestOff+nv:forestOff+nv], combine, noAgg)
		if err != nil {
			return fmt.Errorf("tracestore: lane %d: %w", i, err)
		}
		spanOff += l.Spans
		forestOff += nv
		s.lanes = append(s.lanes, l)
		s.forests = append(s.forests, f)
	}
	if spanOff != s.m.Spans || forestOff != int64(len(vals)) {
		return fmt.Errorf("tracestore: %s: lanes hold %d spans and %d forest values, the files %d and %d", fileLanes, spanOff, forestOff, s.m.Spans, len(vals))
	}
	// The event log is read page by page, each checked by its own sum;
	// its size is checked here.
	if s.events, err = os.Open(s.path(fileEvents)); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	s.closers = append(s.closers, s.events.Close)
	if st, err := s.events.Stat(); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	} else if st.Size() != int64(s.m.Pages)*s.pageSize {
		return fmt.Errorf("tracestore: %s: %d bytes for %d pages", fileEvents, st.Size(), s.m.Pages)
	}
	if s.dag, err = stackcompress.Open(s.path(fileStacks), stackcompress.ReaderOptions{}); err != nil {
		return fmt.Errorf("tracestore: %s: %w", fileStacks, err)
	}
	s.closers = append(s.closers, s.dag.Close)
	for _, ix := range []struct {
		name string
		m    **diskmap.Map
	}{{fileFuncIdx, &s.funcIdx}, {fileLineIdx, &s.lineIdx}} {
		m, err := diskmap.Open(s.path(ix.name))
		if err != nil {
			return fmt.Errorf("tracestore: %w", err)
		}
		*ix.m = m
		s.closers = append(s.closers, m.Close)
	}
	return nil
}

func decodeStrings(b []byte) ([]string, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("tracestore: %s: truncated header", fileStrings)
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if 4+4*(n+1) > uint64(len(b)) {
		return nil, fmt.Errorf("tracestore: %s: %d strings do not fit in %d bytes", fileStrings, n, len(b))
	}
	data := b[4+4*(n+1):]
	out := make([]string, n)
	prev := uint32(0)
	for i := range n {
		lo, hi := binary.LittleEndian.Uint32(b[4+4*i:]), binary.LittleEndian.Uint32(b[8+4*i:])
		if lo != prev || hi < lo || uint64(hi) > uint64(len(data)) {
			return nil, fmt.Errorf("tracestore: %s: string %d (offset %#x): bounds [%d, %d) out of order or past %d bytes", fileStrings, i, 4+4*i, lo, hi, len(data))
		}
		out[i] = string(data[lo:hi])
		prev = hi
	}
	return out, nil
}

// Close releases the store's files.
func (s *Store) Close() error {
	var first error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	s.closers = nil
	return first
}

// Manifest returns the store's manifest.
func (s *Store) Manifest() Manifest { return s.m }

// Lanes returns the store's lanes, sorted by track, ID, layer and depth.
func (s *Store) Lanes() []Lane { return s.lanes }

// String returns string i of the store's table, or "" if there is none.
func (s *Store) String(i uint32) string {
	if int(i) < len(s.strings) {
		return s.strings[i]
	}
	return ""
}

// Span returns span i of lane l. It panics if either is out of range.
func (s *Store) Span(l int, i int64) Span {
	ln := &s.lanes[l]
	if i < 0 || i >= ln.Spans {
		panic(fmt.Sprintf("tracestore: span %d of a lane of %d", i, ln.Spans))
	}
	return getSpan(s.spans[(ln.spanOff+i)*spanBytes:])
}

// Stack returns the frames of stack id, innermost first.
func (s *Store) Stack(id uint64) ([]Frame, error) {
	if id == 0 {
		return nil, nil
	}
	s.dagMu.lock()
	ids, err := s.dag.Stack(id, nil)
	s.dagMu.unlock()
	if err != nil {
		return nil, fmt.Errorf("tracestore: stack %d: %w", id, err)
	}
	out := make([]Frame, len(ids))
	for i, f := range ids {
		if f >= uint64(len(s.frames)) {
			return nil, fmt.Errorf("tracestore: stack %d: frame %d out of range", id, f)
		}
		out[i] = s.frames[f]
	}
	return out, nil
}

// A LaneAgg aggregates the spans of a lane that overlap a time range.
type LaneAgg struct {
	Count   int64 // spans that overlap the range
	Busy    int64 // nanoseconds of the range they cover
	Longest int64 // index of the longest of them (by whole duration), -1 if none
	First   int64 // index of the first of them
}

// Query aggregates the spans of lane l that overlap [t0, t1), from the
// lane's forest: O(log N) for N spans, plus at most 2*BlockSpans spans
// read at the ends.
func (s *Store) Query(l int, t0, t1 int64) LaneAgg {
	ln := &s.lanes[l]
	n := ln.Spans
	if n == 0 || t1 <= t0 {
		return LaneAgg{Longest: -1}
	}
	span := func(i int64) Span { return getSpan(s.spans[(ln.spanOff+i)*spanBytes:]) }
	j := int64(sort.Search(int(n), func(i int) bool { return span(int64(i)).Start >= t0 }))
	i0 := j
	if j > 0 && span(j-1).End() > t0 {
		i0 = j - 1
	}
	i1 := int64(sort.Search(int(n), func(i int) bool { return span(int64(i)).Start >= t1 }))
	if i0 >= i1 {
		return LaneAgg{Longest: -1, First: i0}
	}
	item := func(i int64) Agg { sp := span(i); return Agg{Longest: sp.Dur, Index: i, Busy: sp.Dur} }
	a := noAgg
	firstWhole := (i0 + BlockSpans - 1) / BlockSpans
	lastWhole := i1 / BlockSpans
	if firstWhole >= lastWhole {
		for i := i0; i < i1; i++ {
			a = combine(a, item(i))
		}
	} else {
		for i := i0; i < firstWhole*BlockSpans; i++ {
			a = combine(a, item(i))
		}
		a = combine(a, s.forests[l].Query(int(firstWhole), int(lastWhole)))
		for i := lastWhole * BlockSpans; i < i1; i++ {
			a = combine(a, item(i))
		}
	}
	busy := a.Busy
	if f := span(i0); f.Start < t0 {
		busy -= t0 - f.Start
	}
	if e := span(i1 - 1).End(); e > t1 {
		busy -= e - t1
	}
	longest := a.Index
	if longest < i0 || longest >= i1 {
		longest = -1 // a corrupt forest
	}
	return LaneAgg{Count: i1 - i0, Busy: max(0, busy), Longest: longest, First: i0}
}
