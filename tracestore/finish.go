package tracestore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pctab/pctab/forest"
	"golang.org/x/sys/unix"
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
	}
	for _, name := range []string{fileEvents, filePages, fileStacks, fileFrames, fileStrings, fileLanes, fileSpans, fileBlocks, fileForest, fileFuncIdx, fileLineIdx} {
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

// writeLanes sorts the lanes, scatters the spans from the temporary file
// into their lanes through a mapping of a second temporary file, then
// writes every lane's blocks, block index and forest.
func (b *builder) writeLanes() error {
	order := make([]int, len(b.laneList))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		return laneCompare(b.laneList[x], b.laneList[y])
	})
	newID := make([]uint32, len(order))
	lanes := make([]Lane, len(order))
	first := make([]int64, len(order)) // index of each lane's first span in the scatter file
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
	bf, bw, err := create(fileBlocks)
	if err != nil {
		return err
	}
	defer bf.Close()
	ff, fw, err := create(fileForest)
	if err != nil {
		return err
	}
	defer ff.Close()
	if size := spanOff * spanBytes; size > 0 {
		raw, err := os.CreateTemp(b.dir, "scatter-*.tmp")
		if err != nil {
			return fmt.Errorf("tracestore: %w", err)
		}
		defer os.Remove(raw.Name())
		defer raw.Close()
		if err := raw.Truncate(size); err != nil {
			return fmt.Errorf("tracestore: %w", err)
		}
		mem, err := unix.Mmap(int(raw.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("tracestore: mapping the span scatter file: %w", err)
		}
		defer unix.Munmap(mem)
		next := make([]int64, len(lanes)) // spans placed per lane
		if _, err := b.spanTmp.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("tracestore: %w", err)
		}
		r := bufio.NewReaderSize(b.spanTmp, ioBuffer)
		var rec [4 + spanBytes]byte
		for range b.numSpans {
			if _, err := io.ReadFull(r, rec[:]); err != nil {
				return fmt.Errorf("tracestore: reading back spans: %w", err)
			}
			lane := newID[binary.LittleEndian.Uint32(rec[:4])]
			at := (first[lane] + next[lane]) * spanBytes
			next[lane]++
			copy(mem[at:at+spanBytes], rec[4:])
		}
		var off int64
		var enc []byte
		var buf [max(aggBytes, blockIndexBytes)]byte
		var blk []Span
		for n, l := range lanes {
			f := forest.New(combine, noAgg)
			raw := mem[first[n]*spanBytes : (first[n]+l.Spans)*spanBytes]
			for i0 := int64(0); i0 < l.Spans; i0 += BlockSpans {
				blk = blk[:0]
				a := noAgg
				for i := i0; i < min(i0+BlockSpans, l.Spans); i++ {
					sp := getSpan(raw[i*spanBytes:])
					blk = append(blk, sp)
					a = combine(a, Agg{Longest: sp.Dur, Index: i, Busy: sp.Dur})
				}
				enc = appendBlock(enc[:0], blk)
				binary.LittleEndian.PutUint64(buf[0:], uint64(off))
				binary.LittleEndian.PutUint64(buf[8:], uint64(blk[0].Start))
				bw.Write(buf[:blockIndexBytes])
				sw.Write(enc)
				off += int64(len(enc))
				if len(blk) == BlockSpans {
					f.Append(a)
				}
			}
			for _, v := range f.Values() {
				putAgg(buf[:], v)
				fw.Write(buf[:aggBytes])
			}
		}
	}
	for _, w := range []*bufio.Writer{sw, bw, fw} {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("tracestore: writing lanes: %w", err)
		}
	}
	lt := make([]byte, laneBytes*len(lanes))
	for i, l := range lanes {
		putLane(lt[i*laneBytes:], l)
	}
	if err := os.WriteFile(filepath.Join(b.dir, fileLanes), lt, 0o666); err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	return nil
}

func writeManifest(dir string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, fileManifest))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("tracestore: writing %s: %w", fileManifest, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("tracestore: syncing %s: %w", fileManifest, err)
	}
	return f.Close()
}
