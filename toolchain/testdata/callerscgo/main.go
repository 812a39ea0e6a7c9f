// Command callerscgo prints what runtime.Callers, runtime.CallersFrames
// and runtime.Caller say about stacks that cross C frames: Go called back
// from C, itself called from Go called back from C, on the main goroutine
// and on another, at every skip, each case several times so that a
// runtime that caches what it finds per PC answers from its caches after
// the first time. The output of a build with one toolchain must equal
// that of a build with another (TestCallersOutput).
//
// Frames of the runtime print their function only, the program's own
// their function and line.
package main

/*
extern void goCallback(int);
static void callC(int n) { goCallback(n); }
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// rounds is how many times each case runs.
const rounds = 4

// show prints the stack of its caller at every skip from 0 to 4, as
// Callers and CallersFrames give it, and what Caller gives at the skip.
func show(tag string) {
	pcs := make([]uintptr, 64)
	for skip := range 5 {
		n := runtime.Callers(skip, pcs)
		fr := runtime.CallersFrames(pcs[:n])
		var b strings.Builder
		for {
			f, more := fr.Next()
			if strings.HasPrefix(f.Function, "runtime.") || f.Function == "" {
				fmt.Fprintf(&b, " %s", f.Function)
			} else {
				fmt.Fprintf(&b, " %s:%d", f.Function, f.Line)
			}
			if !more {
				break
			}
		}
		_, file, line, ok := runtime.Caller(skip)
		if strings.Contains(file, "/runtime/") {
			line = 0 // the runtime's own lines
		}
		fmt.Printf("%s skip %d: %d PCs:%s; Caller %s:%d %v\n", tag, skip, n, b.String(), filepath.Base(file), line, ok)
	}
}

//export goCallback
func goCallback(n C.int) {
	if n > 0 {
		C.callC(n - 1)
		return
	}
	show("callback")
}

func main() {
	for range rounds {
		C.callC(0)
		C.callC(2)
		show("main")
		done := make(chan bool)
		go func() {
			C.callC(1)
			done <- true
		}()
		<-done
	}
}
