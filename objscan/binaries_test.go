package objscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pctab/pctab/internal/testbuild"
)

// TestTargets builds the testdata programs for every standard target and
// cross-checks objscan against debug/gosym on each binary.
func TestTargets(t *testing.T) {
	targets := testbuild.Targets()
	// A stripped PE has neither a pclntab section nor symbols: objscan must
	// find the table by scanning for its magic.
	targets = append(targets, testbuild.Target{Name: "windows-amd64-stripped", Config: testbuild.Config{GOOS: "windows", GOARCH: "amd64", Ldflags: "-s -w"}})
	// A Plan 9 a.out file, whose pclntab lies in the text segment.
	targets = append(targets, testbuild.Target{Name: "plan9-amd64", Config: testbuild.Config{GOOS: "plan9", GOARCH: "amd64"}})
	// A WebAssembly module, whose data segments leave out runs of zeros.
	targets = append(targets, testbuild.Target{Name: "js-wasm", Config: testbuild.Config{GOOS: "js", GOARCH: "wasm"}})
	for _, tg := range targets {
		for _, archive := range []string{"features", "generics"} {
			t.Run(tg.Name+"/"+archive, func(t *testing.T) {
				cfg := tg.For(archive)
				path := testbuild.Build(t, cfg)
				f, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				wantGOARCH := cfg.GOARCH
				if wantGOARCH == "" {
					wantGOARCH = runtime.GOARCH
				}
				if f.GOARCH != wantGOARCH {
					t.Errorf("GOARCH %q, want %q", f.GOARCH, wantGOARCH)
				}
				wantQ := map[string]int{"amd64": 1, "386": 1, "arm64": 4, "s390x": 2, "wasm": 1}[wantGOARCH]
				if f.PCQuantum != wantQ {
					t.Errorf("PC quantum %d, want %d", f.PCQuantum, wantQ)
				}
				if tg.Name == "windows-amd64-stripped" && !strings.HasPrefix(f.PclntabSource, "magic scan") {
					t.Errorf("stripped PE: pclntab found by %q, want a magic scan", f.PclntabSource)
				}
				checkGosym(t, f, 1)
				checkInlTrees(t, f)
				checkTables(t, f)
				checkSymbols(t, f)
			})
		}
	}
}

// checkTables checks the distinct-table set: every reference resolves, the
// tables do not overlap, and every table is referenced.
func checkTables(t *testing.T, f *File) {
	t.Helper()
	refs := 0
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		for k := KindPCSP; k < KindPCData+TableKind(len(fn.PCData)); k++ {
			if off := fn.TableOffset(k); off != 0 {
				refs++
				if f.Table(off) == nil {
					t.Fatalf("%s: %v table at %#x missing from Tabs", fn.Name, k, off)
				}
			}
		}
	}
	n := 0
	for i, tb := range f.Tabs {
		n += len(tb.Refs)
		if len(tb.Refs) == 0 {
			t.Errorf("table at %#x has no references", tb.Offset)
		}
		for j, r := range tb.Refs {
			if off := f.Funcs[r.Func].TableOffset(r.Kind); off != tb.Offset {
				t.Errorf("table at %#x: reference %d is %s's %v table, at %#x", tb.Offset, j, f.Funcs[r.Func].Name, r.Kind, off)
			}
			if j > 0 {
				if p := tb.Refs[j-1]; p.Func > r.Func || p.Func == r.Func && p.Kind >= r.Kind {
					t.Errorf("table at %#x: references %d and %d (%+v, %+v) are not in functab order", tb.Offset, j-1, j, p, r)
				}
			}
		}
		if i > 0 && f.Tabs[i-1].Offset+uint32(len(f.Tabs[i-1].Data)) > tb.Offset {
			t.Errorf("tables at %#x and %#x overlap", f.Tabs[i-1].Offset, tb.Offset)
		}
	}
	if n != refs {
		t.Errorf("Tabs hold %d references, functions make %d", n, refs)
	}
}

// TestRuntimeCallers symbolizes the PCs that runtime.Callers returned in a
// real program through objscan (inline tree plus pcfile and pcln), and
// checks that the result equals what runtime.CallersFrames gave the
// program: a native build, and a js/wasm build run under Node.js.
func TestRuntimeCallers(t *testing.T) {
	for _, cfg := range []testbuild.Config{
		{Archive: "callers"},
		// Run under Node.js: on wasm a PC is the function's number
		// shifted left 16 bits above the resume point's.
		{Archive: "callers", GOOS: "js", GOARCH: "wasm"},
	} {
		t.Run(cfg.String(), func(t *testing.T) { checkRuntimeCallers(t, cfg) })
	}
}

// checkRuntimeCallers runs TestRuntimeCallers for one build.
func checkRuntimeCallers(t *testing.T, cfg testbuild.Config) {
	bin := testbuild.Build(t, cfg)
	out := testbuild.Run(t, cfg, bin)
	res, err := testbuild.ParseCallers(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A position-independent binary runs at an offset from its link address.
	var mainAddr uint64
	for _, fn := range f.Funcs {
		if fn.Name == "main.main" {
			mainAddr = fn.Entry
		}
	}
	slide := res.Meta.MainEntry - mainAddr
	inlined := 0
	for _, st := range res.Stacks {
		var pcs []uint64
		for _, pc := range st.PCs {
			pcs = append(pcs, pc-slide)
		}
		inlined += checkStack(t, f, st, pcs)
	}
	if inlined == 0 {
		t.Error("no inlined frames in the callers program: the test checks nothing about inline trees")
	}
	t.Logf("%d stacks, %d inlined frames match runtime.CallersFrames", len(res.Stacks), inlined)
}

type frameInfo struct {
	Function string
	File     string
	Line     int
}

// checkStack compares objscan's frames for the PCs of st (at f's link
// addresses) with the frames runtime.CallersFrames gave the program, and
// returns how many of those were inlined.
func checkStack(t *testing.T, f *File, st testbuild.CallersStack, pcs []uint64) (inlined int) {
	t.Helper()
	got := symbolizeCallers(t, f, pcs)
	var want []frameInfo
	for _, fr := range st.Frames {
		want = append(want, frameInfo{fr.Function, fr.File, fr.Line})
		if fr.Inlined {
			inlined++
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stack %s (-runtime.CallersFrames +objscan):\n%s", st.Name, d)
	}
	return inlined
}

// symbolizeCallers does what runtime.CallersFrames does with the PCs that
// runtime.Callers returned: each PC (a return address, or a virtual PC after
// an inline mark) names its innermost logical frame at PC-1, and missing
// outer frames of an inlined PC are synthesized from the inline tree.
func symbolizeCallers(t *testing.T, f *File, pcs []uint64) []frameInfo {
	var frames []frameInfo
	for i := 0; i < len(pcs); i++ {
		pc := pcs[i] - 1
		fn := findFunc(f, pc)
		if fn == nil {
			frames = append(frames, frameInfo{"?", "?", 0})
			continue
		}
		q := uint64(f.PCQuantum)
		unit := uint32((pc - fn.Entry) / q)
		file, line := objscanLine(t, f, fn, unit)
		idx := inlIndex(t, f, fn, unit)
		name := fn.Name
		if idx >= 0 {
			name = fn.InlTree[idx].Name
		}
		frames = append(frames, frameInfo{funcNameForPrint(name), file, line})
		// Synthesize outer frames that the PC list lacks.
		for idx >= 0 {
			parentPC := fn.Entry + uint64(fn.InlTree[idx].ParentPC)
			if i+1 < len(pcs) && pcs[i+1]-1 == parentPC {
				break
			}
			punit := uint32((parentPC - fn.Entry) / q)
			idx = inlIndex(t, f, fn, punit)
			name := fn.Name
			if idx >= 0 {
				name = fn.InlTree[idx].Name
			}
			file, line := objscanLine(t, f, fn, punit)
			frames = append(frames, frameInfo{funcNameForPrint(name), file, line})
			if i+1 >= len(pcs) {
				break
			}
		}
	}
	return frames
}

func inlIndex(t testing.TB, f *File, fn *Func, unit uint32) int32 {
	if len(fn.PCData) <= PCDataInlTreeIdx || fn.InlTree == nil {
		return -1
	}
	_, v, ok := decodeForTest(t, f, fn.PCData[PCDataInlTreeIdx], unit)
	if !ok || v < 0 || int(v) >= len(fn.InlTree) {
		return -1
	}
	return v
}

func findFunc(f *File, pc uint64) *Func {
	i := sort.Search(len(f.Funcs), func(i int) bool { return f.Funcs[i].End > pc })
	if i < len(f.Funcs) && f.Funcs[i].Entry <= pc {
		return &f.Funcs[i]
	}
	return nil
}

// funcNameForPrint shortens generic instantiation names as tracebacks do:
// everything between the outermost brackets becomes "...".
func funcNameForPrint(name string) string {
	a, b, ok := strings.Cut(name, "[")
	if !ok {
		return name
	}
	depth := 1
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return a + "[...]" + funcNameForPrint(b[i+1:])
			}
		}
	}
	return name
}

// TestBadInput truncates and corrupts a real binary and checks that objscan
// returns errors, never panics, and that errors say where.
func TestBadInput(t *testing.T) {
	path := testbuild.Build(t, testbuild.Config{Archive: "features"})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pclnOff := int64(bytes.Index(data, f.Pclntab()[:64]))
	if pclnOff < 0 {
		t.Fatal("pclntab bytes not found in file")
	}
	pclnLen := int64(len(f.Pclntab()))

	// Truncation: at many cut points, including inside the pclntab.
	cuts := []int64{0, 1, 4, 16, 63, 64, 100, pclnOff, pclnOff + 8, pclnOff + 71}
	for i := int64(0); i < 200; i++ {
		cuts = append(cuts, int64(len(data))*i/200, pclnOff+pclnLen*i/200)
	}
	for _, cut := range cuts {
		_, err := NewFile(bytes.NewReader(data[:cut]))
		if err == nil && cut < int64(len(data)) {
			// The section headers are at the end of an ELF file, so a cut
			// file must not parse.
			t.Errorf("truncated at %d of %d bytes: no error", cut, len(data))
		}
	}

	// Corruption of the pcHeader and the first bytes of every part.
	positions := []int64{0, 4, 5, 6, 7, 8, 9, 15, 16, 24, 32, 40, 48, 56, 64}
	for _, p := range positions {
		for _, v := range []byte{0x00, 0xff, 0x7f, 0x80} {
			bad := bytes.Clone(data)
			bad[pclnOff+p] = v
			_, err := NewFile(bytes.NewReader(bad))
			var fe *FormatError
			if err != nil && !errors.As(err, &fe) && !strings.Contains(err.Error(), "objscan") {
				t.Errorf("header byte %d = %#x: error without context: %v", p, v, err)
			}
		}
	}
	// Random corruption throughout the pclntab (deterministic).
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < 300; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		bad := bytes.Clone(data)
		for j := 0; j < 8; j++ {
			bad[pclnOff+int64((x>>uint(j*3))%uint64(pclnLen))] ^= byte(x >> 56)
		}
		NewFile(bytes.NewReader(bad)) // must not panic
	}
	// A header claiming 2^31 functions must fail without allocating.
	bad := bytes.Clone(data)
	f.ByteOrder.PutUint64(bad[pclnOff+8:], 1<<31)
	if _, err := NewFile(bytes.NewReader(bad)); err == nil {
		t.Error("2^31 functions: no error")
	} else if !strings.Contains(err.Error(), "offset") {
		t.Errorf("2^31 functions: error does not say where: %v", err)
	}
}

// FuzzOpen fuzzes the whole path from file bytes to tables, seeded with
// minimal ELF files that hold a synthetic pclntab of every layout.
func FuzzOpen(f *testing.F) {
	for _, l := range synthLayouts {
		f.Add(synthELF(buildSynth(l, synthFuncs(l.magic)), l.order == order(binary.BigEndian)))
	}
	for _, l := range xcoffLayouts() {
		f.Add(synthXCOFF(buildSynth(l, synthFuncs(l.magic)), true))
	}
	for l, magic := range plan9Layouts() {
		f.Add(synthPlan9(magic, buildSynth(l, synthFuncs(l.magic)), true))
	}
	for _, l := range wasmLayouts() {
		f.Add(synthWasm(buildSynth(l, synthFuncs(l.magic))))
	}
	f.Add(garbledSynth(f, binary.LittleEndian)) // testdata/fuzz/FuzzOpen holds the big-endian one
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("MZ"))
	f.Add([]byte{0xcf, 0xfa, 0xed, 0xfe})
	f.Add(fatHeader(false, 7, 12))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := range file.Funcs {
			file.FileName(&file.Funcs[i], 0)
		}
	})
}

// synthELF wraps a pclntab in a minimal 64-bit ELF file: a header, a .text
// section at synthText (the text base when there are no symbols), the
// .gopclntab section, a section-name table and four section headers.
func synthELF(pcln []byte, bigEndian bool) []byte { return synthELFText(pcln, bigEndian, 512) }

// synthELFText is synthELF with a .text section of textSize bytes.
func synthELFText(pcln []byte, bigEndian bool, textSize uint64) []byte {
	var o order = binary.LittleEndian
	data := byte(1)
	if bigEndian {
		o, data = binary.BigEndian, 2
	}
	shstr := []byte("\x00.gopclntab\x00.shstrtab\x00.text\x00")
	const ehsize, shentsize = 64, 64
	textOff := uint64(ehsize)
	pclnOff := textOff + textSize
	strOff := pclnOff + uint64(len(pcln))
	shOff := (strOff + uint64(len(shstr)) + 7) &^ 7
	b := []byte{0x7f, 'E', 'L', 'F', 2, data, 1, 0}
	b = append(b, make([]byte, 8)...)
	b = o.AppendUint16(b, 2)     // ET_EXEC
	b = o.AppendUint16(b, 62)    // EM_X86_64
	b = o.AppendUint32(b, 1)     // version
	b = o.AppendUint64(b, 0)     // entry
	b = o.AppendUint64(b, 0)     // phoff
	b = o.AppendUint64(b, shOff) // shoff
	b = o.AppendUint32(b, 0)     // flags
	b = o.AppendUint16(b, ehsize)
	b = o.AppendUint16(b, 56)
	b = o.AppendUint16(b, 0)
	b = o.AppendUint16(b, shentsize)
	b = o.AppendUint16(b, 4) // shnum
	b = o.AppendUint16(b, 2) // shstrndx
	b = append(b, make([]byte, textSize)...)
	b = append(b, pcln...)
	b = append(b, shstr...)
	for uint64(len(b)) < shOff {
		b = append(b, 0)
	}
	sh := func(name, typ uint32, flags, addr, off, size uint64) {
		b = o.AppendUint32(b, name)
		b = o.AppendUint32(b, typ)
		b = o.AppendUint64(b, flags)
		b = o.AppendUint64(b, addr)
		b = o.AppendUint64(b, off)
		b = o.AppendUint64(b, size)
		b = o.AppendUint32(b, 0)
		b = o.AppendUint32(b, 0)
		b = o.AppendUint64(b, 8)
		b = o.AppendUint64(b, 0)
	}
	sh(0, 0, 0, 0, 0, 0)
	sh(1, 1, 2 /* SHF_ALLOC */, 0x800000, pclnOff, uint64(len(pcln)))
	sh(12, 3, 0, 0, strOff, uint64(len(shstr)))
	sh(22, 1, 6 /* SHF_ALLOC|SHF_EXECINSTR */, synthText, textOff, textSize)
	return b
}

// TestSynthELF opens the synthetic ELF seeds: the whole path from file bytes
// works for every layout, including big-endian ones with 4-byte pointers.
func TestSynthELF(t *testing.T) {
	for _, l := range synthLayouts {
		t.Run(l.String(), func(t *testing.T) {
			file, err := NewFile(bytes.NewReader(synthELF(buildSynth(l, synthFuncs(l.magic)), l.order == order(binary.BigEndian))))
			if err != nil {
				t.Fatal(err)
			}
			if len(file.Funcs) != 3 || file.Funcs[0].Name != "main.a" || file.PclntabSource != "section .gopclntab" {
				t.Fatalf("got %d funcs (%q...), pclntab from %q", len(file.Funcs), file.Funcs[0].Name, file.PclntabSource)
			}
		})
	}
}

// TestCode checks the code accessor: every function's code, from its entry
// over the size its tables cover, lies in one executable section, for ELF,
// Mach-O and PE.
func TestCode(t *testing.T) {
	for _, cfg := range []testbuild.Config{
		{Archive: "features"},
		{Archive: "features", GOOS: "darwin", GOARCH: "arm64"},
		{Archive: "features", GOOS: "windows", GOARCH: "amd64"},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			f, err := Open(testbuild.Build(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			secs, err := f.Code()
			if err != nil {
				t.Fatal(err)
			}
			for i := range f.Funcs {
				fn := &f.Funcs[i]
				c := CodeAt(secs, fn.Entry, fn.Entry+fn.Size)
				if uint64(len(c)) != fn.Size {
					t.Fatalf("%s: %d code bytes at %#x, want %d", fn.Name, len(c), fn.Entry, fn.Size)
				}
			}
			if c := CodeAt(secs, 0, 16); c != nil {
				t.Errorf("code at address 0: %d bytes", len(c))
			}
		})
	}
}

// TestHugeSectionClaim gives the pclntab section a size far beyond the file:
// objscan must refuse it without allocating that much.
func TestHugeSectionClaim(t *testing.T) {
	l := synthLayouts[0]
	data := synthELF(buildSynth(l, synthFuncs(l.magic)), false)
	// The second section header (.gopclntab) starts at shoff+64; its size
	// field is at +32.
	shoff := binary.LittleEndian.Uint64(data[40:])
	binary.LittleEndian.PutUint64(data[shoff+64+32:], 1<<40)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := NewFile(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 1 TiB section in a small file: no error")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("allocated %d bytes for a %d-byte file", grew, len(data))
	}
	t.Log(err)
}
