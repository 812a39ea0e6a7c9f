package runtimeshim

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// openModule builds cfg and returns its parsed binary and module.
func openModule(t testing.TB, cfg testbuild.Config) (string, *objscan.File, *Module) {
	t.Helper()
	bin := testbuild.Build(t, cfg)
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := NewModule(f)
	if err != nil {
		t.Fatal(err)
	}
	return bin, f, m
}

// allShims returns a shim of every encoding.
func allShims(t testing.TB, m *Module) []*Shim {
	t.Helper()
	var shims []*Shim
	for _, e := range Encodings() {
		s, err := m.NewShim(e)
		if err != nil {
			t.Fatal(err)
		}
		shims = append(shims, s)
	}
	return shims
}

// findfunctabBytes serializes the rebuilt findfunctab as the linker lays it
// out: 20 bytes per bucket, the last one cut after its last subbucket.
func findfunctabBytes(m *Module, order binary.ByteOrder) []byte {
	n := int((m.maxpc - m.minpc + subBucketSize - 1) / subBucketSize)
	b := make([]byte, 4*len(m.findfunctab)+n)
	for i, ffb := range m.findfunctab {
		order.PutUint32(b[i*(4+nsub):], ffb.idx)
		for j := 0; j < nsub && i*nsub+j < n; j++ {
			b[i*(4+nsub)+4+j] = ffb.subbuckets[j]
		}
	}
	return b
}

// TestFindfunctabMatchesLinker compares the rebuilt bucket table with the
// runtime.findfunctab the linker wrote into real binaries.
func TestFindfunctabMatchesLinker(t *testing.T) {
	for _, target := range []struct{ goos, goarch string }{{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "386"}} {
		t.Run(target.goarch, func(t *testing.T) {
			bin, f, m := openModule(t, testbuild.Config{Archive: "features", GOOS: target.goos, GOARCH: target.goarch})
			ef, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			syms, err := ef.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, s := range syms {
				if s.Name != "runtime.findfunctab" {
					continue
				}
				for _, sec := range ef.Sections {
					if sec.Addr <= s.Value && s.Value+s.Size <= sec.Addr+sec.Size && sec.Type != elf.SHT_NOBITS {
						want = make([]byte, s.Size)
						if _, err := sec.ReadAt(want, int64(s.Value-sec.Addr)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if want == nil {
				t.Fatal("no runtime.findfunctab symbol")
			}
			got := findfunctabBytes(m, f.ByteOrder)
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Fatalf("rebuilt findfunctab (%d bytes) differs from the linker's (%d bytes) first at byte %d", len(got), len(want), i)
			}
		})
	}
}

// TestFindfunc checks findfunc against a binary search of the function
// table at the first, middle and last byte of every function and just
// outside the text.
func TestFindfunc(t *testing.T) {
	_, f, m := openModule(t, testbuild.Config{Archive: "features"})
	s, err := m.NewShim(Encodings()[0])
	if err != nil {
		t.Fatal(err)
	}
	search := func(pc uint64) int {
		return sort.Search(len(f.Funcs), func(i int) bool { return f.Funcs[i].Entry > pc }) - 1
	}
	checked := 0
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		for _, pc := range []uint64{fn.Entry, fn.Entry + (fn.End-fn.Entry)/2, fn.End - 1} {
			fi := s.findfunc(pc)
			if !fi.valid() {
				t.Fatalf("findfunc(%#x) in %s: no function", pc, fn.Name)
			}
			if got, want := fi.entry(), f.Funcs[search(pc)].Entry; got != want {
				t.Fatalf("findfunc(%#x) = entry %#x, want %#x (%s)", pc, got, want, fn.Name)
			}
			checked++
		}
	}
	if fi := s.findfunc(m.minpc - 1); fi.valid() {
		t.Errorf("findfunc(minpc-1) found a function")
	}
	if fi := s.findfunc(m.maxpc); fi.valid() {
		t.Errorf("findfunc(maxpc) found a function")
	}
	t.Logf("%d PCs", checked)
}

// TestPCValueEncodingsAgree checks that every encoding's pcvalue gives the
// varint answer, strict and not, at every PC of every table of a binary
// and just past its end.
func TestPCValueEncodingsAgree(t *testing.T) {
	_, f, m := openModule(t, testbuild.Config{Archive: "features"})
	shims := allShims(t, m)
	ref := shims[0]
	checked := 0
	step := 1
	if !testenv.Full() {
		step = 5 // -short: every PC of one function in five
	}
	for fi := 0; fi < len(ref.funcs); fi += step {
		fn := funcInfo{&ref.funcs[fi], m}
		size := f.Funcs[fi].Size
		refs := []tab{fn.pcsp, fn.pcfile, fn.pcln}
		refs = append(refs, fn.pcdata...)
		for k := range refs {
			for pc := fn.entry(); pc <= fn.entry()+size; pc++ {
				for _, strict := range []bool{false, true} {
					ref.errors = 0
					want := ref.pcvalue(fn, refs[k], pc, strict)
					wantErr := ref.errors
					for _, s := range shims[1:] {
						sf := funcInfo{&s.funcs[fi], m}
						srefs := []tab{sf.pcsp, sf.pcfile, sf.pcln}
						srefs = append(srefs, sf.pcdata...)
						s.errors = 0
						if got := s.pcvalue(sf, srefs[k], pc, strict); got != want || s.errors != wantErr {
							t.Fatalf("%s: %s table %d at +%#x strict=%v: %s gives %d (errors %d), varint %d (errors %d)",
								s.enc.Name, f.Funcs[fi].Name, k, pc-fn.entry(), strict, s.enc.Name, got, s.errors, want, wantErr)
						}
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d lookups per encoding", checked)
}

// TestCache checks that the varint+cache encoding counts hits for repeated
// lookups and never changes an answer.
func TestCache(t *testing.T) {
	_, _, m := openModule(t, testbuild.Config{Archive: "features"})
	enc, _ := EncodingByName("varint+cache")
	s, err := m.NewShim(enc)
	if err != nil {
		t.Fatal(err)
	}
	fn := funcInfo{&s.funcs[len(s.funcs)/2], m}
	for fn.pcsp.off == 0 {
		fn = funcInfo{&s.funcs[int(fn._func.entryOff)%len(s.funcs)], m}
	}
	s.ResetCaches()
	a := s.funcspdelta(fn, fn.entry())
	b := s.funcspdelta(fn, fn.entry())
	if a != b {
		t.Fatalf("cached value %d != walked value %d", b, a)
	}
	if hits, misses := s.CacheStats(); hits != 1 || misses != 1 {
		t.Fatalf("hits, misses = %d, %d; want 1, 1", hits, misses)
	}
	s.SetM(3)
	s.funcspdelta(fn, fn.entry())
	if hits, misses := s.CacheStats(); hits != 1 || misses != 2 {
		t.Fatalf("another M: hits, misses = %d, %d; want 1, 2", hits, misses)
	}
}

// TestCallersFrames checks CallersFrames against runtime.CallersFrames:
// the callers program prints the PCs runtime.Callers returned and the frames
// runtime.CallersFrames made of them, for stacks through inlined calls,
// closures, methods, defers, panics and goroutines. The shim must make the
// same frames of the same PCs, with every encoding, and the Callers
// workload must write the same PCs when it unwinds the physical frames:
// on amd64 (plain and PIE), 386, arm64 under qemu (PCTAB_LONG=1) and
// js/wasm under Node.js.
func TestCallersFrames(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  testbuild.Config
	}{
		{"amd64", testbuild.Config{Archive: "callers"}},
		{"amd64-pie", testbuild.Config{Archive: "callers", BuildMode: "pie"}},
		{"generics", testbuild.Config{Archive: "generics"}},
		{"arm64", testbuild.Config{Archive: "callers", GOOS: "linux", GOARCH: "arm64"}},
		{"386", testbuild.Config{Archive: "callers", GOOS: "linux", GOARCH: "386"}},
		// Under Node.js: PCs are function numbers shifted left 16 bits.
		{"wasm", testbuild.Config{Archive: "callers", GOOS: "js", GOARCH: "wasm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.GOARCH == "arm64" {
				testenv.SkipUnlessLong(t, "arm64 runs under emulation")
			}
			bin, _, m := openModule(t, tc.cfg)
			out := testbuild.Run(t, tc.cfg, bin)
			c, err := testbuild.ParseCallers(out)
			if err != nil {
				t.Fatal(err)
			}
			mainEntry, _, ok := m.FuncByName(c.Meta.MainName)
			if !ok {
				t.Fatalf("no function %s", c.Meta.MainName)
			}
			slide := c.Meta.MainEntry - mainEntry
			frames := 0
			for _, s := range allShims(t, m) {
				for _, st := range c.Stacks {
					pcs := make([]uint64, len(st.PCs))
					for i, pc := range st.PCs {
						pcs[i] = pc - slide
					}
					ci := s.CallersFrames(pcs)
					for i := 0; ; i++ {
						got, more := ci.Next()
						if i >= len(st.Frames) {
							t.Fatalf("%s: stack %s: extra frame %d: %+v", s.enc.Name, st.Name, i, got)
						}
						want := st.Frames[i]
						g := fmt.Sprintf("%#x %s %s:%d entry %#x inlined %v", got.PC+slide, got.Function, got.File, got.Line, got.Entry+slide, got.Inlined)
						w := fmt.Sprintf("%#x %s %s:%d entry %#x inlined %v", want.PC, want.Function, want.File, want.Line, want.Entry, want.Inlined)
						if g != w {
							t.Errorf("%s: stack %s frame %d:\n got %s\nwant %s", s.enc.Name, st.Name, i, g, w)
						}
						frames++
						if !more {
							if i != len(st.Frames)-1 {
								t.Errorf("%s: stack %s: %d frames, want %d", s.enc.Name, st.Name, i+1, len(st.Frames))
							}
							break
						}
					}

					// The Callers workload over the physical frames
					// writes the PCs runtime.Callers wrote.
					looked := make([]uint64, len(pcs))
					for i, pc := range pcs {
						looked[i] = pc - 1
					}
					phys := s.physicalFrames(looked, nil)
					got := s.tracebackPCs(phys)
					if fmt.Sprint(got) != fmt.Sprint(pcs) {
						t.Errorf("%s: stack %s: Callers workload over %d physical frames wrote %#x, runtime.Callers %#x", s.enc.Name, st.Name, len(phys), got, pcs)
					}
				}
			}
			t.Logf("%d stacks, %d frames checked over %d encodings", len(c.Stacks), frames, len(Encodings()))
		})
	}
}

// TestFuncNameForPrint checks the generic name rule.
func TestFuncNameForPrint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"main.f", "main.f"},
		{"main.Map[go.shape.int,go.shape.string]", "main.Map[...]"},
		{"main.(*T[go.shape.int]).M", "main.(*T[...]).M"},
		{"main.G[go.shape.int].func1", "main.G[...].func1"},
		{"a[b", "a[b"},
		{"a]b[", "a]b["},
		{"", ""},
	} {
		if got := FuncNameForPrint(tc.in); got != tc.want {
			t.Errorf("FuncNameForPrint(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWorkloadsAgree replays synthetic-looking stacks (every function's
// return PCs) with every encoding: the counts and checksums must agree, and
// the cache must make the same number of lookups.
func TestWorkloadsAgree(t *testing.T) {
	_, f, m := openModule(t, testbuild.Config{Archive: "features"})
	shims := allShims(t, m)
	var stacks []Stack
	var st Stack
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		for off := uint64(1); off < fn.Size; off += 37 {
			st.PCs = append(st.PCs, fn.Entry+off)
			if len(st.PCs) == 24 {
				stacks = append(stacks, st)
				st = Stack{M: len(stacks) % 3}
			}
		}
	}
	if len(stacks) < 100 {
		t.Fatalf("only %d stacks", len(stacks))
	}
	for _, w := range Workloads() {
		ref := shims[0].Replay(w, stacks)
		if ref.Frames == 0 || ref.Lookups == 0 {
			t.Fatalf("%s: nothing replayed: %+v", w, ref)
		}
		for _, s := range shims[1:] {
			c := s.Replay(w, stacks)
			hits, misses := c.Hits, c.Misses
			c.Hits, c.Misses = 0, 0
			if c != ref {
				t.Errorf("%s: %s gives %+v, varint %+v", w, s.enc.Name, c, ref)
			}
			if s.enc.Cached() && hits+misses != c.Lookups {
				t.Errorf("%s: %s: %d hits + %d misses != %d lookups", w, s.enc.Name, hits, misses, c.Lookups)
			}
		}
		// A second replay gives the same counts: caches are reset.
		if again := shims[1].Replay(w, stacks); again != shims[1].Replay(w, stacks) {
			t.Errorf("%s: two replays differ", w)
		}
	}
}

// TestNewModuleRejects checks the errors for layouts the shim does not
// model.
func TestNewModuleRejects(t *testing.T) {
	for _, f := range []*objscan.File{
		{Magic: objscan.Go118Magic, Version: "go1.18"},
		{Magic: objscan.Go120Magic, Version: "go1.20"},
		{Magic: objscan.Go120Magic, Version: "go1.20", PCQuantum: 3, PtrSize: 8, Funcs: []objscan.Func{{Entry: 0x1000, End: 0x1010}}, TextStart: 0x1000},
		{Magic: objscan.Go120Magic, Version: "go1.20", PCQuantum: 1, PtrSize: 8, Funcs: []objscan.Func{{Entry: 0x1000, End: 0x1000}}, TextStart: 0x1000},
		{Magic: objscan.Go120Magic, Version: "go1.20", PCQuantum: 1, PtrSize: 8, Funcs: []objscan.Func{{Entry: 0x1000, End: 0x1010, PCSP: 9}}, TextStart: 0x1000},
	} {
		if _, err := NewModule(f); err == nil {
			t.Errorf("NewModule(%+v) succeeded", f)
		}
	}
}

// TestDecodedLengths checks that objscan's table lengths are what the
// varint decoder finds, which the linear encodings rely on.
func TestDecodedLengths(t *testing.T) {
	_, f, _ := openModule(t, testbuild.Config{Archive: "features"})
	for _, tb := range f.Tabs {
		d, _, err := varintpc.Decode(tb.Data)
		if err != nil {
			t.Fatal(err)
		}
		if d.Len != tb.Len {
			t.Fatalf("table at %#x: decoded length %d, objscan %d", tb.Offset, d.Len, tb.Len)
		}
		var _ pcvalue.Table = d
	}
}

// TestFirstNameOffZero checks the fact funcName's "" rule is modeled on:
// in the binary, the first function of the functab, and only it, has name
// offset 0. It reads _func.nameOff from the Go 1.20+ layout directly.
func TestFirstNameOffZero(t *testing.T) {
	for _, goarch := range []string{"amd64", "386"} {
		t.Run(goarch, func(t *testing.T) {
			_, f, m := openModule(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: goarch})
			p := f.Pclntab()
			word := func(i int) uint64 { // header word i after the first 8 bytes
				off := 8 + i*f.PtrSize
				if f.PtrSize == 4 {
					return uint64(f.ByteOrder.Uint32(p[off:]))
				}
				return f.ByteOrder.Uint64(p[off:])
			}
			pcln := word(7) // nfunc, nfiles, textStart, funcname, cu, filetab, pctab, pcln
			for i := range f.Funcs {
				nameOff := f.ByteOrder.Uint32(p[pcln+uint64(f.Funcs[i].Offset)+4:])
				if (nameOff == 0) != (i == 0) {
					t.Fatalf("function %d (%s) has name offset %d", i, f.Funcs[i].Name, nameOff)
				}
			}
			s, err := m.NewShim(Encodings()[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := s.funcname(s.findfunc(f.Funcs[0].Entry)); got != "" {
				t.Errorf("funcname of the first function = %q, want \"\"", got)
			}
			if got := s.funcname(s.findfunc(f.Funcs[1].Entry)); got != f.Funcs[1].Name {
				t.Errorf("funcname of the second function = %q, want %q", got, f.Funcs[1].Name)
			}
		})
	}
}
