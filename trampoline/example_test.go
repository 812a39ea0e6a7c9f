//go:build unix && !aix

package trampoline_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"

	"github.com/pctab/pctab/trampoline"
)

// Label the work of one query, then write the history a resolver reads to
// attribute CPU samples (package trampoline/resolve).
func Example() {
	// Where New returns ErrUnsupported (no CLOCK_MONOTONIC: windows, aix),
	// l is nil and runs work unlabelled.
	l, err := trampoline.New("query", "q3")
	if err != nil {
		panic(err)
	}
	var through string
	l.Do(func() {
		// A CPU sample taken here has the trampoline on its stack.
		pcs := make([]uintptr, 8)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for {
			fr, more := frames.Next()
			if strings.HasPrefix(fr.Function, "github.com/pctab/pctab/trampoline.t") {
				through = "a trampoline"
			}
			if !more {
				break
			}
		}
	})
	if err := l.Close(); err != nil {
		panic(err)
	}
	fmt.Println("the work ran through", through)

	var buf bytes.Buffer
	if err := trampoline.WriteHistory(&buf); err != nil {
		panic(err)
	}
	h, err := trampoline.ReadHistory(&buf)
	if err != nil {
		panic(err)
	}
	b := h.Bindings[len(h.Bindings)-1]
	fmt.Println("last binding:", b.Key+"="+b.Value)
	fmt.Println("on the label's trampoline:", b.Trampoline == l.Trampoline())
	fmt.Println("closed:", b.EndMono > 0 && b.EndMono >= b.StartMono)
	// Output:
	// the work ran through a trampoline
	// last binding: query=q3
	// on the label's trampoline: true
	// closed: true
}
