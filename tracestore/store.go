package tracestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pctab/pctab/diskmap"
	"github.com/pctab/pctab/internal/gallop"
	"github.com/pctab/pctab/stackcompress"
)

// A Store is an open trace store. Its query methods are safe for
// concurrent use, except Close.
type Store struct {
	dir      string
	m        Manifest
	strings  []string
	frames   []Frame
	pageIdx  []byte
	spans    []byte // blocks of spans
	blockIdx []byte // per block: offset in spans, first start
	forest   []byte // every lane's forest over its whole blocks
	events   *os.File
	dag      *stackcompress.Reader
	funcIdx  *diskmap.Map
	lineIdx  *diskmap.Map
	closers  []func() error
	dagMu    chanMutex
	fileMu   sync.Mutex // File's appends to closers
	pageSize int64
	sums     map[string]FileSum
	laneTab  []byte // lanes.tab, mapped
	laneIdx  []byte // lanes.idx, mapped
	// nblocks and nvals are the records of blocks.idx and forest.bin.
	nblocks, nvals int64
	// laneCache holds groups of lanes decoded and checked, in sets of
	// laneCacheWays by group number modulo laneCacheSets (see lane);
	// laneVictim picks the way a group decoded replaces.
	laneCache  [laneCacheSets][laneCacheWays]atomic.Pointer[laneRecs]
	laneVictim atomic.Uint32
	// checkOnly is set for check: Open's checks without the per-lane
	// state a query needs.
	checkOnly bool
	// eventsBytes is the size of events.log.
	eventsBytes int64
	w           widths
	// spanattr.bin and attr.idx, and the stacks of the chunk of
	// spanattr.bin last decoded (chunk stackChunk-1).
	attrs, attrIdx []byte
	stackMu        sync.Mutex
	stackChunk     int64
	stacks         []uint32
	stackCodec     pageCodec
	// The lazy checks (see lazy.go): which blocks were checked, the
	// lanes found corrupt (how many, and why), and the chunks of kinds
	// and names decoded.
	checked []atomic.Uint64
	nbad    atomic.Int64
	badErr  sync.Map // lane -> error
	// coarse is coarse.bin's directory, nil without one.
	coarse *coarseFile
	kinds  attrCache
}

// chanMutex is a mutex that stackcompress's reader needs around it (the
// reader keeps an LRU of pages).
type chanMutex chan struct{}

func (m chanMutex) lock()   { m <- struct{}{} }
func (m chanMutex) unlock() { <-m }

// Open opens the store in dir. It reads and checks the store's metadata
// (the manifest, the string, frame and page tables, and every count
// against its file's size), in time and memory that grow with the pages,
// strings and frames, never with the spans or the lanes; the lanes'
// records, the timeline's blocks, forests and attributes are checked when
// first read (see the package comment and Verify).
func Open(dir string) (*Store, error) { return open(dir, false) }

// check makes every check of the store in dir that Open and Verify make,
// keeping nothing per lane or per span: Build's last step, in memory that
// grows neither with the spans nor with the lanes (Verify drops the pages
// it has read as it goes).
func check(dir string) error {
	s, err := open(dir, true)
	if err != nil {
		return err
	}
	err = s.Verify()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

func open(dir string, checkOnly bool) (*Store, error) {
	s := &Store{dir: dir, dagMu: make(chanMutex, 1), pageSize: PageSize, checkOnly: checkOnly}
	var err error
	if gerr := s.Guard(func() { err = s.open() }); gerr != nil {
		err = gerr
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

// mapped returns a file's bytes after checking its size (its checksum is
// Verify's).
func (s *Store) mapped(name string) ([]byte, error) {
	want, ok := s.sums[name]
	if !ok {
		return nil, fmt.Errorf("tracestore: %s lists no %s", fileManifest, name)
	}
	return mapFile(s.path(name), want.Bytes, &s.closers)
}

// read returns a file's bytes after checking its size and checksum.
func (s *Store) read(name string) ([]byte, error) {
	b, err := s.mapped(name)
	if err != nil {
		return nil, err
	}
	if crc(b) != s.sums[name].CRC32 {
		return nil, fmt.Errorf("tracestore: %s: checksum mismatch", name)
	}
	return b, nil
}

// checkOthers checks that each file the manifest lists but Build does not
// write (another writer's, added by AddFile) is there with its listed size,
// unless it is optional. Their contents are their readers' to check.
func (s *Store) checkOthers() error {
	for _, f := range s.m.Files {
		if storeFile(f.Name) || f.Optional {
			continue
		}
		fi, err := os.Stat(s.path(f.Name))
		if err != nil {
			return fmt.Errorf("tracestore: %s lists %s: %w", fileManifest, f.Name, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() != f.Bytes {
			return fmt.Errorf("tracestore: %s: %d bytes (file type %v), %s says %d", f.Name, fi.Size(), fi.Mode().Type(), fileManifest, f.Bytes)
		}
	}
	return nil
}

func (s *Store) open() error {
	data, err := os.ReadFile(s.path(fileManifest))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if err := decodeManifest(data, &s.m); err != nil {
		return err
	}
	if s.m.SchemaVersion < oldestSchemaVersion {
		return fmt.Errorf("tracestore: %s: schema_version %d, this reader knows %d to %d: rebuild the store from its trace (pctab-trace build)", fileManifest, s.m.SchemaVersion, oldestSchemaVersion, SchemaVersion)
	}
	if s.m.SchemaVersion > SchemaVersion {
		return fmt.Errorf("tracestore: %s: schema_version %d, this reader knows %d to %d", fileManifest, s.m.SchemaVersion, oldestSchemaVersion, SchemaVersion)
	}
	if ps := s.m.PageSize; ps < MinPageSize || ps > MaxPageSize || ps&(ps-1) != 0 {
		return fmt.Errorf("tracestore: %s: page_size %d is not a power of two in [%d, %d]", fileManifest, ps, MinPageSize, MaxPageSize)
	}
	if err := s.m.checkCounts(); err != nil {
		return err
	}
	s.pageSize = int64(s.m.PageSize)
	s.sums = map[string]FileSum{}
	for _, f := range s.m.Files {
		s.sums[f.Name] = f
	}
	if err := s.checkOthers(); err != nil {
		return err
	}
	strTab, err := s.read(fileStrings)
	if err != nil {
		return err
	}
	if s.strings, err = decodeStrings(strTab); err != nil {
		return err
	}
	if int64(len(s.strings)) != int64(s.m.Strings) {
		return fmt.Errorf("tracestore: %s: %d strings, %s says %d", fileStrings, len(s.strings), fileManifest, s.m.Strings)
	}
	ft, err := s.read(fileFrames)
	if err != nil {
		return err
	}
	if len(ft)%12 != 0 || int64(len(ft)/12) != int64(s.m.Frames) {
		return fmt.Errorf("tracestore: %s: %d bytes for %d frames of 12", fileFrames, len(ft), s.m.Frames)
	}
	s.frames = make([]Frame, 0, len(ft)/12)
	for o := 0; o < len(ft); o += 12 {
		fn, file := binary.LittleEndian.Uint32(ft[o:]), binary.LittleEndian.Uint32(ft[o+4:])
		if int64(fn) >= int64(len(s.strings)) || int64(file) >= int64(len(s.strings)) {
			return fmt.Errorf("tracestore: %s: frame %d (offset %#x): string index out of range", fileFrames, o/12, o)
		}
		s.frames = append(s.frames, Frame{Func: s.strings[fn], File: s.strings[file], Line: binary.LittleEndian.Uint32(ft[o+8:])})
	}
	if s.pageIdx, err = s.read(filePages); err != nil {
		return err
	}
	// Every count is compared with what its file can hold by division,
	// never by a product that could wrap around.
	if int64(len(s.pageIdx))%pageIndexBytes != 0 || int64(len(s.pageIdx))/pageIndexBytes != int64(s.m.Pages) {
		return fmt.Errorf("tracestore: %s: %d bytes for %d pages of %d", filePages, len(s.pageIdx), s.m.Pages, pageIndexBytes)
	}
	// PagesIn binary-searches the pages' time ranges, and page reads
	// number events from each page's first index: both must be in order.
	// Pages follow each other from the start of events.log to its end,
	// each a header and at most a page of records (stored raw when
	// compressing does not make them smaller).
	s.eventsBytes = s.sums[fileEvents].Bytes
	prevLast, prevIdx := int64(-1<<63), int64(-1)
	for i := range s.m.Pages {
		first, last := s.pageTimes(i)
		idx := int64(binary.LittleEndian.Uint64(s.pageIdx[pageIndexBytes*i+16:]))
		if first < 0 || first > last || last > s.m.Duration || first < prevLast || idx <= prevIdx || uint64(idx) >= s.m.Events {
			return fmt.Errorf("tracestore: %s: page %d (offset %#x): times [%d, %d], first event %d out of order after [.., %d], event %d, or not in the %d ns and %d events of %s", filePages, i, pageIndexBytes*i, first, last, idx, prevLast, prevIdx, s.m.Duration, s.m.Events, fileManifest)
		}
		off := binary.LittleEndian.Uint64(s.pageIdx[pageIndexBytes*i+24:])
		end := uint64(s.eventsBytes)
		if i+1 < s.m.Pages {
			end = binary.LittleEndian.Uint64(s.pageIdx[pageIndexBytes*(i+1)+24:])
		}
		if i == 0 && off != 0 || off > end || end > uint64(s.eventsBytes) || end-off < pageHeader || end-off > pageHeader+uint64(s.pageSize) {
			return fmt.Errorf("tracestore: %s: page %d (offset %#x): bytes [%d, %d) of %s's %d out of order or not one page", filePages, i, pageIndexBytes*i, off, end, fileEvents, s.eventsBytes)
		}
		prevLast, prevIdx = last, idx
	}
	if s.m.Pages == 0 && s.eventsBytes != 0 {
		return fmt.Errorf("tracestore: %s: %d bytes in no pages", fileEvents, s.eventsBytes)
	}
	// The trace's duration is its last event's time.
	if s.m.Pages > 0 && prevLast != s.m.Duration || s.m.Pages == 0 && s.m.Duration != 0 {
		return fmt.Errorf("tracestore: %s: duration_ns %d, the last event is at %d", fileManifest, s.m.Duration, max(0, prevLast))
	}
	// The timeline's large files are mapped, their sizes checked against
	// the counts here and their contents when first read.
	if s.spans, err = s.mapped(fileSpans); err != nil {
		return err
	}
	// A span takes at least a byte in spans.bin.
	if s.m.Spans > int64(len(s.spans)) {
		return fmt.Errorf("tracestore: %s: %d spans do not fit in %d bytes of %s", fileManifest, s.m.Spans, len(s.spans), fileSpans)
	}
	s.w = storeWidths(s.m.Duration, int64(len(s.spans)), s.m.Spans)
	bib, ab := int64(s.w.blockIndexBytes()), int64(s.w.aggBytes())
	if s.blockIdx, err = s.mapped(fileBlocks); err != nil {
		return err
	}
	if int64(len(s.blockIdx))%bib != 0 {
		return fmt.Errorf("tracestore: %s: %d bytes, not a multiple of %d", fileBlocks, len(s.blockIdx), bib)
	}
	if s.forest, err = s.mapped(fileForest); err != nil {
		return err
	}
	if int64(len(s.forest))%ab != 0 {
		return fmt.Errorf("tracestore: %s: %d bytes, not a multiple of %d", fileForest, len(s.forest), ab)
	}
	if s.attrIdx, err = s.mapped(fileAttrIdx); err != nil {
		return err
	}
	if s.attrs, err = s.mapped(fileAttrs); err != nil {
		return err
	}
	chunks := (s.m.Spans + AttrChunk - 1) / AttrChunk
	if int64(len(s.attrIdx))%attrIdxBytes != 0 || int64(len(s.attrIdx))/attrIdxBytes != chunks {
		return fmt.Errorf("tracestore: %s: %d bytes for the %d chunks of %d spans", fileAttrIdx, len(s.attrIdx), chunks, s.m.Spans)
	}
	if _, ok := s.sums[fileCoarse]; ok {
		b, err := s.mapped(fileCoarse)
		if err != nil {
			return err
		}
		if s.coarse, err = parseCoarse(b, s.m.Lanes); err != nil {
			return err
		}
	}
	// lanes.tab and lanes.idx are mapped too, each group of lanes
	// checked when first read (see lane).
	if s.laneTab, err = s.mapped(fileLanes); err != nil {
		return err
	}
	if s.laneIdx, err = s.mapped(fileLaneIdx); err != nil {
		return err
	}
	// A lane takes at least five bytes in lanes.tab.
	if int64(s.m.Lanes) > int64(len(s.laneTab))/5 {
		return fmt.Errorf("tracestore: %s: %d bytes for %d lanes", fileLanes, len(s.laneTab), s.m.Lanes)
	}
	groups := (int64(s.m.Lanes) + LaneGroup - 1) / LaneGroup
	if int64(len(s.laneIdx))%laneIdxBytes != 0 || int64(len(s.laneIdx))/laneIdxBytes != groups {
		return fmt.Errorf("tracestore: %s: %d bytes for the %d groups of %d lanes", fileLaneIdx, len(s.laneIdx), groups, s.m.Lanes)
	}
	s.nblocks, s.nvals = int64(len(s.blockIdx))/bib, int64(len(s.forest))/ab
	if s.m.Lanes == 0 && (len(s.laneTab) != 0 || s.m.Spans != 0 || s.nblocks != 0 || s.nvals != 0) {
		return fmt.Errorf("tracestore: %s: no lanes, but %d bytes of %s, %d spans, %d blocks and %d forest values", fileManifest, len(s.laneTab), fileLanes, s.m.Spans, s.nblocks, s.nvals)
	}
	// One bit per block (nblocks is at most the bytes of blocks.idx).
	if !s.checkOnly {
		s.checked = make([]atomic.Uint64, (s.nblocks+63)/64)
		s.kinds.init(s)
	}
	// The event log is read page by page, each checked by its own sum;
	// its size is checked here.
	if s.events, err = os.Open(s.path(fileEvents)); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	s.closers = append(s.closers, s.events.Close)
	if st, err := s.events.Stat(); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	} else if st.Size() != s.eventsBytes {
		return fmt.Errorf("tracestore: %s: %d bytes, %s says %d", fileEvents, st.Size(), fileManifest, s.eventsBytes)
	}
	if s.dag, err = stackcompress.Open(s.path(fileStacks), stackcompress.ReaderOptions{MaxDepth: maxStackFrames}); err != nil {
		return fmt.Errorf("tracestore: %s: %w", fileStacks, err)
	}
	if s.dag.Nodes() != s.m.Stacks {
		return fmt.Errorf("tracestore: %s: %d nodes, %s says %d", fileStacks, s.dag.Nodes(), fileManifest, s.m.Stacks)
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

// eachLane decodes lanes.tab group by group, checking every group (see
// decodeLaneGroup) and the order of each group's first lane after the
// previous group's last, and calls f with every lane in order: its
// number, its record and the index of its first span of all the store's
// spans.
func (s *Store) eachLane(f func(i int, l *Lane, firstSpan int64) error) error {
	var prev Lane
	for g := int64(0); g*LaneGroup < int64(s.m.Lanes); g++ {
		grp := s.decodeLaneGroup(g)
		if grp.err != nil {
			return grp.err
		}
		if g > 0 && laneCompare(prev, grp.lanes[0]) >= 0 {
			return fmt.Errorf("tracestore: %s: lane %d (group %d): not after the previous lane", fileLanes, g*LaneGroup, g)
		}
		for j := range grp.lanes {
			if err := f(int(g*LaneGroup)+j, &grp.lanes[j], grp.lanes[j].firstSpan); err != nil {
				return err
			}
		}
		prev = grp.lanes[len(grp.lanes)-1]
	}
	return nil
}

// A laneRecs is a group of lanes decoded from lanes.tab and checked, or
// the error that the group's check found.
type laneRecs struct {
	g     int64
	lanes []Lane
	err   error
}

// The size of a store's cache of groups of lanes: a frame's lanes and a
// page of the lane list fit, in at most 256 × LaneGroup × 56 bytes. It is
// set-associative so that the rows of a frame computed at once, which
// read their lane's record at every pixel, do not evict one another
// unless more than laneCacheWays of their groups share a set.
const (
	laneCacheSets = 64
	laneCacheWays = 4
)

// noLane is what lane returns for a lane of a corrupt group: no spans.
var noLane Lane

// lane returns lane l's record, or noLane if its group is corrupt
// (LaneError says why). A group is decoded and checked when first read
// and kept in a small cache; a group read again after it left the cache
// is decoded and checked again.
func (s *Store) lane(l int) *Lane {
	g := int64(l) / LaneGroup
	grp := s.laneGroup(g)
	if grp.err != nil {
		return &noLane
	}
	return &grp.lanes[int64(l)-g*LaneGroup]
}

// laneGroup returns group g of the lanes from the cache, or decoded and
// checked into it.
func (s *Store) laneGroup(g int64) *laneRecs {
	set := &s.laneCache[g%laneCacheSets]
	for w := range set {
		if grp := set[w].Load(); grp != nil && grp.g == g {
			return grp
		}
	}
	grp := s.decodeLaneGroup(g)
	set[s.laneVictim.Add(1)%laneCacheWays].Store(grp)
	return grp
}

// decodeLaneGroup decodes group g of lanes.tab and checks it whole: its
// records against their CRC-32C in lanes.idx, each in the form the
// builder writes, in order, and their spans, blocks and forest values
// against where lanes.idx says the group and the next one (or the files'
// ends) begin. Everything a query reads of a lane is then inside the
// timeline's files.
func (s *Store) decodeLaneGroup(g int64) *laneRecs {
	grp := &laneRecs{g: g}
	n := min(LaneGroup, int64(s.m.Lanes)-g*LaneGroup)
	e := getLaneIdx(s.laneIdx[g*laneIdxBytes:])
	next := laneIdxEntry{off: uint64(len(s.laneTab)), span: uint64(s.m.Spans), block: uint64(s.nblocks), forest: uint64(s.nvals)}
	if (g+1)*laneIdxBytes < int64(len(s.laneIdx)) {
		next = getLaneIdx(s.laneIdx[(g+1)*laneIdxBytes:])
	}
	fail := func(format string, args ...any) *laneRecs {
		grp.lanes = nil
		grp.err = fmt.Errorf("tracestore: %s: lanes %d to %d (group %d, offset %#x in %s): %s", fileLanes, g*LaneGroup, g*LaneGroup+n-1, g, g*laneIdxBytes, fileLaneIdx, fmt.Sprintf(format, args...))
		return grp
	}
	// Unsigned: a value past an int64 is past every file's end.
	if g == 0 && (e.off != 0 || e.span != 0 || e.block != 0 || e.forest != 0) ||
		e.off > next.off || next.off > uint64(len(s.laneTab)) ||
		e.span > next.span || next.span > uint64(s.m.Spans) ||
		e.block > next.block || next.block > uint64(s.nblocks) ||
		e.forest > next.forest || next.forest > uint64(s.nvals) {
		return fail("records at [%d, %d), spans from %d to %d, blocks from %d to %d, forest values from %d to %d: out of order or past the files' %d, %d, %d and %d", e.off, next.off, e.span, next.span, e.block, next.block, e.forest, next.forest, len(s.laneTab), s.m.Spans, s.nblocks, s.nvals)
	}
	b := s.laneTab[e.off:next.off]
	if crc(b) != e.crc {
		return fail("checksum mismatch")
	}
	grp.lanes = make([]Lane, 0, n)
	span, block, forest := int64(e.span), int64(e.block), int64(e.forest)
	lo := 0
	for i := range n {
		l, k, err := decodeLane(b[lo:])
		if err != nil {
			return fail("lane %d (offset %#x): %v", g*LaneGroup+i, int(e.off)+lo, err)
		}
		if l.Track < TrackGoroutine || l.Track > TrackGlobal || l.Layer > LayerTask {
			return fail("lane %d (offset %#x): track %d, layer %d", g*LaneGroup+i, int(e.off)+lo, l.Track, l.Layer)
		}
		if i > 0 && laneCompare(grp.lanes[i-1], l) >= 0 {
			return fail("lane %d (offset %#x): not after the previous lane", g*LaneGroup+i, int(e.off)+lo)
		}
		// l.Spans is at most maxTime, each sum at most the next
		// group's: none of this wraps.
		if l.Spans > int64(next.span)-span || blocks(l.Spans) > int64(next.block)-block || forestValues(l.Spans) > int64(next.forest)-forest {
			return fail("lane %d (offset %#x): %d spans from span %d, block %d and forest value %d do not fit", g*LaneGroup+i, int(e.off)+lo, l.Spans, span, block, forest)
		}
		l.firstSpan, l.blockOff, l.forestOff = span, block, forest
		span += l.Spans
		block += blocks(l.Spans)
		forest += forestValues(l.Spans)
		lo += k
		grp.lanes = append(grp.lanes, l)
	}
	if lo != len(b) || span != int64(next.span) || block != int64(next.block) || forest != int64(next.forest) {
		return fail("%d of %d bytes decoded; %d spans, %d blocks and %d forest values end where the next group begins at %d, %d and %d", lo, len(b), span, block, forest, next.span, next.block, next.forest)
	}
	return grp
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

// File returns the bytes of the file name that the manifest lists,
// checked against the size and CRC-32C the manifest gives: for files a
// later writer added that Open does not read. The bytes are mapped
// read-only and valid until Close; read them under Guard.
func (s *Store) File(name string) ([]byte, error) {
	for _, f := range s.m.Files {
		if f.Name != name {
			continue
		}
		s.fileMu.Lock()
		defer s.fileMu.Unlock()
		var b []byte
		var err error
		if gerr := s.Guard(func() {
			if b, err = mapFile(s.path(name), f.Bytes, &s.closers); err == nil && crc(b) != f.CRC32 {
				err = fmt.Errorf("tracestore: %s: checksum mismatch", name)
			}
		}); gerr != nil {
			err = gerr
		}
		return b, err
	}
	return nil, fmt.Errorf("tracestore: %s lists no %s", fileManifest, name)
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Manifest returns the store's manifest.
func (s *Store) Manifest() Manifest { return s.m }

// NumLanes returns the number of the store's lanes.
func (s *Store) NumLanes() int { return s.m.Lanes }

// Lane returns lane l of the store's lanes, which are sorted by track,
// ID, layer and depth. It panics if l is out of range. Its record is
// read and checked, with the LaneGroup lanes of its group, when first
// asked for: a lane of a corrupt group has no spans (and a zero Track),
// and LaneError says why.
func (s *Store) Lane(l int) Lane {
	if l < 0 || l >= s.m.Lanes {
		panic(fmt.Sprintf("tracestore: lane %d of %d", l, s.m.Lanes))
	}
	return *s.lane(l)
}

// String returns string i of the store's table, or "" if there is none.
func (s *Store) String(i uint32) string {
	if int(i) < len(s.strings) {
		return s.strings[i]
	}
	return ""
}

// blockAt returns the bytes and first start of block bi.
func (s *Store) blockAt(bi int64) (lo, hi, start int64) {
	bib := int64(s.w.blockIndexBytes())
	e := s.blockIdx[bi*bib:]
	lo, start = int64(getN(e, s.w.o)), int64(getN(e[s.w.o:], s.w.t))
	hi = int64(len(s.spans))
	if (bi+1)*bib < int64(len(s.blockIdx)) {
		hi = int64(getN(e[bib:], s.w.o))
	}
	return lo, hi, start
}

// block decodes block k of lane l, whose record is ln, into dst,
// checking it the first time; ok is false if the lane is corrupt.
func (s *Store) block(l int, ln *Lane, k int64, dst []Span) (_ []Span, ok bool) {
	if !s.blockOK(l, ln, k) {
		return dst[:0], false
	}
	lo, hi, start := s.blockAt(ln.blockOff + k)
	dst, _ = decodeBlock(dst[:0], s.spans[lo:hi], start, int(min(BlockSpans, ln.Spans-k*BlockSpans)), s.m.TimeQuantum)
	return dst, true
}

// Span returns span i of lane l. It panics if either is out of range. A
// span of a corrupt lane (see LaneError) or of a corrupt chunk of
// attributes has kind NoSpan.
func (s *Store) Span(l int, i int64) Span {
	ln := s.lane(l)
	if i < 0 || i >= ln.Spans {
		panic(fmt.Sprintf("tracestore: span %d of a lane of %d", i, ln.Spans))
	}
	var buf [BlockSpans]Span
	blk, ok := s.block(l, ln, i/BlockSpans, buf[:0])
	if !ok || int(i%BlockSpans) >= len(blk) {
		return Span{Kind: NoSpan}
	}
	sp := blk[i%BlockSpans]
	g := ln.firstSpan + i
	kn, ok := s.kindName(g)
	if !ok {
		return Span{Start: sp.Start, Dur: sp.Dur, Kind: NoSpan}
	}
	sp.Kind, sp.Name, sp.Stack = kn.kind(), kn.name(), s.spanStack(g)
	return sp
}

// attrChunk returns where chunk k of spanattr.bin lies, its record bytes
// and its codec, checking them against the file.
func (s *Store) attrChunk(k int64) (lo, hi int64, raw int, codec uint32, err error) {
	e := s.attrIdx[k*attrIdxBytes:]
	off := binary.LittleEndian.Uint64(e)
	end := uint64(len(s.attrs))
	if (k+1)*attrIdxBytes < int64(len(s.attrIdx)) {
		end = binary.LittleEndian.Uint64(e[attrIdxBytes:])
	}
	if k == 0 && off != 0 || off > end || end > uint64(len(s.attrs)) {
		return int64(off), 0, 0, 0, fmt.Errorf("bytes [%d, %d) out of order or past %d", off, end, len(s.attrs))
	}
	return int64(off), int64(end), int(binary.LittleEndian.Uint32(e[8:])), binary.LittleEndian.Uint32(e[12:]), nil
}

// spanStack returns the stack of span g (of all the spans, lane after
// lane), decoding its chunk of spanattr.bin (0 if the chunk is corrupt). The
// store keeps the last chunk decoded.
func (s *Store) spanStack(g int64) uint32 {
	s.stackMu.Lock()
	defer s.stackMu.Unlock()
	k := g / AttrChunk
	if s.stackChunk != k+1 {
		s.stackChunk = 0
		s.stacks = s.stacks[:0]
		if _, err := s.attrChunkRecords(k, &s.stackCodec, nil, func(_ int, _ SpanKind, _, stack uint32) {
			s.stacks = append(s.stacks, stack)
		}); err != nil {
			return 0
		}
		s.stackChunk = k + 1
	}
	return s.stacks[g%AttrChunk]
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
// read at the ends. A corrupt lane (see LaneError) has no spans.
func (s *Store) Query(l int, t0, t1 int64) LaneAgg {
	ln := s.lane(l)
	if ln.Spans == 0 || t1 <= t0 {
		return LaneAgg{Longest: -1}
	}
	r := newRowCursor(s, l, ln)
	j := r.locate(t0)
	i0 := j
	if j > 0 && r.span(j-1).End() > t0 {
		i0 = j - 1
	}
	i1 := r.locate(t1)
	if r.bad {
		return LaneAgg{Longest: -1}
	}
	if i0 >= i1 {
		return LaneAgg{Longest: -1, First: i0}
	}
	a := r.aggregate(i0, i1)
	busy := a.Busy
	if f := r.span(i0); f.Start < t0 {
		busy -= t0 - f.Start
	}
	if e := r.span(i1 - 1).End(); e > t1 {
		busy -= e - t1
	}
	if r.bad {
		return LaneAgg{Longest: -1}
	}
	longest := a.Index
	if longest < i0 || longest >= i1 {
		longest = -1 // a forest that does not match its spans
	}
	return LaneAgg{Count: i1 - i0, Busy: max(0, busy), Longest: longest, First: i0}
}

// A Cell is what a viewer draws for one lane over one pixel's time range:
// the longest span that overlaps it, how many spans do, and which share of
// the range they cover.
type Cell struct {
	Kind  SpanKind // NoSpan if no span overlaps the range
	Busy  uint8    // covered share of the range, 0-255
	Count uint16   // overlapping spans, saturating at 65535
	Name  uint32   // the longest span's name (string index)
	Span  int64    // the longest span's index in its lane, -1 if none
}

// NoSpan is a Cell's Kind where no span overlaps.
const NoSpan SpanKind = 255

// rowCursor reads one lane, keeping its last decoded blocks (a pixel's
// range reads the blocks at both of its ends, and the next pixel starts in
// the block this one ended in) and the block of the last time located.
type rowCursor struct {
	s     *Store
	l     int
	ln    *Lane          // the lane's record
	cache [4]cachedBlock // by block number mod 4
	hint  int            // locate's last block
	bad   bool           // a block was corrupt: the lane's answers are empty
}

type cachedBlock struct {
	k   int64 // block number, -1 for none
	n   int
	buf [BlockSpans]Span
}

func newRowCursor(s *Store, l int, ln *Lane) *rowCursor {
	r := &rowCursor{s: s, l: l, ln: ln}
	for i := range r.cache {
		r.cache[i].k = -1
	}
	return r
}

func (r *rowCursor) blk(k int64) []Span {
	c := &r.cache[k%int64(len(r.cache))]
	if c.k != k {
		blk, ok := r.s.block(r.l, r.ln, k, c.buf[:0])
		if !ok {
			r.bad = true
		}
		c.n = len(blk)
		c.k = k
	}
	return c.buf[:c.n]
}

// span returns span i, or a zero span if its block is corrupt.
func (r *rowCursor) span(i int64) Span {
	blk := r.blk(i / BlockSpans)
	if j := int(i % BlockSpans); j < len(blk) {
		return blk[j]
	}
	return Span{}
}

// locate returns the index of the first span of the lane that starts at
// or after t, which must not be before the last time located: a galloping
// search of the block index from the last block found (pixel boundaries
// grow along a row, and a large lane's index is then read a few cache
// lines at a time), then a binary search of one block.
func (r *rowCursor) locate(t int64) int64 {
	ln := r.ln
	nb := int(blocks(ln.Spans))
	k := int64(gallop.Search(nb, r.hint, func(k int) bool { _, _, st := r.s.blockAt(ln.blockOff + int64(k)); return st >= t }))
	r.hint = max(0, int(k)-1)
	if k == 0 {
		return 0
	}
	blk := r.blk(k - 1)
	j := sort.Search(len(blk), func(j int) bool { return blk[j].Start >= t })
	return (k-1)*BlockSpans + int64(j)
}

// aggregate combines spans [i0, i1): whole blocks from the forest, the
// rest span by span.
func (r *rowCursor) aggregate(i0, i1 int64) Agg {
	fold := func(a Agg, lo, hi int64) Agg {
		for i := lo; i < hi; i++ {
			sp := r.span(i)
			a = combine(a, Agg{Longest: sp.Dur, Index: i, Busy: sp.Dur})
		}
		return a
	}
	firstWhole := (i0 + BlockSpans - 1) / BlockSpans
	lastWhole := i1 / BlockSpans
	if firstWhole >= lastWhole {
		return fold(noAgg, i0, i1)
	}
	a := fold(noAgg, i0, firstWhole*BlockSpans)
	a = combine(a, r.s.forestQuery(r.ln, firstWhole, lastWhole))
	return fold(a, lastWhole*BlockSpans, i1)
}

// Stack returns the frames of stack id, innermost first.
func (s *Store) Stack(id uint64) ([]Frame, error) {
	if id == 0 {
		return nil, nil
	}
	ids, err := s.dagStack(id)
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

func (s *Store) dagStack(id uint64) ([]uint64, error) {
	s.dagMu.lock()
	defer s.dagMu.unlock() // even if a fault in a truncated file panics (see Guard)
	return s.dag.Stack(id, nil)
}

// ErrFileChanged is the error Guard returns when a store file changed
// under the open store: truncated, as copying another store over it does.
var ErrFileChanged = errors.New("tracestore: a store file was truncated or replaced while open")

// Guard calls f, which uses the store, and returns ErrFileChanged (wrapped,
// with the fault's address) if a store file was truncated while mapped and
// f read what it lost. The store's files are memory-mapped, and reading a
// page of a mapping past the end of its file faults: without Guard, that
// kills the process. Guard protects only the calling goroutine; f must
// not start goroutines that use the store unless they call Guard too.
func (s *Store) Guard(f func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			fe, ok := p.(interface{ Addr() uintptr })
			if !ok {
				panic(p)
			}
			err = fmt.Errorf("%w: %s (fault at %#x)", ErrFileChanged, s.dir, fe.Addr())
		}
	}()
	f()
	return nil
}
