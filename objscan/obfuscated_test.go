package objscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pctab/pctab/internal/testbuild"
)

// garbleMagic is a magic garble v0.17.0 wrote (callers, built with its
// default flags): any uint32 that is none of Go's will do.
const garbleMagic = 0x6333c187

// readOrig builds the callers program with the local toolchain and
// returns its bytes and objscan's reading of them.
func readOrig(t *testing.T, cfg testbuild.Config) ([]byte, *File) {
	t.Helper()
	data, err := os.ReadFile(testbuild.Build(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return data, f
}

// TestMimicGarble reads a real binary with garble's two pclntab changes
// made to it (testbuild.MimicGarble, written from garble v0.17.0's linker
// patches with debug/elf alone): a magic of its own, and _func entryOffs
// encrypted with keys of every kind (odd, and with trailing zero bits,
// which leave the key's high bits undetermined). objscan must read the
// same functions and tables as from the original, report the magic and
// the key, and GoPclntab must give the original pclntab back, byte for
// byte; debug/gosym then agrees with objscan at every 7th PC.
func TestMimicGarble(t *testing.T) {
	data, orig := readOrig(t, testbuild.Config{Archive: "callers"})
	tests := []struct {
		name       string
		magic, key uint32
	}{
		{"magic", garbleMagic, 0},
		{"magic and odd key", garbleMagic, 0xa39c6fd7},
		{"magic and even key", garbleMagic, 0x3c7a4000},
		{"key only", Go120Magic, 0x1ab6eb27},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad, err := testbuild.MimicGarble(data, tt.magic, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			f, err := NewFile(bytes.NewReader(bad))
			if err != nil {
				t.Fatal(err)
			}
			foreign := tt.magic != Go120Magic
			if f.ForeignMagic != foreign || f.HeaderMagic != tt.magic || f.Magic != Go120Magic || f.Version != "go1.20" {
				t.Errorf("ForeignMagic %v, HeaderMagic %#x, Magic %#x, Version %s; want %v, %#x, %#x, go1.20", f.ForeignMagic, f.HeaderMagic, f.Magic, f.Version, foreign, tt.magic, Go120Magic)
			}
			// An even key's high bits do not show: the key read must
			// encrypt every record as tt.key does.
			for i := range f.Funcs {
				if n := f.Funcs[i].NameOff; n*f.EntryOffKey != n*tt.key {
					t.Fatalf("EntryOffKey %#x, want %#x (function %s, nameOff %#x)", f.EntryOffKey, tt.key, f.Funcs[i].Name, n)
				}
			}
			if d := cmp.Diff(orig.Funcs, f.Funcs); d != "" {
				t.Errorf("functions differ from the original's (-orig +garbled):\n%s", d)
			}
			if d := cmp.Diff(orig.Tabs, f.Tabs); d != "" {
				t.Errorf("tables differ from the original's (-orig +garbled):\n%s", d)
			}
			if orig.Sizes != f.Sizes || orig.GoFuncAddr != f.GoFuncAddr || orig.TextStart != f.TextStart {
				t.Errorf("sizes %+v, go:func %#x, text %#x; want %+v, %#x, %#x", f.Sizes, f.GoFuncAddr, f.TextStart, orig.Sizes, orig.GoFuncAddr, orig.TextStart)
			}
			if !bytes.Equal(f.GoPclntab(), orig.Pclntab()) {
				t.Error("GoPclntab differs from the original pclntab")
			}
			checkGosym(t, f, 7)
		})
	}
}

// TestMimicGarbleRefused changes what garble does not: each must be
// refused with an error that names the cause, and a FormatError with the
// offset.
func TestMimicGarbleRefused(t *testing.T) {
	data, orig := readOrig(t, testbuild.Config{Archive: "callers"})
	pclnOff := bytes.Index(data, orig.Pclntab()[:64])
	if pclnOff < 0 {
		t.Fatal("pclntab bytes not found in the file")
	}
	o, ps := orig.ByteOrder, orig.PtrSize
	garbled, err := testbuild.MimicGarble(data, garbleMagic, 0xa39c6fd7)
	if err != nil {
		t.Fatal(err)
	}
	// rec returns the file offset of function i's _func record.
	rec := func(i int) int { return pclnOff + int(orig.ftabOff) + int(orig.Funcs[i].Offset) }
	odd := -1 // a function with an odd nameOff, which fixes the whole key
	for i, fn := range orig.Funcs {
		if fn.NameOff%2 == 1 {
			odd = i
			break
		}
	}
	tests := []struct {
		name   string
		change func(b []byte)
		want   []string
	}{
		{"pad byte", func(b []byte) { b[pclnOff+4] = 1 },
			[]string{"unknown pcHeader magic 87 c1 33 63", "nor a Go 1.18+ pcHeader with a magic of its own: pad bytes 01 00"}},
		{"pointer size", func(b []byte) { b[pclnOff+7] = 4 },
			[]string{"unknown pcHeader magic", "pointer size 4 in a file of 8-byte pointers"}},
		{"pctab offset past the end", func(b []byte) { o.PutUint64(b[pclnOff+8+6*ps:], 1<<40) },
			[]string{"pclntab magic 0x6333c187 unknown: the header's fixed fields match the Go 1.20+ layout", "pctabOffset 0x10000000000 is out of order"}},
		{"nfunc", func(b []byte) { o.PutUint64(b[pclnOff+8:], uint64(len(orig.Funcs)+1)) },
			[]string{"pclntab magic 0x6333c187 unknown", "functab"}},
		{"one record's entryOff", func(b []byte) { b[rec(len(orig.Funcs)/2)] ^= 0x10 },
			[]string{"pclntab magic 0x6333c187 unknown", "does not match the functab entry", "plain or decrypted as garble encrypts it (entryOff XOR nameOff*key) with key 0xa39c6fd7"}},
		{"the key's record", func(b []byte) { b[rec(odd)] ^= 0x10 },
			[]string{"pclntab magic 0x6333c187 unknown", "does not match the functab entry", "plain or decrypted as garble encrypts it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := bytes.Clone(garbled)
			tt.change(bad)
			_, err := NewFile(bytes.NewReader(bad))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("error %q wraps no FormatError", err)
			}
		})
	}
	// Only one record encrypted, in a binary with Go's magic: the key it
	// gives does not explain the other records.
	one := bytes.Clone(data)
	binary.LittleEndian.PutUint32(one[rec(odd):], binary.LittleEndian.Uint32(one[rec(odd):])^orig.Funcs[odd].NameOff*0x12345)
	if _, err := NewFile(bytes.NewReader(one)); err == nil || !strings.Contains(err.Error(), "plain or decrypted as garble encrypts it") {
		t.Errorf("one encrypted record: error %v", err)
	}
}

// TestMimicGarbleStrippedPE gives a stripped PE file, whose pclntab has
// neither a section nor symbols, a magic of its own: the scan must find
// the header by its other fields.
func TestMimicGarbleStrippedPE(t *testing.T) {
	data, orig := readOrig(t, testbuild.Config{Archive: "features", GOOS: "windows", GOARCH: "amd64", Ldflags: "-s -w"})
	pclnOff := bytes.Index(data, orig.Pclntab()[:64])
	if pclnOff < 0 {
		t.Fatal("pclntab bytes not found in the file")
	}
	bad := bytes.Clone(data)
	orig.ByteOrder.PutUint32(bad[pclnOff:], garbleMagic)
	f, err := NewFile(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if !f.ForeignMagic || f.HeaderMagic != garbleMagic || !strings.HasPrefix(f.PclntabSource, "magic scan") {
		t.Errorf("ForeignMagic %v, HeaderMagic %#x, found by %q", f.ForeignMagic, f.HeaderMagic, f.PclntabSource)
	}
	if d := cmp.Diff(orig.Funcs, f.Funcs); d != "" {
		t.Errorf("functions differ from the original's (-orig +garbled):\n%s", d)
	}
	// Without the pclntab's fixed fields nothing is found, and the error
	// says where it looked.
	bad[pclnOff+6] = 3 // PC quantum
	if _, err := NewFile(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "no pclntab") {
		t.Errorf("no header: error %v", err)
	}
}

// garbledSynth returns a minimal ELF file with a synthetic Go 1.20
// pclntab of 8-byte pointers in byte order o, with garble's magic and
// entryOffs encrypted.
func garbledSynth(t testing.TB, o order) []byte {
	t.Helper()
	l := synthLayout{Go120Magic, o, 8, 1}
	data, err := testbuild.MimicGarble(synthELF(buildSynth(l, synthFuncs(l.magic)), o == order(binary.BigEndian)), garbleMagic, 0xa39c6fd7)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestMimicGarbleSynth reads garbledSynth in both byte orders: the
// FuzzOpen seeds.
func TestMimicGarbleSynth(t *testing.T) {
	for _, o := range []order{binary.LittleEndian, binary.BigEndian} {
		f, err := NewFile(bytes.NewReader(garbledSynth(t, o)))
		if err != nil {
			t.Fatalf("%v: %v", o, err)
		}
		if !f.ForeignMagic || f.HeaderMagic != garbleMagic || f.EntryOffKey != 0xa39c6fd7 || len(f.Funcs) != len(synthFuncs(Go120Magic)) {
			t.Errorf("%v: ForeignMagic %v, HeaderMagic %#x, EntryOffKey %#x, %d functions", o, f.ForeignMagic, f.HeaderMagic, f.EntryOffKey, len(f.Funcs))
		}
	}
}

// TestFuzzOpenSeed checks that the garbled seed in FuzzOpen's corpus is
// garbledSynth's big-endian file (PCTAB_UPDATE_GOLDEN=1 go test -run
// TestFuzzOpenSeed ./objscan writes it).
func TestFuzzOpenSeed(t *testing.T) {
	data, err := os.ReadFile("testdata/fuzz/FuzzOpen/garbled-synth-be")
	if err != nil {
		t.Fatal(err)
	}
	want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(garbledSynth(t, binary.BigEndian))) + ")\n"
	if string(data) != want {
		t.Errorf("testdata/fuzz/FuzzOpen/garbled-synth-be is not garbledSynth's big-endian file; PCTAB_UPDATE_GOLDEN=1 rewrites it")
		if os.Getenv("PCTAB_UPDATE_GOLDEN") != "" {
			if err := os.WriteFile("testdata/fuzz/FuzzOpen/garbled-synth-be", []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// garbleModes are the garble flags the long tests build with: the
// default, -tiny (no position information, unexported functions
// nameless, parts of the runtime's printing removed) and -literals.
var garbleModes = []string{"", "-tiny", "-literals"}

// TestGarble builds the callers program with garble (testbuild.
// GarbleVersion, fetched through the module proxy) in every mode, runs
// it, and checks objscan's reading against what the garbled runtime
// itself reported: at every PC it recorded, runtime.FuncForPC's name,
// entry, file and line, and runtime.CallersFrames' frames (inlined ones
// included). It also checks the magic and the key objscan found, the
// tables, and debug/gosym at every PC (on GoPclntab).
func TestGarble(t *testing.T) {
	for _, mode := range garbleModes {
		t.Run("garble"+mode, func(t *testing.T) {
			cfg := testbuild.Config{Archive: "callers", Garble: true, GarbleFlags: mode}
			res := testbuild.RunCallers(t, cfg)
			f, err := Open(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !f.ForeignMagic || f.HeaderMagic == Go120Magic || f.Magic != Go120Magic || f.EntryOffKey == 0 {
				t.Errorf("ForeignMagic %v, HeaderMagic %#x, Magic %#x, EntryOffKey %#x: want garble's magic and a key", f.ForeignMagic, f.HeaderMagic, f.Magic, f.EntryOffKey)
			}
			checkGarbledCallers(t, f, res)
			checkGosym(t, f, 1)
			checkTables(t, f)
			if mode != "-tiny" {
				checkInlTrees(t, f)
				return
			}
			// -tiny names every unexported function "", at nameOff 0.
			for i := range f.Funcs {
				fn := &f.Funcs[i]
				if fn.Name == "" && fn.NameOff != 0 {
					t.Errorf("function at %#x: empty name at nameOff %#x", fn.Entry, fn.NameOff)
				}
				for j, c := range fn.InlTree {
					if c.Name == "" && c.NameOff != 0 || c.ParentPC < 0 || uint64(c.ParentPC) >= fn.End-fn.Entry {
						t.Errorf("%s inline entry %d: name %q at nameOff %#x, parentPc %#x", fn.Name, j, c.Name, c.NameOff, c.ParentPC)
					}
				}
			}
		})
	}
}

// TestGarbleCross builds the callers program with garble for a PE and a
// Mach-O target, which cannot run here: garble strips the PE's symbols,
// so its pclntab, which has no section, is found by the scan for a header
// of a foreign magic. objscan must read them as the Go 1.20 layout with
// a key, and agree with debug/gosym at every PC.
func TestGarbleCross(t *testing.T) {
	for _, tg := range []struct{ goos, goarch string }{{"windows", "amd64"}, {"darwin", "arm64"}} {
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			f, err := Open(testbuild.Build(t, testbuild.Config{Archive: "callers", Garble: true, GOOS: tg.goos, GOARCH: tg.goarch}))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !f.ForeignMagic || f.EntryOffKey == 0 || tg.goos == "windows" && !strings.HasPrefix(f.PclntabSource, "magic scan") {
				t.Errorf("ForeignMagic %v, EntryOffKey %#x, pclntab found by %q", f.ForeignMagic, f.EntryOffKey, f.PclntabSource)
			}
			checkGosym(t, f, 1)
			checkTables(t, f)
			checkInlTrees(t, f)
		})
	}
}

// checkGarbledCallers compares objscan with what the callers program
// reported at run time. garble builds are not position independent.
func checkGarbledCallers(t *testing.T, f *File, res *testbuild.Callers) {
	t.Helper()
	pcs, inlined := 0, 0
	for _, st := range res.Stacks {
		for _, info := range st.PCInfo {
			fn := findFunc(f, info.PC)
			if fn == nil {
				t.Errorf("stack %s: pc %#x (%s) is in no function", st.Name, info.PC, info.Function)
				continue
			}
			unit := uint32((info.PC - fn.Entry) / uint64(f.PCQuantum))
			name := fn.Name
			if idx := inlIndex(t, f, fn, unit); idx >= 0 {
				name = fn.InlTree[idx].Name
			}
			file, line := objscanLine(t, f, fn, unit)
			got := testbuild.CallersPC{PC: info.PC, Function: name, Entry: fn.Entry, File: file, Line: line}
			if got != info {
				t.Errorf("stack %s: pc %#x: objscan %+v, runtime.FuncForPC %+v", st.Name, info.PC, got, info)
			}
			pcs++
		}
		inlined += checkStack(t, f, st, st.PCs)
	}
	if pcs == 0 || inlined == 0 {
		t.Errorf("%d PCs, %d inlined frames: the program recorded too little to check", pcs, inlined)
	}
	t.Logf("%d stacks, %d PCs, %d inlined frames agree with the garbled runtime", len(res.Stacks), pcs, inlined)
}
