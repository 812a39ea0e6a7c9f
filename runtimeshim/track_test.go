package runtimeshim

import (
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/pctab/pctab/objscan"
)

// trackPCs returns 4,096 PCs at random offsets inside random functions of
// the running test binary, as the runtime sees them (runtime) and as the
// binary's file has them (static), and the binary's module.
func trackPCs(tb testing.TB) (m *Module, runtimePCs []uintptr, static []uint64) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Skip(err)
	}
	f, err := objscan.Open(exe)
	if err != nil {
		tb.Fatal(err)
	}
	if m, err = NewModule(f); err != nil {
		tb.Fatal(err)
	}
	rf := runtime.FuncForPC(reflect.ValueOf(trackPCs).Pointer())
	entry, _, ok := m.FuncByName(rf.Name())
	if !ok {
		tb.Fatalf("no function %s", rf.Name())
	}
	slide := uint64(rf.Entry()) - entry
	r := rand.New(rand.NewPCG(61984, 12))
	for len(static) < 4096 {
		fn := &f.Funcs[r.IntN(len(f.Funcs))]
		if fn.End <= fn.Entry {
			continue
		}
		pc := fn.Entry + r.Uint64N(fn.End-fn.Entry)
		static = append(static, pc)
		runtimePCs = append(runtimePCs, uintptr(pc+slide))
	}
	return m, runtimePCs, static
}

// fileLine is the shim's runtime.FuncForPC(pc).FileLine(pc): findfunc,
// the inline tree index (FuncForPC's inlining test) and, for a PC outside
// inlined code, funcline1 (FileLine's file and line lookups).
func (s *Shim) fileLine(pc uint64) (string, int32, bool) {
	f := s.findfunc(pc)
	if !f.valid() {
		return "", 0, false
	}
	if s.pcdatavalue1(f, pcdataInlTreeIndex, pc, false) >= 0 {
		return "", 0, false // inlined: FuncForPC makes a Func of the inline tree entry
	}
	file, line := s.funcline1(f, pc, false)
	return file, line, true
}

// TestTrackFileLine checks fileLine against runtime.FuncForPC(pc).FileLine
// at every PC of trackPCs outside inlined code, in every encoding, so that
// BenchmarkTrackRuntime times the same work.
func TestTrackFileLine(t *testing.T) {
	m, pcs, static := trackPCs(t)
	for _, enc := range Encodings() {
		s, err := m.NewShim(enc)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for i, pc := range pcs {
			file, line, ok := s.fileLine(static[i])
			if !ok {
				continue
			}
			wf, wl := runtime.FuncForPC(pc).FileLine(pc)
			if file != wf || int(line) != wl {
				t.Fatalf("%s: pc %#x: %s:%d, runtime says %s:%d", enc.Name, static[i], file, line, wf, wl)
			}
			checked++
		}
		if checked < len(pcs)/2 {
			t.Errorf("%s: only %d of %d PCs outside inlined code", enc.Name, checked, len(pcs))
		}
	}
}

var trackSink int

// BenchmarkTrackRuntime times runtime.FuncForPC(pc).FileLine(pc) over PCs of
// the test binary itself against the shim's same lookups of the same PCs in
// each encoding: the runtime-shaped varint (with its cache: "varint+cache")
// should cost about what the runtime does.
func BenchmarkTrackRuntime(b *testing.B) {
	m, pcs, static := trackPCs(b)
	mask := len(pcs) - 1
	b.Run("enc=runtime", func(b *testing.B) {
		n := 0
		for i := 0; b.Loop(); i++ {
			pc := pcs[i&mask]
			_, l := runtime.FuncForPC(pc).FileLine(pc)
			n += l
		}
		trackSink = n
	})
	for _, enc := range Encodings() {
		s, err := m.NewShim(enc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("enc="+enc.Name, func(b *testing.B) {
			n := 0
			for i := 0; b.Loop(); i++ {
				_, l, _ := s.fileLine(static[i&mask])
				n += int(l)
			}
			trackSink = n
		})
	}
}
