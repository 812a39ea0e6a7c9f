package tracestore

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
	"github.com/pctab/pctab/stackcompress"
	xtrace "golang.org/x/exp/trace"
)

var (
	smallTraceOnce sync.Once
	smallTraceData []byte
)

// smallTrace records the workload once per test binary.
func smallTrace(t testing.TB) []byte {
	t.Helper()
	smallTraceOnce.Do(func() { smallTraceData = recordTrace(t) })
	if smallTraceData == nil {
		t.Skip("no trace")
	}
	return smallTraceData
}

// copyStore copies the files of store src into a new directory.
func copyStore(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dst, 0o777); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// storeBytes returns the total size of a store's files.
func storeBytes(t testing.TB, dir string) int64 {
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// editManifest rewrites the manifest of dir as edit changes its fields
// (numbers as json.Number).
func editManifest(t testing.TB, dir string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fileManifest))
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileManifest), b, 0o666); err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes content as file name of dir and fixes the manifest's
// size and checksum for it, as a hostile writer could.
func replaceFile(t testing.TB, dir, name string, content []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o666); err != nil {
		t.Fatal(err)
	}
	editManifest(t, dir, func(m map[string]any) {
		for _, f := range m["files"].([]any) {
			f := f.(map[string]any)
			if f["name"] == name {
				f["bytes"] = json.Number(fmt.Sprint(len(content)))
				f["crc32c"] = json.Number(fmt.Sprint(crc(content)))
			}
		}
	})
}

// exercise runs every query of a store that opened, as agg, query and
// serve do.
func exercise(s *Store) {
	d := s.Manifest().Duration
	cells := make([]Cell, 37)
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		s.Query(l, 0, d+1)
		s.Query(l, math.MinInt64, math.MaxInt64)
		s.QueryRow(l, 0, d+1, cells)
		s.QueryRow(l, math.MinInt64, math.MaxInt64, cells)
		for i := range min(ln.Spans, 40) {
			sp := s.Span(l, i)
			s.String(sp.Name)
			s.Stack(uint64(sp.Stack))
		}
	}
	s.Events(0, d+1, func(e *Event) bool { s.Stack(e.Stack); return true })
	s.EventsThrough("runtime/trace.WithRegion", 0, d+1, func(*Event) bool { return true })
}

// openHostile opens a hostile store, which must fail or answer every
// query without panicking, within a small multiple of the store's size in
// allocations; it returns Open's error or Verify's.
func openHostile(t *testing.T, dir string) error {
	t.Helper()
	var err error
	limit := uint64(8*storeBytes(t, dir)) + 1<<20
	if got := allocs.Bytes(func() {
		var s *Store
		s, err = Open(dir)
		if err == nil {
			// Open checks the metadata, queries what they read, Verify
			// the rest.
			exercise(s)
			err = s.Verify()
			s.Close()
		}
	}); got > limit {
		t.Errorf("Open allocated %d bytes for a %d-byte store", got, storeBytes(t, dir))
	}
	return err
}

// TestManifestCountsThatWrap is issue 26's item 1: a manifest whose pages
// or lanes is the real count plus 2^61 passed the size check (24*pages
// and 40*lanes wrapped around to the real sizes), then every reader
// panicked. Every count of the manifest gets the same treatment.
func TestManifestCountsThatWrap(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), base, Options{PageSize: MinPageSize}); err != nil {
		t.Fatal(err)
	}
	fields := []string{"pages", "lanes", "spans", "frames", "strings", "events", "stack_nodes", "duration_ns", "page_size", "trace_bytes", "time_quantum"}
	deltas := []struct {
		name string
		f    func(int64) string
	}{
		{"+2^61", func(v int64) string { return fmt.Sprint(v + 1<<61) }},
		{"+2^62", func(v int64) string { return fmt.Sprint(v + 1<<62) }},
		{"+2^63/3", func(v int64) string { return fmt.Sprint(v + (1<<63)/3) }},
		{"max", func(int64) string { return fmt.Sprint(int64(math.MaxInt64)) }},
		{"-1", func(int64) string { return "-1" }},
		{"min", func(int64) string { return fmt.Sprint(int64(math.MinInt64)) }},
		{"+1", func(v int64) string { return fmt.Sprint(v + 1) }},
	}
	for _, field := range fields {
		for _, d := range deltas {
			t.Run(field+d.name, func(t *testing.T) {
				dir := copyStore(t, base)
				editManifest(t, dir, func(m map[string]any) {
					v, _ := m[field].(json.Number).Int64()
					m[field] = json.Number(d.f(v))
				})
				err := openHostile(t, dir)
				if err == nil && field != "trace_bytes" && !(field == "duration_ns" && d.name == "+1") && !(field == "events" && d.name == "+1") {
					t.Errorf("%s %s: Open succeeded", field, d.name)
				}
			})
		}
	}
	// Every file's size.
	for _, name := range []string{fileLanes, fileLaneIdx, filePages, fileSpans, fileEvents, fileStrings} {
		t.Run("bytes of "+name, func(t *testing.T) {
			dir := copyStore(t, base)
			editManifest(t, dir, func(m map[string]any) {
				for _, f := range m["files"].([]any) {
					f := f.(map[string]any)
					if f["name"] == name {
						v, _ := f["bytes"].(json.Number).Int64()
						f["bytes"] = json.Number(fmt.Sprint(v + 1<<61))
					}
				}
			})
			if err := openHostile(t, dir); err == nil {
				t.Error("Open succeeded")
			}
		})
	}
}

// TestFileCountsThatWrap gives every count in the store files' headers
// and records hostile values, with the manifest's size and checksum fixed
// to match.
func TestFileCountsThatWrap(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), base, Options{PageSize: MinPageSize}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Hostile values for a field of n bytes.
	values := func(n int) []uint64 {
		top := uint64(1) << (8*n - 1)
		all := top | (top - 1)
		vs := []uint64{top, all, all - 14, top >> 1}
		if n >= 4 {
			vs = append(vs, 1<<(8*n-2), top-15)
		}
		return vs
	}
	m, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	w := m.w
	m.Close()
	type field struct {
		file    string
		off     int  // offset of the field in a record
		size    int  // 1 to 8 bytes
		stride  int  // record size; 0 for a header field
		mayOpen bool // some values are valid
	}
	bib, ab := w.blockIndexBytes(), w.aggBytes()
	fields := []field{
		{fileBlocks, 0, w.o, bib, false},          // offset in spans.bin
		{fileBlocks, w.o, w.t, bib, false},        // first start
		{filePages, 0, 8, pageIndexBytes, false},  // first time
		{filePages, 8, 8, pageIndexBytes, false},  // last time
		{filePages, 16, 8, pageIndexBytes, false}, // first event
		{filePages, 24, 8, pageIndexBytes, false}, // offset in events.log
		{fileForest, 0, w.t, ab, false},           // longest
		{fileForest, w.t, w.i, ab, false},         // its index
		{fileForest, w.t + w.i, w.t, ab, false},   // busy
		{fileFrames, 0, 4, 12, false},             // function's string
		{fileFrames, 4, 4, 12, false},             // file's string
		{fileStrings, 0, 4, 0, false},             // string count
		{fileStrings, 4, 4, 4, false},             // string offsets
		{fileLanes, 2, 1, 0, true},                // first lane's depth
		{fileLanes, 3, 1, 0, false},               // its ID
		{fileLanes, 4, 4, 0, false},               // its span count
		{fileLaneIdx, 0, 8, laneIdxBytes, false},  // a group's offset in lanes.tab
		{fileLaneIdx, 8, 8, laneIdxBytes, false},  // its first span
		{fileLaneIdx, 16, 8, laneIdxBytes, false}, // its first block
		{fileLaneIdx, 24, 8, laneIdxBytes, false}, // its first forest value
		{fileLaneIdx, 32, 4, laneIdxBytes, false}, // its records' CRC-32C
	}
	for _, f := range fields {
		good := read(f.file)
		recs := 1
		if f.stride > 0 {
			recs = len(good) / f.stride
		}
		if f.file == fileStrings && f.stride > 0 {
			recs = int(binary.LittleEndian.Uint32(good)) + 1
		}
		if recs == 0 {
			continue // no forest: the small trace's lanes have no whole block
		}
		at, vals := []int{0, recs / 2, recs - 1}, values(f.size)
		if testing.Short() { // under emulation, say
			at, vals = at[2:], vals[:2]
		}
		for _, rec := range at {
			for _, v := range vals {
				t.Run(fmt.Sprintf("%s@%d+%d*%d=%#x", f.file, f.off, rec, f.stride, v), func(t *testing.T) {
					b := bytes.Clone(good)
					o := f.off + rec*f.stride
					putN(b[o:], v, f.size)
					if bytes.Equal(b, good) {
						return
					}
					dir := copyStore(t, base)
					replaceFile(t, dir, f.file, b)
					if err := openHostile(t, dir); err == nil {
						if !f.mayOpen {
							t.Errorf("Open succeeded")
						}
					} else if !strings.Contains(err.Error(), "tracestore") {
						t.Errorf("error without context: %v", err)
					}
				})
			}
		}
	}
}

// FuzzManifest opens a real store under an arbitrary manifest.json: Open
// must reject it or give a store whose every query runs, within a small
// multiple of the store's size in allocations.
func FuzzManifest(f *testing.F) {
	base := filepath.Join(f.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(f)), base, Options{PageSize: MinPageSize}); err != nil {
		f.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join(base, fileManifest))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(man)
	f.Add(bytes.Replace(man, []byte(`"pages": `), []byte(`"pages": 230584300921369`), 1))
	f.Add(bytes.Replace(man, []byte(`"lanes": `), []byte(`"lanes": 230584300921369`), 1))
	f.Add([]byte(`{"schema_version":1,"page_size":1024,"pages":-1}`))
	size := storeBytes(f, base)
	f.Fuzz(func(t *testing.T, m []byte) {
		if err := os.WriteFile(filepath.Join(base, fileManifest), m, 0o666); err != nil {
			t.Fatal(err)
		}
		var s *Store
		if got := allocs.Bytes(func() {
			if s, err = Open(base); err == nil {
				exercise(s)
				s.Close()
			}
		}); got > uint64(8*size)+uint64(4*len(m))+1<<20 {
			t.Fatalf("Open allocated %d bytes for a %d-byte store", got, size)
		}
	})
}

// TestPageHeaderCounts gives the counts of an event-log page's header
// hostile values, with the page's checksum fixed to match: reading the
// page fails, allocating no more than the page's size.
func TestPageHeaderCounts(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), base, Options{PageSize: MinPageSize}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(base, fileEvents))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(base, filePages))
	if err != nil {
		t.Fatal(err)
	}
	end := len(good)
	if len(idx) >= 2*pageIndexBytes {
		end = int(binary.LittleEndian.Uint64(idx[pageIndexBytes+24:]))
	}
	// What a new codec costs on the good page: its DEFLATE reader, and
	// the page's events.
	fixed := allocs.Least(3, func() {
		var c pageCodec
		c.decodePage(nil, good[:end], 0, 0, MinPageSize)
	})
	for _, f := range []struct {
		name string
		off  int
		size int
	}{{"count", 8, 4}, {"record bytes", 12, 4}, {"stored bytes", 16, 4}, {"codec", 20, 4}, {"first event", 24, 8}, {"base time", 32, 8}} {
		for _, v := range []uint64{1<<32 - 1, 1 << 31, 1<<32 - 15, 1 << 63, 1<<64 - 1, 1 << 62, 1, 2} {
			p := bytes.Clone(good[:end])
			putN(p[f.off:], v, f.size)
			binary.LittleEndian.PutUint32(p[4:], crc(p[8:]))
			if bytes.Equal(p, good[:end]) {
				continue
			}
			var evs []Event
			var err error
			got := allocs.Least(3, func() {
				var c pageCodec
				evs, err = c.decodePage(nil, p, 0, 0, MinPageSize)
			})
			if got > fixed+64*MinPageSize {
				t.Errorf("%s = %#x: allocated %d bytes for a %d-byte page", f.name, v, got, MinPageSize)
			}
			switch {
			case err == nil && f.name != "first event" && f.name != "base time" && f.name != "codec":
				// A codec field whose time quantum changed decodes to other
				// times, which the store's page index rejects below.
				t.Errorf("%s = %#x: %d events, no error", f.name, v, len(evs))
			case err == nil && len(evs) > 0 && f.name == "first event" && evs[0].Index != v:
				t.Errorf("%s = %#x: first event %d", f.name, v, evs[0].Index)
			case err != nil && !strings.Contains(err.Error(), "offset"):
				t.Errorf("%s = %#x: error without the offset: %v", f.name, v, err)
			}
			// Through a store, every such page is an error.
			dir := copyStore(t, base)
			all := bytes.Clone(good)
			copy(all, p)
			replaceFile(t, dir, fileEvents, all)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Events(0, s.Manifest().Duration+1, func(*Event) bool { return true }); err == nil {
				t.Errorf("%s = %#x: read the log without error", f.name, v)
			}
			s.Close()
		}
	}
}

// bombPage returns a page of n identical events whose records DEFLATE
// shrinks far more than maxInflation allows, stored with codec deflate
// at DEFLATE's best compression, its header and checksum consistent.
func bombPage(t *testing.T, n int) []byte {
	t.Helper()
	// The first record names the goroutine, proc and thread; every other
	// one is the same two bytes, repeating them.
	e := Event{Kind: xtrace.EventSync, G: 1, P: 2, M: 3}
	st := newRecState(0)
	recs := appendEvent(nil, &e, &st)
	first := len(recs)
	recs = appendEvent(recs, &e, &st)
	recs = append(recs, bytes.Repeat(recs[first:], n-2)...)
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestCompression)
	w.Write(recs)
	w.Close()
	if inflationOK(uint64(len(recs)), uint64(z.Len())) {
		t.Fatalf("%d record bytes compress to %d, within %d×", len(recs), z.Len(), maxInflation)
	}
	p := []byte(pageMagic)
	for _, v := range []uint32{0, uint32(n), uint32(len(recs)), uint32(z.Len()), codecDeflate} {
		p = binary.LittleEndian.AppendUint32(p, v)
	}
	p = binary.LittleEndian.AppendUint64(p, 0)
	p = binary.LittleEndian.AppendUint64(p, 0)
	p = append(p, z.Bytes()...)
	binary.LittleEndian.PutUint32(p[4:], crc(p[8:]))
	return p
}

// TestDeflateBomb: a page of a store of the largest page size whose few
// kilobytes of DEFLATE claim 16 MiB of records and 8M events is refused
// before its buffers are made, allocating no more than a few times its
// own size (it would take some 700 MB).
func TestDeflateBomb(t *testing.T) {
	p := bombPage(t, MaxPageSize/2-2) // the first record is 5 bytes
	var err error
	got := allocs.Least(3, func() {
		var c pageCodec
		_, err = c.decodePage(nil, p, 7, 0x1234, MaxPageSize)
	})
	if err == nil || !strings.Contains(err.Error(), "page 7 (offset 0x1234)") || !strings.Contains(err.Error(), "more than 128×") {
		t.Errorf("decoding a %d-byte page claiming %d events: %v", len(p), MaxPageSize/2-2, err)
	}
	if got > 4*uint64(len(p))+4096 {
		t.Errorf("refusing a %d-byte page allocated %d bytes", len(p), got)
	}
	// The same data through inflate, as a chunk of spanattr.bin reaches it.
	var c pageCodec
	dst := make([]byte, binary.LittleEndian.Uint32(p[12:]))
	if err := c.inflate(dst, p[pageHeader:], codecDeflate); err == nil || !strings.Contains(err.Error(), "more than 128×") {
		t.Errorf("inflate: %v", err)
	}
}

// TestTooCompressiblePage: the writer codes a page of identical events,
// which DEFLATE shrinks past maxInflation, so that the reader accepts
// it and gets the same events back.
func TestTooCompressiblePage(t *testing.T) {
	for _, n := range []int{MinPageSize/2 - 2, PageSize/2 - 2, 1<<20/2 - 2} {
		evs := make([]Event, n)
		for k := range evs {
			evs[k] = Event{Index: 100 + uint64(k), Time: 5 + int64(k)*3, Kind: xtrace.EventSync, G: 1, P: 2, M: 3}
		}
		var e pageEncoder
		p := e.appendPage(nil, evs)
		if n > MinPageSize {
			// DEFLATE alone shrinks these records past the bound, so the
			// page must have been coded with Huffman codes alone.
			var z bytes.Buffer
			w, _ := flate.NewWriter(&z, pageLevel)
			w.Write(e.recs)
			w.Close()
			if inflationOK(uint64(len(e.recs)), uint64(z.Len())) {
				t.Fatalf("%d events: DEFLATE shrinks %d record bytes to %d, within the bound", n, len(e.recs), z.Len())
			}
		}
		raw, stored := binary.LittleEndian.Uint32(p[12:]), binary.LittleEndian.Uint32(p[16:])
		if !inflationOK(uint64(raw), uint64(stored)) || binary.LittleEndian.Uint32(p[20:])&0xff != codecDeflate {
			t.Errorf("%d events: %d record bytes stored in %d (codec %#x)", n, raw, stored, binary.LittleEndian.Uint32(p[20:]))
		}
		var c pageCodec
		got, err := c.decodePage(nil, p, 0, 0, MaxPageSize)
		if err != nil {
			t.Fatalf("%d events: %v", n, err)
		}
		if !slices.Equal(got, evs) {
			t.Errorf("%d events: decoded %d events, not the ones written", n, len(got))
		}
	}
}

// TestDeepStackDAG gives a store a stacks.dag that holds a stack of a
// million frames, a chain of nodes that costs a bit or two each (160 KB
// of file), with the manifest resealed: Stack allocated 48 bytes a frame
// for it, some 300 times the file. The store's DAG reader allows the
// frames a trace's stack can have (maxStackFrames) and fails past them.
func TestDeepStackDAG(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), base, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := stackcompress.NewBuilder(stackcompress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deepID, err := b.Insert(1, make([]uint64, 1<<20)) // frame 0, a million times
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	dir := copyStore(t, base)
	replaceFile(t, dir, fileStacks, buf.Bytes())
	editManifest(t, dir, func(m map[string]any) { m["stack_nodes"] = json.Number(fmt.Sprint(b.Len())) })
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var frames []Frame
	alloc := allocs.Bytes(func() { frames, err = s.Stack(deepID) })
	t.Logf("%d bytes of stacks.dag; Stack: %d frames, %v; %d bytes allocated", buf.Len(), len(frames), err, alloc)
	if err == nil || !strings.Contains(err.Error(), "deeper than") {
		t.Errorf("Stack of a million frames: %d frames, error %v", len(frames), err)
	}
	if alloc > uint64(buf.Len()) {
		t.Errorf("Stack allocated %d bytes for a %d-byte stacks.dag", alloc, buf.Len())
	}
}
