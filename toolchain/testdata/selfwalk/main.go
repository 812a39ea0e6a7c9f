// Command selfwalk asks its own runtime about PCs of its own binary.
//
// It reads lines "START END STEP" (hexadecimal PCs) from standard input and,
// for every PC from START below END by STEP, prints what the runtime says:
// "line fileID nameID entry sp pcdata0 pcdata1 pcdata2 pcdata3" with
// runtime.FuncForPC(pc).FileLine, .Name and .Entry, then the runtime's own
// funcspdelta and pcdatavalue (tables.go). Strings are interned: the first use of a file or name prints
// "f ID NAME" or "n ID NAME" first. Before that it exercises the runtime's
// other table users (tracebacks, panics through deep stacks, GC stack
// scans of many goroutines) and prints "ok" if they gave the right answers.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}

func exercise() error {
	// Callers and CallersFrames through a recursive stack.
	var frames []string
	deep(50, func() {
		pcs := make([]uintptr, 100)
		fr := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for {
			f, more := fr.Next()
			frames = append(frames, f.Function)
			if !more {
				break
			}
		}
	})
	n := 0
	for _, f := range frames {
		if f == "main.deep" {
			n++
		}
	}
	if n != 51 {
		return fmt.Errorf("runtime.Callers: %d frames of main.deep, want 51: %v", n, frames)
	}
	// Panic and recover through a deep stack.
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				panic(r)
			}
		}()
		deep(200, func() { panic("boom") })
	}()
	// GC while many goroutines sit in deep stacks; runtime.Stack of all.
	var wg, ready sync.WaitGroup
	stop := make(chan struct{})
	for range 50 {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			deep(100, func() { ready.Done(); <-stop })
		}()
	}
	ready.Wait()
	runtime.GC()
	buf := make([]byte, 1<<22)
	s := string(buf[:runtime.Stack(buf, true)])
	close(stop)
	wg.Wait()
	// Tracebacks print at most 100 frames per goroutine, then elide.
	if c, e := strings.Count(s, "main.deep("), strings.Count(s, "frames elided"); c < 50*90 || e < 50 {
		return fmt.Errorf("runtime.Stack: %d frames of main.deep and %d elisions, want at least %d and 50", c, e, 50*90)
	}
	return nil
}

func main() {
	if err := exercise(); err != nil {
		fmt.Fprintln(os.Stderr, "selfwalk:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	files, names := map[string]int{}, map[string]int{}
	intern := func(m map[string]int, kind, s string) int {
		id, ok := m[s]
		if !ok {
			id = len(m)
			m[s] = id
			fmt.Fprintf(out, "%s %d %s\n", kind, id, s)
		}
		return id
	}
	for in.Scan() {
		var start, end, step uintptr
		if _, err := fmt.Sscanf(in.Text(), "%x %x %x", &start, &end, &step); err != nil {
			fmt.Fprintln(os.Stderr, "selfwalk:", err)
			os.Exit(2)
		}
		for pc := start; pc < end; pc += step {
			sp, pcdata := tableValues(pc)
			// Again: now the runtime's pcvalue cache holds most of
			// these keys, so this asks the cache what the tables said.
			if sp2, pcdata2 := tableValues(pc); sp2 != sp || pcdata2 != pcdata {
				fmt.Fprintf(os.Stderr, "selfwalk: at %#x the cache says %d %v, the tables %d %v\n", pc, sp2, pcdata2, sp, pcdata)
				os.Exit(1)
			}
			fn := runtime.FuncForPC(pc)
			if fn == nil {
				fmt.Fprintf(out, "- - - - %d %d %d %d %d\n", sp, pcdata[0], pcdata[1], pcdata[2], pcdata[3])
				continue
			}
			file, line := fn.FileLine(pc)
			fmt.Fprintf(out, "%d %d %d %x %d %d %d %d %d\n", line, intern(files, "f", file), intern(names, "n", fn.Name()), fn.Entry(), sp, pcdata[0], pcdata[1], pcdata[2], pcdata[3])
		}
	}
}
