package tracestore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// Page returns the events of page i of the log, checked against the
// page's checksum.
func (s *Store) Page(i int) (Page, error) {
	var r pageReader
	evs, err := r.read(s, i)
	return Page{Index: i, Events: evs}, err
}

// A pageReader reads pages into buffers it reuses.
type pageReader struct {
	buf   []byte
	evs   []Event
	codec pageCodec
}

// read returns the events of page i; they alias the reader's buffer until
// the next read.
func (r *pageReader) read(s *Store, i int) ([]Event, error) {
	if i < 0 || i >= s.m.Pages {
		return nil, fmt.Errorf("tracestore: page %d of %d", i, s.m.Pages)
	}
	off, end := s.pageBounds(i)
	if int64(cap(r.buf)) < end-off {
		r.buf = make([]byte, end-off)
	}
	r.buf = r.buf[:end-off]
	if _, err := s.events.ReadAt(r.buf, off); err != nil {
		return nil, fmt.Errorf("tracestore: reading %s page %d (offset %#x): %w", fileEvents, i, off, err)
	}
	var err error
	r.evs, err = r.codec.decodePage(r.evs[:0], r.buf, i, off, int(s.pageSize))
	if err != nil {
		return r.evs, err
	}
	// The page's events must be those pages.idx says, in time order: a
	// page rewritten with its checksum fixed cannot move events in time.
	first, last := s.pageTimes(i)
	idx := binary.LittleEndian.Uint64(s.pageIdx[pageIndexBytes*i+16:])
	evs := r.evs
	if len(evs) == 0 || evs[0].Index != idx || evs[0].Time != first || evs[len(evs)-1].Time != last {
		return evs, fmt.Errorf("tracestore: %s: page %d (offset %#x): its events do not match %s", fileEvents, i, off, filePages)
	}
	for k := 1; k < len(evs); k++ {
		if evs[k].Time < evs[k-1].Time {
			return evs, fmt.Errorf("tracestore: %s: page %d (offset %#x): event %d goes back in time", fileEvents, i, off, k)
		}
	}
	return evs, nil
}

// pageBounds returns where page i begins and ends in events.log (Open
// checked that pages follow each other and fit).
func (s *Store) pageBounds(i int) (off, end int64) {
	off = int64(binary.LittleEndian.Uint64(s.pageIdx[pageIndexBytes*i+24:]))
	end = s.eventsBytes
	if i+1 < s.m.Pages {
		end = int64(binary.LittleEndian.Uint64(s.pageIdx[pageIndexBytes*(i+1)+24:]))
	}
	return off, end
}

// pageTimes returns the first and last event time of page i.
func (s *Store) pageTimes(i int) (first, last int64) {
	b := s.pageIdx[pageIndexBytes*i:]
	return int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
}

// PagesIn returns the pages that may hold events in [t0, t1).
func (s *Store) PagesIn(t0, t1 int64) (lo, hi int) {
	lo = sort.Search(s.m.Pages, func(i int) bool { _, last := s.pageTimes(i); return last >= t0 })
	hi = sort.Search(s.m.Pages, func(i int) bool { first, _ := s.pageTimes(i); return first >= t1 })
	return lo, max(lo, hi)
}

// Events calls visit for every event in [t0, t1), in order, reading every
// page that may hold one. It stops early if visit returns false. The
// event visit gets is valid only during the call.
func (s *Store) Events(t0, t1 int64, visit func(*Event) bool) error {
	lo, hi := s.PagesIn(t0, t1)
	var r pageReader
	for i := lo; i < hi; i++ {
		evs, err := r.read(s, i)
		if err != nil {
			return err
		}
		for k := range evs {
			e := &evs[k]
			if e.Time >= t0 && e.Time < t1 && !visit(e) {
				return nil
			}
		}
	}
	return nil
}

// QueryStats describes the work of an indexed query.
type QueryStats struct {
	IndexPages   int    `json:"index_pages"`   // pages the index named (all of them if it was corrupt)
	IndexCorrupt bool   `json:"index_corrupt"` // the index answered "every page"
	PagesRead    int    `json:"pages_read"`    // of those, the pages in the time range, read and re-checked
	Scanned      uint64 `json:"events_scanned"`
	Matched      uint64 `json:"events_matched"`
}

// EventsThrough calls visit for every event in [t0, t1) whose stack has a
// frame of function fn, in order. It reads only the pages the function
// index names, and re-checks every event on them against its stack, so
// the index's false positives cost time, never a wrong answer. The event
// visit gets is valid only during the call.
func (s *Store) EventsThrough(fn string, t0, t1 int64, visit func(*Event) bool) (QueryStats, error) {
	return s.through(s.funcIdx, fn, func(f Frame) bool { return f.Func == fn }, t0, t1, visit)
}

// EventsAtLine is EventsThrough for a source line: events whose stack has
// a frame at file:line, through the file:line index.
func (s *Store) EventsAtLine(file string, line uint32, t0, t1 int64, visit func(*Event) bool) (QueryStats, error) {
	return s.through(s.lineIdx, lineKey(file, uint64(line)), func(f Frame) bool { return f.File == file && f.Line == line }, t0, t1, visit)
}

func (s *Store) through(idx interface {
	Lookup([]byte) ([]uint32, bool)
}, key string, match func(Frame) bool, t0, t1 int64, visit func(*Event) bool) (QueryStats, error) {
	var st QueryStats
	pages, all := idx.Lookup([]byte(key))
	lo, hi := s.PagesIn(t0, t1)
	if all {
		st.IndexCorrupt = true
		st.IndexPages = s.m.Pages
		pages = pages[:0]
		for i := lo; i < hi; i++ {
			pages = append(pages, uint32(i))
		}
	} else {
		st.IndexPages = len(pages)
	}
	a := sort.Search(len(pages), func(i int) bool { return int(pages[i]) >= lo })
	b := sort.Search(len(pages), func(i int) bool { return int(pages[i]) >= hi })
	through := map[uint64]bool{}
	var r pageReader
	for _, p := range pages[a:b] {
		evs, err := r.read(s, int(p))
		if err != nil {
			return st, err
		}
		st.PagesRead++
		for k := range evs {
			e := &evs[k]
			if e.Time < t0 || e.Time >= t1 || e.Stack == 0 {
				continue
			}
			st.Scanned++
			ok, seen := through[e.Stack]
			if !seen {
				frames, err := s.Stack(e.Stack)
				if err != nil {
					return st, err
				}
				ok = slices.ContainsFunc(frames, match)
				through[e.Stack] = ok
			}
			if ok {
				st.Matched++
				if !visit(e) {
					return st, nil
				}
			}
		}
	}
	return st, nil
}
