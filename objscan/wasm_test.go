package objscan

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// synthWasmAddr is where a synthetic module's data lies in linear memory.
const synthWasmAddr = 0x10000

// wasmSect appends a section: its id, its size and its contents.
func wasmSect(b []byte, id byte, body []byte) []byte {
	b = append(b, id)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// wasmName appends a name: its length and bytes.
func wasmName(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// sleb appends v as a signed LEB128 number.
func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// wasmSegmentsOf splits data into the [start, end) ranges of its active
// segments as Go's linker does: runs of 8 or more zero bytes are left out.
func wasmSegmentsOf(data []byte) (segs [][2]int) {
	for i := 0; i < len(data); {
		for i < len(data) && data[i] == 0 {
			i++
		}
		start := i
		for i < len(data) {
			z := i
			for z < len(data) && data[z] == 0 {
				z++
			}
			if z-i >= 8 || z == len(data) {
				break
			}
			i = z + 1
		}
		if i > start {
			segs = append(segs, [2]int{start, i})
		}
	}
	return segs
}

// synthWasm wraps a little-endian, 8-byte-pointer pclntab of a Go 1.2 to
// 1.17 layout (whose functab holds absolute PCs) in a minimal WebAssembly
// module laid out as Go's linker lays out js/wasm builds: an import
// section whose first import comes from gojs, and a data section whose
// segments hold the pclntab at synthWasmAddr and some data after it, runs
// of 8 or more zeros left out.
func synthWasm(pcln []byte) []byte {
	b := append([]byte(wasmMagic), 1, 0, 0, 0)
	imp := binary.AppendUvarint(nil, 1)
	imp = wasmName(imp, "gojs")
	imp = wasmName(imp, "runtime.wasmExit")
	imp = append(imp, wasmFuncImport, 0)
	b = wasmSect(b, wasmImportSec, imp)
	// Data follows the pclntab, as in a real build, or its trailing
	// zeros would be left out with nothing after them.
	pcln = append(bytes.Clone(pcln), "rodata"...)
	segs := wasmSegmentsOf(pcln)
	data := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		data = append(data, 0, wasmI32Const)
		data = sleb(data, int64(synthWasmAddr+s[0]))
		data = append(data, wasmEnd)
		data = binary.AppendUvarint(data, uint64(s[1]-s[0]))
		data = append(data, pcln[s[0]:s[1]]...)
	}
	return wasmSect(b, wasmDataSec, data)
}

// wasmLayouts returns the synthetic layouts synthWasm takes.
func wasmLayouts() []synthLayout {
	var ls []synthLayout
	for _, l := range synthLayouts {
		if l.order == order(binary.LittleEndian) && l.ptrSize == 8 && (l.magic == Go12Magic || l.magic == Go116Magic) {
			ls = append(ls, l)
		}
	}
	return ls
}

// TestWasm opens synthetic modules of the Go 1.2 and 1.16 layouts (the
// layouts of js/wasm builds by Go 1.11 to 1.17): linear memory rebuilt
// from segments, its runs of zeros left out, must hold the pclntab the
// scan for its magic finds. TestRuntimeCallers checks a real js/wasm build
// against runtime.CallersFrames run under Node.js, TestTargets and
// TestPorts real builds against debug/gosym and the name section.
func TestWasm(t *testing.T) {
	ls := wasmLayouts()
	if len(ls) == 0 {
		t.Fatal("no synthetic layout for wasm")
	}
	for _, l := range ls {
		pcln := buildSynth(l, synthFuncs(l.magic))
		data := synthWasm(pcln)
		if n := len(wasmSegmentsOf(pcln)); n < 2 {
			t.Fatalf("%v: %d segments: the test checks nothing about rebuilding memory", l, n)
		}
		f, err := NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%v: %v", l, err)
		}
		// A reader without a Size method: the sections end where the
		// reads do.
		if g, err := NewFile(struct{ io.ReaderAt }{bytes.NewReader(data)}); err != nil || len(g.Funcs) != 3 {
			t.Errorf("%v, a reader of unknown size: %v", l, err)
		}
		if f.Format != "wasm" || f.GOOS != "js" || f.GOARCH != "wasm" || f.PtrSize != 8 || len(f.Funcs) != 3 ||
			f.Funcs[0].Name != "main.a" || f.Funcs[0].Entry != synthText || f.PclntabAddr != synthWasmAddr || !bytes.HasPrefix(f.GoPclntab(), pcln) {
			t.Errorf("%v: %s %s/%s %d-byte pointers, %d functions (%q at %#x), pclntab at %#x; want wasm js/wasm 8, 3 (main.a at %#x), at %#x, as written",
				l, f.Format, f.GOOS, f.GOARCH, f.PtrSize, len(f.Funcs), f.Funcs[0].Name, f.Funcs[0].Entry, f.PclntabAddr, synthText, synthWasmAddr)
		}
	}
}

// TestWasmGOOS names the target from the first import's module.
func TestWasmGOOS(t *testing.T) {
	for _, tc := range []struct{ mod, want string }{
		{"gojs", "js"}, {"go", "js"}, {"wasi_snapshot_preview1", "wasip1"}, {"env", ""},
	} {
		imp := wasmName(binary.AppendUvarint(nil, 1), tc.mod)
		if got := wasmGOOS(imp); got != tc.want {
			t.Errorf("imports from %q: %q, want %q", tc.mod, got, tc.want)
		}
	}
	if got := wasmGOOS([]byte{5, 200}); got != "" {
		t.Errorf("a cut import section: %q, want \"\"", got)
	}
}

// TestWasmSegments reads a data section's segments: a passive one and one
// of a second memory are no part of Go's linear memory.
func TestWasmSegments(t *testing.T) {
	body := []byte{4,
		0, wasmI32Const, 0x80, 0x20, wasmEnd, 1, 'a', // memory 0 at 0x1000
		1, 1, 'p', // passive
		2, 1, wasmI32Const, 0x80, 0x20, wasmEnd, 1, 'b', // memory 1 at 0x1000
		2, 0, wasmI32Const, 0x80, 0x20, wasmEnd, 1, 'c', // memory 0 again
	}
	segs, err := wasmSegments(body, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []wasmSegment{{addr: 0x1000, size: 1, off: 107}, {addr: 0x1000, size: 1, off: 126}}
	if !slices.Equal(segs, want) {
		t.Errorf("segments %+v, want %+v", segs, want)
	}
}

// TestWasmHostile gives modules hostile sections and segments, and cuts
// a synthetic one at every byte: each must fail with an error that says
// what and where (a read past the end wrapping ErrTruncated), never
// panic, and allocate at most 16 times the file plus 1 MiB, however
// widely its segments scatter over the 4 GiB address space.
func TestWasmHostile(t *testing.T) {
	head := append([]byte(wasmMagic), 1, 0, 0, 0)
	module := func(id byte, body []byte) []byte { return wasmSect(bytes.Clone(head), id, body) }
	seg := func(addr int64, data []byte) []byte {
		b := sleb([]byte{0, wasmI32Const}, addr)
		b = append(b, wasmEnd)
		return append(binary.AppendUvarint(b, uint64(len(data))), data...)
	}
	segs := func(ss ...[]byte) []byte {
		return append(binary.AppendUvarint(nil, uint64(len(ss))), bytes.Join(ss, nil)...)
	}
	// 4,000 one-byte segments, 64 KiB apart: 256 MiB of memory from a
	// file of 28 KB, were each stretch rebuilt whole.
	var scattered [][]byte
	for i := range 4000 {
		scattered = append(scattered, seg(int64(i)<<16, []byte{1}))
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"version 2", append([]byte(wasmMagic), 2, 0, 0, 0), "version 2, want 1"},
		{"section size past the end", append(bytes.Clone(head), wasmDataSec, 0xff, 0xff, 0x03), "section 11 at offset 0x8 claims 65535 bytes"},
		{"section size of 11 bytes", append(bytes.Clone(head), 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "size at offset 0x9"},
		{"2^32 segments", module(wasmDataSec, binary.AppendUvarint(nil, 1<<32)), "4294967296 segments cannot fit in 5 bytes"},
		{"segment past the section", module(wasmDataSec, append(segs(seg(0x1000, []byte{1, 2, 3})), 9)[:9]), "data section at offset 0x8"},
		{"offset not i32.const", module(wasmDataSec, segs([]byte{0, 0x23, 0, wasmEnd, 1, 1})), "opcode 0x23, want i32.const"},
		{"offset expression without end", module(wasmDataSec, segs([]byte{0, wasmI32Const, 0, 0x42, 1, 1})), "ends in 0x42, want end"},
		{"flags 3", module(wasmDataSec, segs([]byte{3, 0})), "flags 3, want 0, 1 or 2"},
		{"signed LEB128 of 11 bytes", module(wasmDataSec, segs(append([]byte{0, wasmI32Const}, bytes.Repeat([]byte{0x80}, 11)...))), "longer than 10 bytes"},
		{"scattered segments", module(wasmDataSec, segs(scattered...)), "span more than"},
		{"no pclntab", module(wasmDataSec, segs(seg(0x1000, []byte("not a pclntab")))), "no pclntab"},
	} {
		var err error
		got := allocs.Least(3, func() { _, err = NewFile(bytes.NewReader(tc.data)) })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if limit := 16*uint64(len(tc.data)) + 1<<20; got > limit {
			t.Errorf("%s: allocated %d bytes, more than %d", tc.name, got, limit)
		}
	}
	l := wasmLayouts()[0]
	good := synthWasm(buildSynth(l, synthFuncs(l.magic)))
	checkEveryCut(t, good)
}
