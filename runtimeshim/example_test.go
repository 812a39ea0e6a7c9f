package runtimeshim_test

import (
	"fmt"
	"os"
	"reflect"
	"runtime"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/runtimeshim"
)

// selfModule opens the running binary and returns its module and the
// load offset of this process (nonzero for a position-independent binary).
func selfModule() (*runtimeshim.Module, uint64, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	f, err := objscan.Open(exe)
	if err != nil {
		return nil, 0, err
	}
	m, err := runtimeshim.NewModule(f)
	if err != nil {
		return nil, 0, err
	}
	rf := runtime.FuncForPC(reflect.ValueOf(selfModule).Pointer())
	entry, _, ok := m.FuncByName(rf.Name())
	if !ok {
		return nil, 0, fmt.Errorf("no function %s", rf.Name())
	}
	return m, uint64(rf.Entry()) - entry, nil
}

// CallersFrames, run over the PCs runtime.Callers returns, makes the frames
// runtime.CallersFrames makes, with any encoding of the tables.
func ExampleShim_CallersFrames() {
	m, slide, err := selfModule()
	if err != nil {
		fmt.Println(err)
		return
	}
	pcs := make([]uintptr, 32)
	pcs = pcs[:runtime.Callers(1, pcs)]
	static := make([]uint64, len(pcs))
	for i, pc := range pcs {
		static[i] = uint64(pc) - slide
	}
	for _, name := range []string{"varint+cache", "linear"} {
		enc, _ := runtimeshim.EncodingByName(name)
		s, err := m.NewShim(enc)
		if err != nil {
			fmt.Println(err)
			return
		}
		want := runtime.CallersFrames(pcs)
		got := s.CallersFrames(static)
		same := true
		for {
			w, wmore := want.Next()
			g, gmore := got.Next()
			if g.Function != w.Function || g.File != w.File || g.Line != w.Line || g.PC+slide != uint64(w.PC) {
				same = false
			}
			if !wmore || !gmore {
				same = same && wmore == gmore
				break
			}
		}
		fmt.Printf("%s: same frames as the runtime: %v\n", name, same)
	}
	// Output:
	// varint+cache: same frames as the runtime: true
	// linear: same frames as the runtime: true
}

// Replay runs a workload over physical stacks; the counts of table lookups
// are the same for every encoding, and only the cache's hits differ.
func ExampleShim_Replay() {
	m, slide, err := selfModule()
	if err != nil {
		fmt.Println(err)
		return
	}
	// One physical stack: the return PCs runtime.Callers gives for this
	// goroutine (none of its frames is inlined into another here, and an
	// inlined frame would only add a PC of the same physical frame).
	pcs := make([]uintptr, 32)
	pcs = pcs[:runtime.Callers(1, pcs)]
	st := runtimeshim.Stack{}
	for _, pc := range pcs {
		st.PCs = append(st.PCs, uint64(pc)-slide)
	}
	stacks := []runtimeshim.Stack{st, st, st}
	for _, name := range []string{"varint", "varint+cache", "linear"} {
		enc, _ := runtimeshim.EncodingByName(name)
		s, err := m.NewShim(enc)
		if err != nil {
			fmt.Println(err)
			return
		}
		c := s.Replay(runtimeshim.Unwind, stacks)
		fmt.Printf("%s: one pcsp lookup per frame: %v, cache hits: %v\n", name, c.Lookups == c.Frames, c.Hits > 0)
	}
	// Output:
	// varint: one pcsp lookup per frame: true, cache hits: false
	// varint+cache: one pcsp lookup per frame: true, cache hits: true
	// linear: one pcsp lookup per frame: true, cache hits: false
}
