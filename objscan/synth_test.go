package objscan

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// synthFunc describes one function of a synthetic pclntab.
type synthFunc struct {
	name   string
	off    uint64    // entry offset from the text base
	tables [][]byte  // pcsp, pcfile, pcln, then pcdata tables (varint encoded)
	fdata  []uint64  // funcdata references
	funcID uint8     // stored funcID
	line   int32     // startLine (Go 1.20 layout)
	end    uint64    // the next entry offset, for the last function the end entry
	args   int32     // args size
	defret uint32    // deferreturn
	expect [3]uint32 // unused; keeps the struct comparable in table tests
}

// synthLayout describes the pclntab layout to generate.
type synthLayout struct {
	magic   uint32
	order   order
	ptrSize int
	quantum int
}

func (l synthLayout) String() string {
	o := "le"
	if l.order == order(binary.BigEndian) {
		o = "be"
	}
	return fmt.Sprintf("%#x-%s-ptr%d-q%d", l.magic, o, l.ptrSize, l.quantum)
}

const synthText = 0x401000

// buildSynth writes a pclntab in the given layout. It follows the linker's
// layout rules (cmd/link/internal/ld/pcln.go) closely enough for objscan.
func buildSynth(l synthLayout, funcs []synthFunc) []byte {
	o, ps := l.order, l.ptrSize
	word := func(b []byte, v uint64) []byte {
		if ps == 4 {
			return o.AppendUint32(b, uint32(v))
		}
		return o.AppendUint64(b, v)
	}
	align := func(b []byte, n int) []byte {
		for len(b)%n != 0 {
			b = append(b, 0)
		}
		return b
	}
	old := l.magic == Go12Magic
	wideTab := old || l.magic == Go116Magic

	// Names, files, tables: built as separate blobs, placed below.
	var names []byte
	nameOffs := make([]uint32, len(funcs))
	for i, fn := range funcs {
		nameOffs[i] = uint32(len(names))
		names = append(append(names, fn.name...), 0)
	}
	filetab := []byte("a.go\x00b.go\x00")
	pctab := []byte{0}
	tabOffs := make([][]uint32, len(funcs))
	seen := map[string]uint32{} // the linker stores identical tables once
	for i, fn := range funcs {
		for _, t := range fn.tables {
			if len(t) == 0 {
				tabOffs[i] = append(tabOffs[i], 0)
				continue
			}
			off, ok := seen[string(t)]
			if !ok {
				off = uint32(len(pctab))
				seen[string(t)] = off
				pctab = append(pctab, t...)
			}
			tabOffs[i] = append(tabOffs[i], off)
		}
	}

	var out []byte
	out = o.AppendUint32(out, l.magic)
	out = append(out, 0, 0, byte(l.quantum), byte(ps))
	if old {
		// Go 1.2: names, tables and files all live in the pclntab, at
		// offsets from its start. Lay out: header+functab, filetab offset,
		// _funcs, names, pctab, filetab.
		out = word(out, uint64(len(funcs)))
		ftabOff := len(out)
		out = append(out, make([]byte, (2*len(funcs)+1)*ps+4)...)
		out = align(out, ps)
		funcOffs := make([]int, len(funcs))
		for i, fn := range funcs {
			funcOffs[i] = len(out)
			out = word(out, synthText+fn.off)
			out = appendFuncBody(out, o, l, fn, 0, nil) // placeholder, patched below
		}
		namesAt := len(out)
		out = append(out, names...)
		pctabAt := len(out)
		out = append(out, pctab...)
		out = align(out, 4)
		filesAt := len(out)
		out = o.AppendUint32(out, 3) // nfiles: word 0 is the count, then files 1 and 2
		strAt := filesAt + 12
		out = o.AppendUint32(out, uint32(strAt))
		out = o.AppendUint32(out, uint32(strAt+5))
		out = append(out, "a.go\x00"...)
		out = append(out, "b.go\x00"...)
		// Patch functab and _funcs.
		b := out[ftabOff:]
		for i, fn := range funcs {
			putWord(b[2*i*ps:], o, ps, synthText+fn.off)
			putWord(b[(2*i+1)*ps:], o, ps, uint64(funcOffs[i]))
		}
		putWord(b[2*len(funcs)*ps:], o, ps, synthText+funcs[len(funcs)-1].end)
		o.PutUint32(b[(2*len(funcs)+1)*ps:], uint32(filesAt))
		for i, fn := range funcs {
			offs := make([]uint32, len(tabOffs[i]))
			for j, v := range tabOffs[i] {
				if v != 0 {
					offs[j] = v + uint32(pctabAt)
				}
			}
			body := appendFuncBody(nil, o, l, fn, uint32(namesAt)+nameOffs[i], offs)
			copy(out[funcOffs[i]+ps:], body)
		}
		return out
	}

	nwords := 7
	if !wideTab {
		nwords = 8
	}
	hdrEnd := 8 + nwords*ps
	funcnameOff := hdrEnd
	cuOff := funcnameOff + len(names)
	cuOff = (cuOff + 3) &^ 3
	cutab := o.AppendUint32(o.AppendUint32(nil, 0), 5)
	filetabOff := cuOff + len(cutab)
	pctabOff := filetabOff + len(filetab)
	pclnOff := (pctabOff + len(pctab) + ps - 1) &^ (ps - 1)
	out = word(out, uint64(len(funcs)))
	out = word(out, 2)
	if !wideTab {
		out = word(out, 0) // textStart, unused
	}
	for _, v := range []int{funcnameOff, cuOff, filetabOff, pctabOff, pclnOff} {
		out = word(out, uint64(v))
	}
	out = append(out, names...)
	out = align(out, 4)
	out = append(out, cutab...)
	out = append(out, filetab...)
	out = append(out, pctab...)
	out = align(out, ps)
	// functab
	fw := 4
	if wideTab {
		fw = ps
	}
	tab := make([]byte, (2*len(funcs)+1)*fw)
	out = append(out, tab...)
	out = align(out, ps)
	for i, fn := range funcs {
		funcOff := len(out) - pclnOff
		b := out[pclnOff:]
		if wideTab {
			putWord(b[2*i*fw:], o, ps, synthText+fn.off)
			putWord(b[(2*i+1)*fw:], o, ps, uint64(funcOff))
		} else {
			o.PutUint32(b[2*i*fw:], uint32(fn.off))
			o.PutUint32(b[(2*i+1)*fw:], uint32(funcOff))
		}
		if wideTab {
			out = word(out, synthText+fn.off)
		} else {
			out = o.AppendUint32(out, uint32(fn.off))
		}
		out = append(out, appendFuncBody(nil, o, l, fn, nameOffs[i], tabOffs[i])...)
		out = align(out, ps)
	}
	last := funcs[len(funcs)-1].end
	if wideTab {
		putWord(out[pclnOff+2*len(funcs)*fw:], o, ps, synthText+last)
	} else {
		o.PutUint32(out[pclnOff+2*len(funcs)*fw:], uint32(last))
	}
	return out
}

func putWord(b []byte, o order, ps int, v uint64) {
	if ps == 4 {
		o.PutUint32(b, uint32(v))
	} else {
		o.PutUint64(b, v)
	}
}

// appendFuncBody appends a _func record after its entry field.
func appendFuncBody(b []byte, o order, l synthLayout, fn synthFunc, nameOff uint32, offs []uint32) []byte {
	tab := func(i int) uint32 {
		if i < len(offs) {
			return offs[i]
		}
		return 0
	}
	npcdata := max(len(fn.tables)-3, 0)
	b = o.AppendUint32(b, nameOff)
	b = o.AppendUint32(b, uint32(fn.args))
	b = o.AppendUint32(b, fn.defret)
	b = o.AppendUint32(b, tab(0))
	b = o.AppendUint32(b, tab(1))
	b = o.AppendUint32(b, tab(2))
	b = o.AppendUint32(b, uint32(npcdata))
	switch l.magic {
	case Go12Magic:
		b = append(b, fn.funcID, 0, 0, byte(len(fn.fdata)))
	case Go116Magic, Go118Magic:
		b = o.AppendUint32(b, 0) // cuOffset
		b = append(b, fn.funcID, 0, 0, byte(len(fn.fdata)))
	default:
		b = o.AppendUint32(b, 0)
		b = o.AppendUint32(b, uint32(fn.line))
		b = append(b, fn.funcID, 0, 0, byte(len(fn.fdata)))
	}
	for i := 0; i < npcdata; i++ {
		b = o.AppendUint32(b, tab(3+i))
	}
	if l.magic == Go12Magic || l.magic == Go116Magic {
		entry := l.ptrSize
		for (len(b)+entry)%l.ptrSize != 0 {
			b = append(b, 0)
		}
		for _, v := range fn.fdata {
			if l.ptrSize == 4 {
				b = o.AppendUint32(b, uint32(v))
			} else {
				b = o.AppendUint64(b, v)
			}
		}
	} else {
		for _, v := range fn.fdata {
			b = o.AppendUint32(b, uint32(v))
		}
	}
	return b
}

// parseSynth parses a synthetic pclntab as if it were in a binary whose
// runtime.text symbol is synthText.
func parseSynth(data []byte) (*File, error) {
	im := &image{format: "elf", syms: map[string]uint64{"runtime.text": synthText}}
	f := &File{im: im, pcln: data, PclntabAddr: 0x800000}
	if err := f.parse(); err != nil {
		return nil, err
	}
	return f, nil
}

var synthLayouts = []synthLayout{
	{Go12Magic, binary.LittleEndian, 8, 1},
	{Go12Magic, binary.BigEndian, 4, 4},
	{Go116Magic, binary.LittleEndian, 8, 1},
	{Go116Magic, binary.BigEndian, 8, 2},
	{Go118Magic, binary.LittleEndian, 4, 1},
	{Go118Magic, binary.BigEndian, 8, 4},
	{Go120Magic, binary.LittleEndian, 8, 4},
	{Go120Magic, binary.BigEndian, 4, 2},
	{Go120Magic, binary.BigEndian, 8, 2},
}

// Tables in the varint format: pcsp 0 for 16 units then 8; pcfile file 0
// (Go 1.16+) or 1 (Go 1.2); pcln 10..12.
var (
	synthPCSP    = []byte{0x02, 0x10, 0x10, 0x08, 0}             // -1+1=0 for 16, +8 for 8 → len 24
	synthPCFile  = []byte{0x02, 0x18, 0}                         // 0 for 24
	synthPCFile1 = []byte{0x04, 0x18, 0}                         // 1 for 24
	synthPCLn    = []byte{0x16, 0x08, 0x02, 0x08, 0x02, 0x08, 0} // 10, 11, 12
	synthPCData  = []byte{0x00, 0x04, 0x02, 0x14, 0}             // -1 for 4, then 0 for 20
)

func synthFuncs(magic uint32) []synthFunc {
	file := synthPCFile
	if magic == Go12Magic {
		file = synthPCFile1
	}
	return []synthFunc{
		// 128 bytes apart: the tables' 24 units cover up to 96 bytes at PC quantum 4.
		{name: "main.a", off: 0, end: 128, tables: [][]byte{synthPCSP, file, synthPCLn, synthPCData}, fdata: []uint64{0}, args: 8, line: 3},
		{name: "main.b", off: 128, end: 256, tables: [][]byte{synthPCSP, file, synthPCLn}, funcID: 7, line: 9},
		{name: "runtime.c", off: 256, end: 384, tables: [][]byte{synthPCSP, file, synthPCLn, nil, synthPCData}, args: -0x80000000, defret: 12},
	}
}

func TestSyntheticLayouts(t *testing.T) {
	for _, l := range synthLayouts {
		t.Run(l.String(), func(t *testing.T) {
			funcs := synthFuncs(l.magic)
			data := buildSynth(l, funcs)
			f, err := parseSynth(data)
			if err != nil {
				t.Fatal(err)
			}
			if f.PtrSize != l.ptrSize || f.PCQuantum != l.quantum || f.Magic != l.magic || f.ByteOrder != l.order {
				t.Fatalf("header: ptr %d quantum %d magic %#x order %v", f.PtrSize, f.PCQuantum, f.Magic, f.ByteOrder)
			}
			type got struct {
				Name       string
				Entry, End uint64
				Size       uint64
				Args       int32
				Defret     uint32
				FuncID     uint8
				NPCData    int
				StartLine  int32
				File       string
			}
			var have, want []got
			for i, sf := range funcs {
				line := sf.line
				if l.magic != Go120Magic {
					line = 0
				}
				want = append(want, got{sf.name, synthText + sf.off, synthText + sf.end, uint64(24 * l.quantum), sf.args, sf.defret, sf.funcID, max(len(sf.tables)-3, 0), line, "a.go"})
				fn := &f.Funcs[i]
				_, file, _ := decodeForTest(t, f, fn.PCFile, 0)
				name, err := f.FileName(fn, file)
				if err != nil {
					t.Fatal(err)
				}
				have = append(have, got{fn.Name, fn.Entry, fn.End, fn.Size, fn.Args, fn.Deferreturn, fn.FuncID, len(fn.PCData), fn.StartLine, name})
			}
			if d := cmp.Diff(want, have); d != "" {
				t.Errorf("funcs (-want +got):\n%s", d)
			}
			// Distinct tables: pcsp, pcfile, pcln and pcdata are shared.
			if len(f.Tabs) != 4 {
				t.Errorf("got %d distinct tables, want 4", len(f.Tabs))
			}
			refs := 0
			for _, tb := range f.Tabs {
				refs += len(tb.Refs)
			}
			if refs != 11 {
				t.Errorf("got %d table references, want 11", refs)
			}
		})
	}
}

// decodeForTest returns the value of the table at off at PC unit pc.
func decodeForTest(t testing.TB, f *File, off uint32, pc uint32) (start uint32, val int32, _ bool) {
	t.Helper()
	tb := f.Table(off)
	if tb == nil {
		return 0, -1, false
	}
	d := tb.Data
	v := int32(-1)
	var cur uint32
	p := 0
	read := func() uint32 {
		var x uint32
		for s := uint(0); ; s += 7 {
			b := d[p]
			p++
			x |= uint32(b&0x7f) << s
			if b < 0x80 {
				return x
			}
		}
	}
	for {
		if d[p] == 0 && cur != 0 {
			return 0, -1, false
		}
		u := read()
		v += int32(-(u & 1) ^ (u >> 1))
		n := read()
		if pc < cur+n {
			return cur, v, true
		}
		cur += n
	}
}

// FuzzParsePclntab parses arbitrary bytes as a pclntab in every layout.
func FuzzParsePclntab(f *testing.F) {
	for _, l := range synthLayouts {
		f.Add(buildSynth(l, synthFuncs(l.magic)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parseSynth(data)
		if err != nil {
			return
		}
		// Walk everything a consumer would. A replace-mode header
		// (LinearMagic) makes the table offsets point into the linear
		// tables, which collectLinear bounds instead.
		for i := range file.Funcs {
			fn := &file.Funcs[i]
			for k := KindPCSP; k < NumNamedKinds && file.Linear == nil; k++ {
				if off := fn.TableOffset(k); off != 0 && file.Table(off) == nil {
					t.Fatalf("%s: table %v at %#x not collected", fn.Name, k, off)
				}
			}
			if file.Linear != nil && fn.Size > fn.End-fn.Entry {
				t.Fatalf("%s: linear length %d bytes past the function's extent %d", fn.Name, fn.Size, fn.End-fn.Entry)
			}
			for j := int32(0); j < 4; j++ {
				file.FileName(fn, j)
			}
		}
	})
}

// order is a byte order that can also append.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func TestTextAddr(t *testing.T) {
	// Two text sections: offsets [0,0x1000) at 0x10000 and [0x1000,0x3000)
	// moved up by a trampoline gap to 0x12000.
	f := &File{TextStart: 0x10000, md: &moduledata{textsects: []textsect{
		{vaddr: 0, end: 0x1000, baseaddr: 0x10000},
		{vaddr: 0x1000, end: 0x3000, baseaddr: 0x12000},
	}}}
	for _, tc := range []struct{ off, want uint64 }{
		{0, 0x10000}, {0xfff, 0x10fff}, {0x1000, 0x12000}, {0x2fff, 0x13fff},
		{0x3000, 0x14000}, // the last section includes its end (the functab's end entry)
	} {
		if got := f.textAddr(tc.off); got != tc.want {
			t.Errorf("textAddr(%#x) = %#x, want %#x", tc.off, got, tc.want)
		}
	}
	f.md.textsects = f.md.textsects[:1]
	if got := f.textAddr(0x1000); got != 0x11000 {
		t.Errorf("one section: textAddr(0x1000) = %#x, want 0x11000", got)
	}
}
