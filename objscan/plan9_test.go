package objscan

import (
	"bytes"
	"debug/plan9obj"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// plan9Code is the code before the pclntab in a synthetic Plan 9 file's
// text segment.
const plan9Code = 512

// synthPlan9 wraps a little-endian pclntab in a minimal Plan 9 a.out file
// laid out as Go's linker lays out plan9 builds: the header (with the
// 64-bit entry point for amd64), the text segment holding plan9Code bytes
// of code and then the pclntab, 64 bytes of data, and, with syms, a symbol
// table naming runtime.text (synthText, the pclntab's text base), a file entry (whose name is a path of 16-bit
// indexes), runtime.pclntab and runtime.epclntab.
func synthPlan9(magic uint32, pcln []byte, syms bool) []byte {
	be := binary.BigEndian
	arch := plan9Arch[magic]
	hdrSize := uint64(plan9HdrSize)
	if magic&plan9Magic64 != 0 {
		hdrSize += 8
	}
	textAddr := arch.load + hdrSize
	var tab []byte
	if syms {
		sym := func(v uint64, typ byte, name string) {
			if arch.ptrSize == 8 {
				tab = be.AppendUint64(tab, v)
			} else {
				tab = be.AppendUint32(tab, uint32(v))
			}
			tab = append(tab, typ|0x80)
			tab = append(tab, name...)
		}
		pclnAddr := textAddr + plan9Code
		sym(synthText, 'T', "runtime.text\x00")     // the pclntab's text base
		sym(0, 'z', "\x00\x00\x01\x00\x02\x00\x00") // a path of two indexes
		sym(pclnAddr, 'D', "runtime.pclntab\x00")
		sym(pclnAddr+uint64(len(pcln)), 'D', "runtime.epclntab\x00")
	}
	text := plan9Code + len(pcln)
	b := be.AppendUint32(nil, magic)
	for _, v := range []int{text, 64, 128, len(tab), int(textAddr), 0, 0} { // text, data, bss, syms, entry, spsz, pcsz
		b = be.AppendUint32(b, uint32(v))
	}
	if magic&plan9Magic64 != 0 {
		b = be.AppendUint64(b, textAddr)
	}
	b = append(b, make([]byte, plan9Code)...)
	b = append(b, pcln...)
	b = append(b, make([]byte, 64)...)
	return append(b, tab...)
}

// plan9Layouts returns the synthetic layouts a Plan 9 build can have, each
// with the magic of a target of its pointer size and PC quantum:
// little-endian, 8-byte pointers on amd64, 4-byte ones on 386 (quantum 1)
// and arm (quantum 4).
func plan9Layouts() map[synthLayout]uint32 {
	ls := map[synthLayout]uint32{}
	for _, l := range synthLayouts {
		switch {
		case l.order != order(binary.LittleEndian):
		case l.ptrSize == 8:
			ls[l] = plan9MagicAMD64
		case l.quantum == 4:
			ls[l] = plan9MagicARM
		default:
			ls[l] = plan9Magic386
		}
	}
	return ls
}

// TestPlan9 opens synthetic Plan 9 files of every layout a plan9 build can
// have: with symbols the pclntab is found by them, without (-s) by the
// scan for its magic, which reads the text segment in a Plan 9 file. The
// symbol table's file entry, whose name ends in two NULs, must not stop
// the symbols after it from being read. TestTargets, TestPorts and
// TestOldPorts read real builds.
func TestPlan9(t *testing.T) {
	for l, magic := range plan9Layouts() {
		for _, syms := range []bool{true, false} {
			data := synthPlan9(magic, buildSynth(l, synthFuncs(l.magic)), syms)
			f, err := NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%v, symbols %v: %v", l, syms, err)
			}
			want := "magic scan in text"
			if syms {
				want = "symbols runtime.pclntab"
			}
			arch := plan9Arch[magic]
			entry := uint64(synthText)
			if !syms && (l.magic == Go118Magic || l.magic == Go120Magic) {
				// Entries are offsets from a text base that, with no
				// symbols and no moduledata, is the text segment's start.
				entry = f.im.section("text").addr
			}
			if f.Format != "plan9" || f.GOOS != "plan9" || f.GOARCH != arch.goarch || f.ByteOrder != binary.LittleEndian || f.PtrSize != l.ptrSize ||
				len(f.Funcs) != 3 || f.Funcs[0].Name != "main.a" || f.Funcs[0].Entry != entry || f.PclntabSource != want {
				t.Errorf("%v, symbols %v: %s %s/%s %v %d-byte pointers, %d functions (%q at %#x), pclntab from %q; want plan9 plan9/%s little-endian %d, 3 (main.a at %#x) from %q",
					l, syms, f.Format, f.GOOS, f.GOARCH, f.ByteOrder, f.PtrSize, len(f.Funcs), f.Funcs[0].Name, f.Funcs[0].Entry, f.PclntabSource, arch.goarch, l.ptrSize, entry, want)
			}
			checkPlan9Sections(t, data)
		}
	}
}

// checkPlan9Sections checks that debug/plan9obj, an independent reader,
// finds the synthetic file well formed: its text segment where openPlan9
// puts it.
func checkPlan9Sections(t *testing.T, data []byte) {
	t.Helper()
	pf, err := plan9obj.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("debug/plan9obj: %v", err)
	}
	im, err := openPlan9(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	text := pf.Section("text")
	if s := im.section("text"); s == nil || s.addr != pf.LoadAddress+pf.HdrSize || s.off != int64(text.Offset) || s.filesize != uint64(text.Size) {
		t.Errorf("text segment %+v; debug/plan9obj: at %#x, %d bytes at offset %#x", s, pf.LoadAddress+pf.HdrSize, text.Size, text.Offset)
	}
}

// TestPlan9Hostile sets the sizes in a synthetic Plan 9 file's header to
// hostile values, breaks its symbol table, and cuts it at every byte:
// each must fail with an error that says what and where (a read past the
// end wrapping ErrTruncated) or open, never panic, and allocate at most 16
// times the file plus 1 MiB.
func TestPlan9Hostile(t *testing.T) {
	l := synthLayouts[0] // Go 1.2, little-endian, 8-byte pointers: amd64
	good := synthPlan9(plan9MagicAMD64, buildSynth(l, synthFuncs(l.magic)), true)
	set := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	syms := len(good) - int(binary.BigEndian.Uint32(good[16:]))
	noNUL := bytes.Clone(good)
	for i := syms + 9; i < len(noNUL); i++ { // every name runs to the end
		noNUL[i] = 'x'
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" if the file opens
	}{
		{"text 2^32-1", set(4, 1<<32-1), "4294967295 bytes of text"},
		{"data 2^32-1", set(8, 1<<32-1), "4294967295 of data"},
		{"syms 2^32-1", set(16, 1<<32-1), "4294967295 of symbols run past the end"},
		{"bss 2^32-1", set(12, 1<<32-1), ""},
		{"symbol names without NUL", noNUL, "symbol table at offset 0x"},
		{"symbol table cut in an entry", set(16, uint32(len(good)-syms-3)), "the entry at 0x"},
		{"text 0", set(4, 0), "Plan 9 a.out: symbol table at offset 0x68"},
	} {
		var err error
		got := allocs.Least(3, func() { _, err = NewFile(bytes.NewReader(tc.data)) })
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if limit := 16*uint64(len(tc.data)) + 1<<20; got > limit {
			t.Errorf("%s: allocated %d bytes, more than %d", tc.name, got, limit)
		}
	}
	checkEveryCut(t, good)
}

// TestPlan9Symbols reads symbol tables entry by entry: the first value of
// a name wins, file entries are skipped whole, and a table that ends
// inside an entry is an error giving the entry's offset.
func TestPlan9Symbols(t *testing.T) {
	entry := func(ptr int, v uint64, typ byte, name string) []byte {
		b := binary.BigEndian.AppendUint64(nil, v)[8-ptr:]
		return append(append(b, typ|0x80), name...)
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name string
		ptr  int
		tab  []byte
		want string // the symbols found, or the error
	}{
		{"empty", 4, nil, "map[]"},
		{"fewer than 4 bytes left", 4, []byte{1, 2, 3}, "map[]"},
		{"4-byte values", 4, cat(entry(4, 0x1020, 'T', "runtime.text\x00"), entry(4, 0x2000, 'D', "main.x\x00")), "map[runtime.text:4128]"},
		{"8-byte values", 8, entry(8, 1<<40, 'D', "runtime.pclntab\x00"), "map[runtime.pclntab:1099511627776]"},
		{"first value wins", 4, cat(entry(4, 1, 'T', "runtime.text\x00"), entry(4, 2, 'T', "runtime.text\x00")), "map[runtime.text:1]"},
		{"file entry", 4, cat(entry(4, 0, 'Z', "\x00\x00\x05\x00\x00"), entry(4, 7, 'T', "runtime.etext\x00")), "map[runtime.etext:7]"},
		{"file entry holding a NUL byte", 4, cat(entry(4, 0, 'z', "\x00\x01\x00\x00\x00"), entry(4, 7, 'T', "runtime.etext\x00")), "map[runtime.etext:7]"},
		{"value cut short", 8, cat(entry(8, 1, 'T', "a\x00"), []byte{0, 0, 0, 0, 0}), "the entry at 0xb is cut short"},
		{"name without NUL", 4, cat(entry(4, 1, 'T', "a\x00"), entry(4, 2, 'T', "runtime.text")), "the name of the entry at 0x7 has no terminating NUL"},
		{"file entry without its two NULs", 4, entry(4, 0, 'z', "\x00\x01\x00\x02"), "the name of the entry at 0x0"},
	} {
		m, err := plan9Symbols(tc.tab, tc.ptr)
		got := fmt.Sprint(m)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// checkEveryCut opens good cut at every byte: each cut must fail, never
// panic, and some with an error wrapping ErrTruncated.
func checkEveryCut(t *testing.T, good []byte) {
	t.Helper()
	truncatedErrs := 0
	for n := range len(good) {
		_, err := NewFile(bytes.NewReader(good[:n]))
		if err == nil {
			t.Fatalf("cut at %d of %d bytes: opened", n, len(good))
		}
		if errors.Is(err, ErrTruncated) {
			truncatedErrs++
		}
	}
	if truncatedErrs == 0 {
		t.Error("no cut gave ErrTruncated")
	}
}
