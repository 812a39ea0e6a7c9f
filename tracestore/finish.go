package tracestore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"

	"github.com/pctab/pctab/diskmap"
	"github.com/pctab/pctab/forest"
)

// probeNow calls the test probe, if there is one.
func (b *builder) probeNow() {
	if b.probe != nil {
		b.probe()
	}
}

func (b *builder) finish() (*Manifest, error) {
	if err := b.flushPage(); err != nil {
		return nil, err
	}
	if err := b.evW.Flush(); err != nil {
		return nil, fmt.Errorf("tracestore: writing %s: %w", fileEvents, err)
	}
	if err := b.pageIdxW.Flush(); err != nil {
		return nil, fmt.Errorf("tracestore: writing %s: %w", filePages, err)
	}
	if err := b.closeAll(); err != nil {
		return nil, err
	}
	if err := b.spanW.Flush(); err != nil {
		return nil, fmt.Errorf("tracestore: writing spans: %w", err)
	}
	write := func(name string, wt io.WriterTo) error {
		f, err := os.Create(filepath.Join(b.dir, name))
		if err != nil {
			return fmt.Errorf("tracestore: %w", err)
		}
		w := bufio.NewWriterSize(f, ioBuffer)
		if _, err := wt.WriteTo(w); err != nil {
			f.Close()
			return fmt.Errorf("tracestore: writing %s: %w", name, err)
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("tracestore: writing %s: %w", name, err)
		}
		return f.Close()
	}
	checked := func(d interface {
		WriteChecked(io.Writer) (int64, error)
	}) io.WriterTo {
		return writerFunc(d.WriteChecked)
	}
	var strTab bytes.Buffer
	strTab.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(b.strList))))
	off := uint32(0)
	for _, s := range b.strList {
		strTab.Write(binary.LittleEndian.AppendUint32(nil, off))
		off += uint32(len(s))
	}
	strTab.Write(binary.LittleEndian.AppendUint32(nil, off))
	for _, s := range b.strList {
		strTab.WriteString(s)
	}
	for _, f := range []struct {
		name string
		w    io.WriterTo
	}{
		{fileStacks, b.dag},
		{fileFrames, bytes.NewReader(b.frameTab)},
		{fileStrings, &strTab},
		{fileFuncIdx, checked(b.funcIdx)},
		{fileLineIdx, checked(b.lineIdx)},
	} {
		if err := write(f.name, f.w); err != nil {
			return nil, err
		}
	}
	// Written, the index keys, the strings and the stacks are garbage
	// before the lanes are sorted and their spans gathered.
	stacks, frames, strs := b.dag.Len(), len(b.frames), len(b.strList)
	if b.stats != nil {
		b.stats.funcRuns, b.stats.lineRuns = b.funcIdx.Spilled(), b.lineIdx.Spilled()
	}
	for _, x := range []*diskmap.Builder{b.funcIdx, b.lineIdx} {
		if err := x.Close(); err != nil {
			return nil, fmt.Errorf("tracestore: %w", err)
		}
	}
	b.funcIdx, b.lineIdx, b.dag = nil, nil, nil
	b.strings, b.strList, b.frames, b.frameTab, b.stacks = nil, nil, nil, nil, nil
	strTab = bytes.Buffer{}
	b.probeNow()
	if err := b.writeLanes(); err != nil {
		return nil, err
	}
	m := &Manifest{
		SchemaVersion: SchemaVersion,
		BaseTime:      b.base,
		Duration:      b.last,
		Events:        b.events,
		Pages:         b.pages,
		PageSize:      cap(b.page),
		Stacks:        stacks,
		Frames:        frames,
		Strings:       strs,
		Lanes:         int(b.numLanes),
		Spans:         b.numSpans,
		TimeQuantum:   b.quantum(),
	}
	for _, name := range storeFiles() {
		s, err := sumFile(filepath.Join(b.dir, name))
		if err != nil {
			return nil, err
		}
		s.Name = name
		m.Files = append(m.Files, s)
	}
	return m, nil
}

type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

func sumFile(path string) (FileSum, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileSum{}, fmt.Errorf("tracestore: %w", err)
	}
	defer f.Close()
	h := crc32New()
	n, err := io.Copy(h, f)
	if err != nil {
		return FileSum{}, fmt.Errorf("tracestore: reading %s: %w", path, err)
	}
	// On disk before the store is renamed into place.
	if err := f.Sync(); err != nil {
		return FileSum{}, fmt.Errorf("tracestore: syncing %s: %w", path, err)
	}
	return FileSum{Bytes: n, CRC32: h.Sum32()}, nil
}

// writeLanes sorts the lanes, gathers each lane's spans from the
// temporary file, and writes every lane's blocks, block index and forest.
//
// The lanes' records are sorted from the lane file (sortLanes); what
// stays in memory is each lane's new number, 4 bytes a lane. The spans
// are gathered in groups of lanes whose spans and counts fit in a quarter
// of the builder's memory limit (the garbage collector lets the heap grow
// to twice what is live): with one group, the temporary file is read into
// memory and scattered there; with more, one pass copies each span into
// its group's file and each group is then read and scattered in turn. A
// lane larger than the limit has a group of its own, read straight from
// its file: a lane's spans reach the temporary file in order, since each
// starts no earlier than the previous one ends.
func (b *builder) writeLanes() error {
	// The lanes still live go to the lane file too, in number order.
	nums := make([]int32, 0, len(b.live))
	for l := range b.live {
		nums = append(nums, l)
	}
	slices.Sort(nums)
	for _, l := range nums {
		if err := b.spillLane(l); err != nil {
			return err
		}
	}
	nums = nil
	// The row state is garbage from here: every lane is in the lane
	// file.
	b.rows, b.gState, b.pState, b.ranges, b.regions, b.tasks, b.retired, b.live = nil, nil, nil, nil, nil, nil, nil, nil
	if err := b.laneW.Flush(); err != nil {
		return fmt.Errorf("%w: lanes: %w", errWrite, err)
	}
	if b.lanesOut != b.numLanes {
		return fmt.Errorf("tracestore: %d lanes written of %d", b.lanesOut, b.numLanes)
	}
	create := func(name string) (*os.File, *bufio.Writer, error) {
		f, err := os.Create(filepath.Join(b.dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("tracestore: %w", err)
		}
		return f, bufio.NewWriterSize(f, ioBuffer), nil
	}
	// One pass over the sorted lanes numbers them, writes lanes.tab and
	// the span counts in order (to a temporary file, which gathering
	// reads a group at a time), and cuts the groups.
	// The lanes' new numbers: in memory if they fit a sixteenth of the
	// limit, else in a file through a cache of that size.
	newID, err := newLaneIDs(b.numLanes, max(b.mem/16, minGroupBytes/16), b.dir)
	if err != nil {
		return err
	}
	defer newID.close()
	lf, lw, err := create(fileLanes)
	if err != nil {
		return err
	}
	defer lf.Close()
	xf, xw, err := create(fileLaneIdx)
	if err != nil {
		return err
	}
	defer xf.Close()
	ct, err := os.CreateTemp(b.dir, "counts-*.tmp")
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	defer os.Remove(ct.Name())
	defer ct.Close()
	cw := bufio.NewWriterSize(ct, 16<<10)
	limit := max(b.mem/4, minGroupBytes) // bytes a group may take
	var groups []laneGroup
	var n uint32
	var spans, nblocks, nvals, laneOff int64
	var rec []byte
	var buf [8]byte
	// Each group of LaneGroup lanes gets its record in lanes.idx once
	// its records are written.
	var group laneIdxEntry
	endGroup := func() {
		rec = appendLaneIdx(rec[:0], group)
		xw.Write(rec)
	}
	err = b.sortLanes(b.laneTmp, b.numLanes, func(num uint32, l Lane) error {
		if l.Spans < 1 || l.Spans > b.numSpans-spans {
			return fmt.Errorf("tracestore: reading back lanes: lane %d: %d spans out of range", num, l.Spans)
		}
		if err := newID.set(num, n); err != nil {
			return fmt.Errorf("tracestore: reading back lanes: %w", err)
		}
		if n%LaneGroup == 0 {
			group = laneIdxEntry{off: uint64(laneOff), span: uint64(spans), block: uint64(nblocks), forest: uint64(nvals)}
		}
		rec = appendLane(rec[:0], l)
		lw.Write(rec)
		group.crc = crc32.Update(group.crc, castagnoli, rec)
		laneOff += int64(len(rec))
		nvals += forestValues(l.Spans)
		binary.LittleEndian.PutUint64(buf[:], uint64(l.Spans))
		cw.Write(buf[:])
		groups = addGroupLane(groups, int(n), l.Spans, limit)
		spans += l.Spans
		nblocks += blocks(l.Spans)
		if n++; n%LaneGroup == 0 {
			endGroup()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n%LaneGroup != 0 {
		endGroup()
	}
	if spans != b.numSpans {
		return fmt.Errorf("tracestore: reading back lanes: %d spans, %d written", spans, b.numSpans)
	}
	if b.stats != nil {
		b.stats.spanGroups = len(groups)
	}
	b.probeNow()
	for _, x := range []*bufio.Writer{lw, xw, cw} {
		if err := x.Flush(); err != nil {
			return fmt.Errorf("%w: lanes: %w", errWrite, err)
		}
	}
	// The lane file is read: its disk space goes.
	if err := b.laneTmp.Truncate(0); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if _, err := ct.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	sf, sw, err := create(fileSpans)
	if err != nil {
		return err
	}
	defer sf.Close()
	ff, err := os.Create(filepath.Join(b.dir, fileForest))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	defer ff.Close()
	fw := &patchWriter{f: ff, buf: make([]byte, 0, ioBuffer)}
	af, aw, err := create(fileAttrs)
	if err != nil {
		return err
	}
	defer af.Close()
	axf, axw, err := create(fileAttrIdx)
	if err != nil {
		return err
	}
	defer axf.Close()
	// The block index's offsets are written wide to a temporary file,
	// then narrowed once spans.bin's size is known.
	bt, err := os.CreateTemp(b.dir, "blocks-*.tmp")
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	defer os.Remove(bt.Name())
	defer bt.Close()
	btw := bufio.NewWriterSize(bt, ioBuffer)
	w := storeWidths(b.last, 0, b.numSpans)
	// What reading the trace and sorting the lanes left is garbage:
	// collected and returned to the system before the gathering takes
	// its share, which would otherwise come on top of it.
	debug.FreeOSMemory()
	enc := laneEncoder{w: w, q: b.quantum(), sw: sw, bw: btw, fw: fw, aw: aw, xw: axw}
	if err := b.gatherSpans(groups, int(n), bufio.NewReaderSize(ct, 16<<10), newID, enc.lane); err != nil {
		return err
	}
	if b.stats != nil {
		b.stats.laneIDPages = -1
		if newID.f != nil {
			b.stats.laneIDPages = newID.misses
		}
	}
	enc.flushAttrs()
	if err := fw.flush(); err != nil {
		return fmt.Errorf("tracestore: writing %s: %w", fileForest, err)
	}
	for _, x := range []*bufio.Writer{sw, btw, aw, axw} {
		if err := x.Flush(); err != nil {
			return fmt.Errorf("tracestore: writing lanes: %w", err)
		}
	}
	// blocks.idx, narrowed.
	w.o = bytesFor(uint64(enc.off))
	if _, err := bt.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	bf, bw, err := create(fileBlocks)
	if err != nil {
		return err
	}
	defer bf.Close()
	br := bufio.NewReaderSize(bt, ioBuffer)
	var wide [16]byte
	brec := make([]byte, w.blockIndexBytes())
	for range nblocks {
		if _, err := io.ReadFull(br, wide[:]); err != nil {
			return fmt.Errorf("tracestore: reading back the block index: %w", err)
		}
		putN(brec, binary.LittleEndian.Uint64(wide[:]), w.o)
		putN(brec[w.o:], binary.LittleEndian.Uint64(wide[8:]), w.t)
		bw.Write(brec)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("tracestore: writing %s: %w", fileBlocks, err)
	}
	return nil
}

// A laneGroup is a run of lanes, in the store's order, whose spans are
// gathered together: from lane lo to the next group's first, with spans
// spans in all.
type laneGroup struct {
	lo    int
	spans int64
}

// addGroupLane adds lane n, of the given spans, to the last of groups,
// or starts a group with it if the last group would pass limit bytes.
func addGroupLane(groups []laneGroup, n int, spans, limit int64) []laneGroup {
	if len(groups) > 0 {
		g := &groups[len(groups)-1]
		if (g.spans+spans)*spanBytes+int64(n-g.lo+1)*laneGroupBytes <= limit {
			g.spans += spans
			return groups
		}
	}
	return append(groups, laneGroup{lo: n, spans: spans})
}

// laneGroupBytes is what gathering holds per lane of a group, besides
// its spans: its span count, where its spans go and how many are placed.
const laneGroupBytes = 24

// gatherSpans calls lane for every lane, in order, with a function that
// returns its spans one by one, reading them back from the temporary
// file in groups that fit the memory limit (see writeLanes). The lanes
// are numbered 0 to nlanes-1 in the store's order; counts reads each
// one's span count, in that order; newID maps the temporary file's lane
// numbers to the store's.
func (b *builder) gatherSpans(groups []laneGroup, nlanes int, counts io.Reader, newID *laneIDs, lane func(n int, l Lane, next func() (Span, error)) error) error {
	if nlanes == 0 {
		return nil
	}
	if _, err := b.spanTmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	limit := max(b.mem/4, minGroupBytes) / spanBytes // spans a group may hold
	hiOf := func(g int) int {
		if g+1 < len(groups) {
			return groups[g+1].lo
		}
		return nlanes
	}
	var rec [4 + spanBytes]byte
	readRec := func(r io.Reader) (uint32, []byte, error) {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			return 0, nil, fmt.Errorf("tracestore: reading back spans: %w", err)
		}
		return binary.LittleEndian.Uint32(rec[:4]), rec[4:], nil
	}
	// The group files, read one at a time; with one group, the
	// temporary file itself.
	var src io.Reader = bufio.NewReaderSize(b.spanTmp, ioBuffer)
	var files []*os.File
	if len(groups) > 1 {
		files = make([]*os.File, len(groups))
		writers := make([]*bufio.Writer, len(groups))
		// The writers' buffers share an eighth of the limit, from 4 to
		// 16 KiB each.
		wbuf := int(min(max(b.mem/8/int64(len(groups)), 4<<10), 16<<10))
		for g := range files {
			f, err := os.CreateTemp(b.dir, "group-*.tmp")
			if err != nil {
				return fmt.Errorf("tracestore: %w", err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			files[g], writers[g] = f, bufio.NewWriterSize(f, wbuf)
		}
		r := bufio.NewReaderSize(b.spanTmp, ioBuffer)
		for i := range b.numSpans {
			if i%probeEvents == 0 {
				b.probeNow()
			}
			l, _, err := readRec(r)
			if err != nil {
				return err
			}
			n, err := newID.get(l)
			if err != nil {
				return fmt.Errorf("tracestore: reading back spans: %w", err)
			}
			if int64(n) >= int64(nlanes) {
				return fmt.Errorf("tracestore: reading back spans: lane %d of %d", n, nlanes)
			}
			// The group of lane n: the last that starts at or before it.
			g, _ := slices.BinarySearchFunc(groups, int(n)+1, func(x laneGroup, t int) int { return cmp.Compare(x.lo, t) })
			binary.LittleEndian.PutUint32(rec[:4], n)
			if _, err := writers[g-1].Write(rec[:]); err != nil {
				return fmt.Errorf("%w: spans: %w", errWrite, err)
			}
		}
		for g, f := range files {
			if err := writers[g].Flush(); err != nil {
				return fmt.Errorf("%w: spans: %w", errWrite, err)
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("tracestore: %w", err)
			}
		}
		writers = nil
		// The group files hold final lane numbers: the map and its
		// cache are garbage.
		newID.release()
		newID = nil
		// The spans are in the group files: the temporary file's disk
		// space goes.
		if err := b.spanTmp.Truncate(0); err != nil {
			return fmt.Errorf("tracestore: %w", err)
		}
	}
	// The buffers, once, of the largest group's spans and lanes (not
	// grown by doubling, which would hold up to twice their size).
	var maxSpans int64
	var maxLanes int
	for g := range groups {
		if n := groups[g].spans; hiOf(g)-groups[g].lo > 1 || n <= limit {
			maxSpans = max(maxSpans, n)
		}
		maxLanes = max(maxLanes, hiOf(g)-groups[g].lo)
	}
	var buf []byte
	spans, first, placed := make([]int64, 0, maxLanes), make([]int64, 0, maxLanes), make([]int64, 0, maxLanes)
	var cnt [8]byte
	var gr *bufio.Reader // the group file's reader
	for g := range groups {
		lo, hi := groups[g].lo, hiOf(g)
		if files != nil {
			if g > 0 {
				// Read: its disk space goes.
				if err := files[g-1].Truncate(0); err != nil {
					return fmt.Errorf("tracestore: %w", err)
				}
			}
			if gr == nil {
				gr = bufio.NewReaderSize(files[g], ioBuffer)
			} else {
				gr.Reset(files[g])
			}
			src = gr
		}
		// The group's lanes' span counts, and where each lane's spans
		// start in the group.
		spans, first, placed = spans[:0], first[:0], placed[:0]
		var n int64
		for range hi - lo {
			if _, err := io.ReadFull(counts, cnt[:]); err != nil {
				return fmt.Errorf("tracestore: reading back lane counts: %w", err)
			}
			c := int64(binary.LittleEndian.Uint64(cnt[:]))
			if c < 1 || c > groups[g].spans-n {
				return fmt.Errorf("tracestore: reading back lane counts: %d spans in a group of %d", c, groups[g].spans)
			}
			spans, first, placed = append(spans, c), append(first, n), append(placed, 0)
			n += c
		}
		if n != groups[g].spans {
			return fmt.Errorf("tracestore: reading back lane counts: %d spans in a group of %d", n, groups[g].spans)
		}
		if hi-lo == 1 && n > limit {
			// One lane, larger than the limit: streamed.
			left := n
			err := lane(lo, Lane{Spans: n}, func() (Span, error) {
				if left%probeEvents == 0 {
					b.probeNow()
				}
				k, r, err := readRec(src)
				if err != nil {
					return Span{}, err
				}
				if newID != nil {
					n, err := newID.get(k)
					if err != nil {
						return Span{}, fmt.Errorf("tracestore: reading back spans: %w", err)
					}
					k = n
				}
				if left == 0 || int(k) != lo {
					return Span{}, fmt.Errorf("tracestore: reading back spans: lane %d out of place", k)
				}
				left--
				return getSpan(r), nil
			})
			if err != nil {
				return err
			}
			continue
		}
		if buf == nil {
			buf = make([]byte, maxSpans*spanBytes)
		}
		if n > maxSpans {
			return fmt.Errorf("tracestore: reading back lane counts: a group of %d spans, more than %d", n, maxSpans)
		}
		buf = buf[:n*spanBytes]
		for range n {
			l, r, err := readRec(src)
			if err != nil {
				return err
			}
			k := int(l)
			if newID != nil {
				n, err := newID.get(l)
				if err != nil {
					return fmt.Errorf("tracestore: reading back spans: %w", err)
				}
				k = int(n)
			}
			if k < lo || k >= hi || placed[k-lo] >= spans[k-lo] {
				return fmt.Errorf("tracestore: reading back spans: lane %d out of place", k)
			}
			at := (first[k-lo] + placed[k-lo]) * spanBytes
			placed[k-lo]++
			copy(buf[at:at+spanBytes], r)
		}
		b.probeNow()
		for k := lo; k < hi; k++ {
			at := first[k-lo] * spanBytes
			err := lane(k, Lane{Spans: spans[k-lo]}, func() (Span, error) {
				sp := getSpan(buf[at:])
				at += spanBytes
				return sp, nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// minGroupBytes is the least memory a group of spans may take (tests
// lower it).
var minGroupBytes int64 = 1 << 20

// A laneEncoder writes lanes' blocks to spans.bin, their wide block index
// records to a temporary file, their forests to forest.bin and their
// spans' attributes to spanattr.bin and attr.idx.
type laneEncoder struct {
	w              widths
	q              int64 // time quantum
	sw, bw, aw, xw *bufio.Writer
	off            int64 // bytes of spans.bin written
	fw             *patchWriter
	forestOff      int64 // bytes of forest.bin written
	enc, rec       []byte
	blk            []Span

	// spanattr.bin: the current chunk's records and spans, the last
	// stack of each kind in it and the bytes written.
	attrs    []byte
	attrN    int
	attrLast [numSpanKinds]uint32
	attrOff  int64
	attrEnc  pageEncoder
}

// addAttr adds span s's kind, name and stack to spanattr.bin.
func (e *laneEncoder) addAttr(s Span) {
	e.attrs = appendAttr(e.attrs, s, &e.attrLast)
	if e.attrN++; e.attrN == AttrChunk {
		e.flushAttrs()
	}
}

// flushAttrs writes the current chunk of spanattr.bin.
func (e *laneEncoder) flushAttrs() {
	if e.attrN == 0 {
		return
	}
	codec, data := e.attrEnc.compress(e.attrs)
	e.aw.Write(data)
	var rec [attrIdxBytes]byte
	binary.LittleEndian.PutUint64(rec[0:], uint64(e.attrOff))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(e.attrs)))
	binary.LittleEndian.PutUint32(rec[12:], codec)
	e.xw.Write(rec[:])
	e.attrOff += int64(len(data))
	e.attrs, e.attrN, e.attrLast = e.attrs[:0], 0, [numSpanKinds]uint32{}
}

func (e *laneEncoder) lane(_ int, l Lane, next func() (Span, error)) error {
	// The forest's values go to forest.bin as they are made, each node
	// again when its tree completes: what stays in memory is a value per
	// level.
	ab := int64(e.w.aggBytes())
	if int64(cap(e.rec)) < ab {
		e.rec = make([]byte, ab)
	}
	base := e.forestOff
	f := forest.NewStream(combine, func(i int, v Agg) error {
		e.w.putAgg(e.rec, v)
		return e.fw.writeAt(e.rec[:ab], base+int64(i)*ab)
	})
	var wide [16]byte
	for i0 := int64(0); i0 < l.Spans; i0 += BlockSpans {
		e.blk = e.blk[:0]
		a := noAgg
		for i := i0; i < min(i0+BlockSpans, l.Spans); i++ {
			sp, err := next()
			if err != nil {
				return err
			}
			e.blk = append(e.blk, sp)
			e.addAttr(sp)
			a = combine(a, Agg{Longest: sp.Dur, Index: i, Busy: sp.Dur})
		}
		e.enc = appendBlock(e.enc[:0], e.blk, e.q)
		binary.LittleEndian.PutUint64(wide[0:], uint64(e.off))
		binary.LittleEndian.PutUint64(wide[8:], uint64(e.blk[0].Start))
		e.bw.Write(wide[:])
		e.sw.Write(e.enc)
		e.off += int64(len(e.enc))
		if len(e.blk) == BlockSpans {
			if err := f.Append(a); err != nil {
				return fmt.Errorf("%w: %s: %w", errWrite, fileForest, err)
			}
		}
	}
	if int64(f.Nodes()) != forestValues(l.Spans) {
		return fmt.Errorf("tracestore: a lane of %d spans has %d forest values", l.Spans, f.Nodes())
	}
	e.forestOff += int64(f.Nodes()) * ab
	return nil
}

// A patchWriter writes a file front to back through a buffer, and lets
// bytes already written be rewritten: in the buffer while they are in
// it, else in the file.
type patchWriter struct {
	f    *os.File
	buf  []byte
	base int64 // the file offset of buf[0]
}

// writeAt writes p at offset off, which must be at most the end of what
// was written.
func (w *patchWriter) writeAt(p []byte, off int64) error {
	if off < w.base {
		n := min(int64(len(p)), w.base-off)
		if _, err := w.f.WriteAt(p[:n], off); err != nil {
			return err
		}
		p, off = p[n:], off+n
	}
	if len(p) == 0 {
		return nil
	}
	at := off - w.base
	if at > int64(len(w.buf)) {
		return fmt.Errorf("tracestore: a write at %d past the end %d", off, w.base+int64(len(w.buf)))
	}
	n := copy(w.buf[at:], p)
	w.buf = append(w.buf, p[n:]...)
	if len(w.buf) >= cap(w.buf)-64 {
		return w.flush()
	}
	return nil
}

// flush writes the buffer to the file.
func (w *patchWriter) flush() error {
	if _, err := w.f.WriteAt(w.buf, w.base); err != nil {
		return err
	}
	w.base += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

func writeManifest(dir string, m *Manifest) error {
	return writeManifestAs(dir, fileManifest, m)
}

// quantum returns the store's time quantum: the power of two q that makes
// a sample of the spans' durations (the first quantumSample) shortest as
// spans.bin stores them.
func (b *builder) quantum() int64 {
	if b.q != 0 {
		return b.q
	}
	best, q := int64(-1), int64(1)
	for k := 0; 1<<k <= MaxTimeQuantum; k++ {
		var n int64
		for _, d := range b.durSample {
			n += int64(uvarintLen(uint64(d >> k)))
			if r := d & (1<<k - 1); r != 0 {
				n += int64(uvarintLen(uint64(r)))
			}
		}
		if best < 0 || n < best {
			best, q = n, 1<<k
		}
	}
	b.q, b.durSample = q, nil
	return q
}

// quantumSample is the number of durations quantum looks at.
const quantumSample = 1 << 16

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
