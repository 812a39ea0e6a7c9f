package tracestore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"

	"github.com/pctab/pctab/forest"
)

func (b *builder) finish() (*Manifest, error) {
	if err := b.flushPage(); err != nil {
		return nil, err
	}
	if err := b.evW.Flush(); err != nil {
		return nil, fmt.Errorf("tracestore: writing %s: %w", fileEvents, err)
	}
	if err := b.closeAll(); err != nil {
		return nil, err
	}
	if err := b.spanW.Flush(); err != nil {
		return nil, fmt.Errorf("tracestore: writing spans: %w", err)
	}
	if err := b.writeLanes(); err != nil {
		return nil, err
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
		{filePages, bytes.NewReader(b.pageIdx)},
		{fileFuncIdx, checked(b.funcIdx)},
		{fileLineIdx, checked(b.lineIdx)},
	} {
		if err := write(f.name, f.w); err != nil {
			return nil, err
		}
	}
	m := &Manifest{
		SchemaVersion: SchemaVersion,
		BaseTime:      b.base,
		Duration:      b.last,
		Events:        b.events,
		Pages:         b.pages,
		PageSize:      cap(b.page),
		Stacks:        b.dag.Len(),
		Frames:        len(b.frames),
		Strings:       len(b.strList),
		Lanes:         len(b.laneList),
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
// The spans are gathered in groups of lanes whose spans fit in a quarter
// of the builder's memory limit (the garbage collector lets the heap grow
// to twice what is live): with one group, the temporary file is read into
// memory and scattered there; with more, one pass copies each span into
// its group's file and each group is then read and scattered in turn. A
// lane larger than the limit has a group of its own, read straight from
// its file: a lane's spans reach the temporary file in order, since each
// starts no earlier than the previous one ends.
func (b *builder) writeLanes() error {
	order := make([]int32, len(b.laneList))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		return laneCompare(b.laneList[x], b.laneList[y])
	})
	newID := make([]uint32, len(order))
	lanes := make([]Lane, len(order))
	first := make([]int64, len(order)) // index of each lane's first span, lanes in order
	var spanOff, blockOff, forestOff int64
	for n, i := range order {
		newID[i] = uint32(n)
		l := b.laneList[i]
		first[n] = spanOff
		l.blockOff, l.forestOff = blockOff, forestOff
		spanOff += l.Spans
		blockOff += blocks(l.Spans)
		forestOff += forestValues(l.Spans)
		lanes[n] = l
	}
	order = nil
	b.laneList = lanes
	create := func(name string) (*os.File, *bufio.Writer, error) {
		f, err := os.Create(filepath.Join(b.dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("tracestore: %w", err)
		}
		return f, bufio.NewWriterSize(f, ioBuffer), nil
	}
	sf, sw, err := create(fileSpans)
	if err != nil {
		return err
	}
	defer sf.Close()
	ff, fw, err := create(fileForest)
	if err != nil {
		return err
	}
	defer ff.Close()
	af, aw, err := create(fileAttrs)
	if err != nil {
		return err
	}
	defer af.Close()
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
	enc := laneEncoder{w: w, q: b.quantum(), sw: sw, bw: btw, fw: fw, aw: aw}
	if err := b.gatherSpans(lanes, first, newID, enc.lane); err != nil {
		return err
	}
	enc.flushAttrs()
	if err := os.WriteFile(filepath.Join(b.dir, fileAttrIdx), enc.attrIdx, 0o666); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	for _, x := range []*bufio.Writer{sw, btw, fw, aw} {
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
	rec := make([]byte, w.blockIndexBytes())
	for range blockOff {
		if _, err := io.ReadFull(br, wide[:]); err != nil {
			return fmt.Errorf("tracestore: reading back the block index: %w", err)
		}
		putN(rec, binary.LittleEndian.Uint64(wide[:]), w.o)
		putN(rec[w.o:], binary.LittleEndian.Uint64(wide[8:]), w.t)
		bw.Write(rec)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("tracestore: writing %s: %w", fileBlocks, err)
	}
	var lt []byte
	for _, l := range lanes {
		lt = appendLane(lt, l)
	}
	if err := os.WriteFile(filepath.Join(b.dir, fileLanes), lt, 0o666); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	return nil
}

// gatherSpans calls lane for every lane, in order, with a function that
// returns its spans one by one, reading them back from the temporary
// file in groups that fit the memory limit (see writeLanes).
func (b *builder) gatherSpans(lanes []Lane, first []int64, newID []uint32, lane func(n int, l Lane, next func() (Span, error)) error) error {
	if len(lanes) == 0 {
		return nil
	}
	if _, err := b.spanTmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	limit := max(b.mem/4, minGroupBytes) / spanBytes // spans a group may hold
	// Groups of consecutive lanes: group g holds lanes [gl[g], gl[g+1]).
	gl := []int{0}
	for n := range lanes {
		if n > gl[len(gl)-1] && first[n]+lanes[n].Spans-first[gl[len(gl)-1]] > limit {
			gl = append(gl, n)
		}
	}
	gl = append(gl, len(lanes))
	groupOf := make([]int32, len(lanes))
	for g := range len(gl) - 1 {
		for n := gl[g]; n < gl[g+1]; n++ {
			groupOf[n] = int32(g)
		}
	}
	var rec [4 + spanBytes]byte
	readRec := func(r io.Reader) (uint32, []byte, error) {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			return 0, nil, fmt.Errorf("tracestore: reading back spans: %w", err)
		}
		return binary.LittleEndian.Uint32(rec[:4]), rec[4:], nil
	}
	// The group files, each a reader of its spans; with one group, the
	// temporary file itself.
	sources := []io.Reader{bufio.NewReaderSize(b.spanTmp, ioBuffer)}
	if len(gl) > 2 {
		sources = sources[:0]
		files := make([]*os.File, len(gl)-1)
		writers := make([]*bufio.Writer, len(gl)-1)
		for g := range files {
			f, err := os.CreateTemp(b.dir, "group-*.tmp")
			if err != nil {
				return fmt.Errorf("tracestore: %w", err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			files[g], writers[g] = f, bufio.NewWriterSize(f, 16<<10)
		}
		r := bufio.NewReaderSize(b.spanTmp, ioBuffer)
		for range b.numSpans {
			l, _, err := readRec(r)
			if err != nil {
				return err
			}
			if int64(l) >= int64(len(newID)) {
				return fmt.Errorf("tracestore: reading back spans: lane %d of %d", l, len(newID))
			}
			n := newID[l]
			binary.LittleEndian.PutUint32(rec[:4], n)
			if _, err := writers[groupOf[n]].Write(rec[:]); err != nil {
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
			sources = append(sources, bufio.NewReaderSize(f, ioBuffer))
		}
		newID = nil // the group files hold final lane numbers
	}
	var buf []byte
	for g := range len(gl) - 1 {
		lo, hi := gl[g], gl[g+1]
		src := sources[0]
		if len(sources) > 1 {
			src = sources[g]
		}
		n := first[hi-1] + lanes[hi-1].Spans - first[lo]
		if hi-lo == 1 && n > limit {
			// One lane, larger than the limit: streamed.
			err := lane(lo, lanes[lo], func() (Span, error) {
				_, r, err := readRec(src)
				return getSpan(r), err
			})
			if err != nil {
				return err
			}
			continue
		}
		if buf == nil {
			// Once, for the largest group.
			buf = make([]byte, min(limit, b.numSpans)*spanBytes)
		}
		buf = buf[:n*spanBytes]
		placed := make([]int64, hi-lo)
		for range n {
			l, r, err := readRec(src)
			if err != nil {
				return err
			}
			k := int(l)
			if newID != nil && int64(l) < int64(len(newID)) {
				k = int(newID[l])
			}
			if k < lo || k >= hi || placed[k-lo] >= lanes[k].Spans {
				return fmt.Errorf("tracestore: reading back spans: lane %d out of place", k)
			}
			at := (first[k] - first[lo] + placed[k-lo]) * spanBytes
			placed[k-lo]++
			copy(buf[at:at+spanBytes], r)
		}
		for k := lo; k < hi; k++ {
			at := (first[k] - first[lo]) * spanBytes
			err := lane(k, lanes[k], func() (Span, error) {
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
// records to a temporary file and their forests to forest.bin.
type laneEncoder struct {
	w              widths
	q              int64 // time quantum
	sw, bw, fw, aw *bufio.Writer
	off            int64 // bytes of spans.bin written
	enc, rec       []byte
	blk            []Span

	// spanattr.bin: the current chunk's records and spans, the last
	// stack of each kind in it, the bytes written and attr.idx.
	attrs    []byte
	attrN    int
	attrLast [numSpanKinds]uint32
	attrOff  int64
	attrIdx  []byte
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
	e.attrIdx = binary.LittleEndian.AppendUint64(e.attrIdx, uint64(e.attrOff))
	e.attrIdx = binary.LittleEndian.AppendUint32(e.attrIdx, uint32(len(e.attrs)))
	e.attrIdx = binary.LittleEndian.AppendUint32(e.attrIdx, codec)
	e.attrOff += int64(len(data))
	e.attrs, e.attrN, e.attrLast = e.attrs[:0], 0, [numSpanKinds]uint32{}
}

func (e *laneEncoder) lane(_ int, l Lane, next func() (Span, error)) error {
	f := forest.New(combine, noAgg)
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
			f.Append(a)
		}
	}
	if cap(e.rec) < e.w.aggBytes() {
		e.rec = make([]byte, e.w.aggBytes())
	}
	for _, v := range f.Values() {
		e.w.putAgg(e.rec, v)
		e.fw.Write(e.rec[:e.w.aggBytes()])
	}
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
