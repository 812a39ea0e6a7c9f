package stackcompress

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// A DAG file is the pages themselves, behind a header and a directory, so
// that a reader uses each page in place: there is no deserialization step.
// All integers are little-endian; a big-endian host reads the same bytes
// through byte-order-aware loads.
//
//	offset  size  field
//	0       8     magic "pctabDAG"
//	8       4     version, 1
//	12      1     log2 of the nodes per page
//	13      1     dictionary entry width in bits: 0 (no dictionary), 32 or 64
//	14      2     zero
//	16      8     nodes, the root included
//	24      4     pages
//	28      4     CRC-32C of the directory
//	32      8     dictionary entries
//	40      8     dictionary offset
//	48      4     CRC-32C of the dictionary
//	52      4     zero
//	56      1     layout frame width (informational)
//	57      1     layout parent coding (informational)
//	58      1     layout dictionary flag (informational)
//	59      1     zero
//	60      4     CRC-32C of bytes 0..59
//	64            directory: per page, 8-byte offset, 4-byte length, 4-byte CRC-32C
//	              dictionary, 8-byte aligned
//	              pages, each 8-byte aligned
const (
	fileMagic      = "pctabDAG"
	fileVersion    = 1
	fileHeaderSize = 64
	dirEntrySize   = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Size gives the bytes of a DAG in its encoded form.
type Size struct {
	Pages     int    // pages, a partly filled last page included
	PageBytes uint64 // all pages, headers and padding included
	DictBytes uint64 // the frame dictionary
	FileBytes uint64 // the whole file: header, directory, dictionary, pages
}

// DAGBytes returns the bytes of the DAG proper: pages and dictionary.
func (s Size) DAGBytes() uint64 { return s.PageBytes + s.DictBytes }

// filePlan is the content of a DAG file, ready to write.
type filePlan struct {
	pages     [][]byte
	dict      []byte
	dictWidth uint8
	dictCount uint64
}

// plan collects the builder's pages, encoding the open page as it stands,
// and its dictionary.
func (b *Builder) plan() filePlan {
	var fp filePlan
	for i := range b.pages {
		fp.pages = append(fp.pages, b.pages[i].data)
	}
	if b.nopen > 0 {
		pn := b.mask + 1
		first := uint64(len(b.pages)) << b.shift
		fp.pages = append(fp.pages, b.enc.encode(first, b.open[:b.nopen], b.open[pn:pn+b.nopen]))
	}
	if b.enc.layout.Dictionary {
		fp.dictWidth = 32
		for _, f := range b.dict {
			if f>>32 != 0 {
				fp.dictWidth = 64
				break
			}
		}
		fp.dictCount = uint64(len(b.dict))
		fp.dict = make([]byte, (uint64(len(b.dict))*uint64(fp.dictWidth)/8+7)/8*8)
		for i, f := range b.dict {
			if fp.dictWidth == 32 {
				binary.LittleEndian.PutUint32(fp.dict[4*i:], uint32(f))
			} else {
				binary.LittleEndian.PutUint64(fp.dict[8*i:], f)
			}
		}
	}
	return fp
}

// Size returns the encoded size of the DAG as it stands.
func (b *Builder) Size() Size {
	fp := b.plan()
	s := Size{Pages: len(fp.pages), DictBytes: uint64(len(fp.dict))}
	for _, p := range fp.pages {
		s.PageBytes += uint64(len(p))
	}
	s.FileBytes = fileHeaderSize + uint64(len(fp.pages))*dirEntrySize + s.DictBytes + s.PageBytes
	return s
}

// WriteTo writes the DAG as it stands to w in the file format that Open and
// NewReader read. The builder stays usable.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	fp := b.plan()
	dirOff := uint64(fileHeaderSize)
	dictOff := dirOff + uint64(len(fp.pages))*dirEntrySize
	off := dictOff + uint64(len(fp.dict))
	dir := make([]byte, len(fp.pages)*dirEntrySize)
	for i, p := range fp.pages {
		binary.LittleEndian.PutUint64(dir[i*dirEntrySize:], off)
		binary.LittleEndian.PutUint32(dir[i*dirEntrySize+8:], uint32(len(p)))
		binary.LittleEndian.PutUint32(dir[i*dirEntrySize+12:], crc32.Checksum(p, castagnoli))
		off += uint64(len(p))
	}
	h := make([]byte, fileHeaderSize)
	copy(h, fileMagic)
	binary.LittleEndian.PutUint32(h[8:], fileVersion)
	h[12] = byte(b.shift)
	h[13] = fp.dictWidth
	binary.LittleEndian.PutUint64(h[16:], b.n)
	binary.LittleEndian.PutUint32(h[24:], uint32(len(fp.pages)))
	binary.LittleEndian.PutUint32(h[28:], crc32.Checksum(dir, castagnoli))
	binary.LittleEndian.PutUint64(h[32:], fp.dictCount)
	binary.LittleEndian.PutUint64(h[40:], dictOff)
	binary.LittleEndian.PutUint32(h[48:], crc32.Checksum(fp.dict, castagnoli))
	h[56] = byte(b.enc.layout.FrameBits)
	h[57] = byte(b.enc.layout.Parents)
	if b.enc.layout.Dictionary {
		h[58] = 1
	}
	binary.LittleEndian.PutUint32(h[60:], crc32.Checksum(h[:60], castagnoli))
	var total int64
	for _, chunk := range append([][]byte{h, dir, fp.dict}, fp.pages...) {
		n, err := w.Write(chunk)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("stackcompress: writing DAG file at offset %d: %w", total, err)
		}
	}
	return total, nil
}
