// Command callers prints what runtime.Callers, runtime.CallersFrames,
// runtime.Caller and runtime.FuncForPC say about its own stacks, in the
// situations the runtime's unwinder and symbolizer treat apart: inlined
// calls, wrappers, generic functions, closures, deferred calls, a panic
// from a nil dereference (an injected sigpanic frame), recursion, buffers
// that fill up early, every skip, and goroutines on several threads; each
// full stack is also given to CallersFrames with every other PC and with
// PCs of no function around its PCs. Each case runs several times, so
// that a runtime that caches what it finds per PC answers from its caches
// after the first time; every answer is printed, and the output of a
// build with one toolchain must equal that of a build with another
// (TestCallersOutput).
//
// A frame prints as "function file:line +offset", the file without its
// directory and the PC as an offset from the function's entry (the
// program's own code is the same with any runtime: see newPCs); frames of the runtime
// print their function only, since their lines and code are the
// runtime's own, which a patched runtime may move.
package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// rounds is how many times each case runs.
const rounds = 4

func frameString(f runtime.Frame) string {
	if strings.HasPrefix(f.Function, "runtime.") || f.Function == "" {
		return f.Function
	}
	return fmt.Sprintf("%s %s:%d +%#x", f.Function, filepath.Base(f.File), f.Line, f.PC-f.Entry)
}

// record prints the stack pcs[:n] as CallersFrames gives it, and each PC
// as FuncForPC gives it.
func record(out *strings.Builder, name string, pcs []uintptr) {
	fmt.Fprintf(out, "%s: %d PCs\n", name, len(pcs))
	fr := runtime.CallersFrames(pcs)
	for {
		f, more := fr.Next()
		fmt.Fprintf(out, "\t%s\n", frameString(f))
		if !more {
			break
		}
	}
	for _, pc := range pcs {
		fn := runtime.FuncForPC(pc - 1)
		if fn == nil {
			fmt.Fprintf(out, "\tFuncForPC: nil\n")
			continue
		}
		if strings.HasPrefix(fn.Name(), "runtime.") {
			fmt.Fprintf(out, "\tFuncForPC: %s\n", fn.Name())
			continue
		}
		file, line := fn.FileLine(pc - 1)
		fmt.Fprintf(out, "\tFuncForPC: %s %s:%d +%#x\n", fn.Name(), filepath.Base(file), line, pc-fn.Entry())
	}
}

// callers records runtime.Callers(skip, make([]uintptr, size)).
func callers(out *strings.Builder, name string, skip, size int) {
	pcs := newPCs(size)
	n := runtime.Callers(skip, pcs)
	name = fmt.Sprintf("%s skip=%d size=%d", name, skip, size)
	record(out, name, pcs[:n])
	if size == 64 || size == 100 {
		record(out, name+" every other PC", everyOther(pcs[:n]))
		record(out, name+" with bad PCs", withBad(pcs[:n]))
	}
}

// newPCs returns a buffer of size PCs on the heap with any runtime. A
// runtime whose Frames does not escape (patch 0013's) lets the compiler
// keep a buffer made in callers on its stack, and callers' code, which
// the output shows offsets in, would differ from stock's.
//
//go:noinline
func newPCs(size int) []uintptr { return make([]uintptr, size) }

// everyOther returns every other PC of pcs, the first included: a list
// without some of the virtual PCs Callers gives for inlined frames, as a
// stack trace's PCs are, which CallersFrames completes.
func everyOther(pcs []uintptr) []uintptr {
	var out []uintptr
	for i := 0; i < len(pcs); i += 2 {
		out = append(out, pcs[i])
	}
	return out
}

// withBad returns pcs with PCs of no function before, between and after
// them, which CallersFrames skips, and which decide its more result.
func withBad(pcs []uintptr) []uintptr {
	out := []uintptr{1}
	for _, pc := range pcs {
		out = append(out, pc, 0)
	}
	return append(out, 1)
}

// allCallers records every skip from 0 to 6 with buffers of 1, 2, 3 and
// 64 PCs, and runtime.Caller for every skip from -2 to 6.
func allCallers(out *strings.Builder, name string) {
	for skip := 0; skip <= 6; skip++ {
		for _, size := range []int{1, 2, 3, 64} {
			callers(out, name, skip+1, size)
		}
	}
	// Negative skips give runtime.Caller's own frame.
	for skip := -2; skip <= 6; skip++ {
		pc, file, line, ok := runtime.Caller(skip)
		fn, off := "?", uintptr(0)
		if f := runtime.FuncForPC(pc); f != nil {
			fn, off = f.Name(), pc-f.Entry()
		}
		if strings.HasPrefix(fn, "runtime.") {
			file, line, off = "", 0, 0
		}
		fmt.Fprintf(out, "%s Caller(%d): %s %s:%d +%#x %v\n", name, skip, fn, filepath.Base(file), line, off, ok)
	}
}

//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}

// Inlined calls: leaf and mid are inlined into top.
func leaf(out *strings.Builder, name string) { allCallers(out, name) }
func mid(out *strings.Builder, name string)  { leaf(out, name) }

//go:noinline
func top(out *strings.Builder, name string) { mid(out, name) }

// Generic functions: their printed names are "gen[...]".
//
//go:noinline
func gen[T any](out *strings.Builder, name string, v T) { allCallers(out, fmt.Sprint(name, v)) }

type genType[T any] struct{ v T }

//go:noinline
func (g genType[T]) method(out *strings.Builder, name string) { allCallers(out, name) }

// Wrappers: a method called through an interface on a value receiver and
// through a method value.
type walker interface {
	walk(*strings.Builder, string)
}

type valueWalker struct{}

//go:noinline
func (valueWalker) walk(out *strings.Builder, name string) { allCallers(out, name) }

type ptrWalker struct{ n int }

//go:noinline
func (p *ptrWalker) walk(out *strings.Builder, name string) { allCallers(out, name) }

// Embedding: a promoted method is a wrapper.
type outer struct{ *ptrWalker }

func deferred(out *strings.Builder, name string) {
	defer allCallers(out, name+" defer")
	defer func() { allCallers(out, name+" deferred closure") }()
}

//go:noinline
func nilDeref(p *int) int { return *p }

// panicked records the stack in a deferred call of a panic from a nil
// dereference: it includes runtime.sigpanic, an injected call.
func panicked(out *strings.Builder, name string) {
	defer func() {
		allCallers(out, name)
		recover()
	}()
	nilDeref(nil)
}

func cases(out *strings.Builder, g string) {
	for i := 0; i < rounds; i++ {
		allCallers(out, g+" direct")
		top(out, g+" inlined")
		gen(out, g+" generic ", 1)
		gen(out, g+" generic ", "s")
		genType[int]{}.method(out, g+" generic method")
		var w walker = valueWalker{}
		w.walk(out, g+" interface value")
		w = &ptrWalker{}
		w.walk(out, g+" interface pointer")
		f := (&ptrWalker{}).walk
		f(out, g+" method value")
		outer{&ptrWalker{}}.walk(out, g+" promoted")
		func() { allCallers(out, g+" closure") }()
		deferred(out, g)
		panicked(out, g+" sigpanic")
		deep(40, func() { callers(out, g+" deep", 1, 100); callers(out, g+" deep", 30, 5) })
	}
}

func main() {
	var main strings.Builder
	cases(&main, "main")
	fmt.Print(main.String())
	// Goroutines at once, each locked to a thread of its own, so that
	// several Ms unwind the same PCs concurrently; each prints its
	// output in turn.
	var wg sync.WaitGroup
	outs := make([]strings.Builder, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			cases(&outs[i], fmt.Sprint("g", i))
		}()
	}
	wg.Wait()
	for i := range outs {
		fmt.Print(outs[i].String())
	}
}
