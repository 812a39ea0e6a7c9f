//go:build unix && !aix

package resolve_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/trampoline"
	"github.com/pctab/pctab/trampoline/resolve"
)

// Find the trampolines in this test binary, and name the one that a PC
// captured inside labelled work belongs to, as the resolver does for each
// CPU sample.
func ExampleFind() {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	f, err := objscan.Open(exe)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	t, err := resolve.Find(f)
	if err != nil {
		panic(err)
	}
	fmt.Println("trampolines:", t.N == trampoline.N)

	l, err := trampoline.New("query", "q3")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	var pc uintptr // the return address in the trampoline's frame
	l.Do(func() {
		pcs := make([]uintptr, 8)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for {
			fr, more := frames.Next()
			if strings.HasPrefix(fr.Function, resolve.Prefix) {
				pc = fr.PC
				fmt.Println("the frame's name numbers the label's trampoline:", resolve.Number(fr.Function) == l.Trampoline())
			}
			if !more {
				break
			}
		}
	})
	fmt.Println("the PC is in the label's trampoline:", t.At(uint64(pc)) == l.Trampoline())
	// Output:
	// trampolines: true
	// the frame's name numbers the label's trampoline: true
	// the PC is in the label's trampoline: true
}
