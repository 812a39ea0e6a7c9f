package readers

import (
	"testing"
)

// FuzzParseProbe checks that parseProbe never panics and that what it
// accepts holds no more records than lines.
func FuzzParseProbe(f *testing.F) {
	f.Add([]byte(probeTwin))
	f.Add([]byte("error\tunknown magic\n"))
	f.Add([]byte("info\tcompiler-error\tno goversion found\n"))
	f.Add([]byte("func\tmain.a\t0x1000\t0x1010\tinline-error: EOF\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProbe(data)
		if err != nil {
			return
		}
		lines := 1
		for _, c := range data {
			if c == '\n' {
				lines++
			}
		}
		if n := len(p.Funcs) + len(p.PCs) + len(p.Deltas) + len(p.Info); n > lines {
			t.Fatalf("%d records from %d lines", n, lines)
		}
	})
}

// FuzzParseDelve checks that parseDelve never panics and finds no more
// frames than lines.
func FuzzParseDelve(f *testing.F) {
	f.Add("Breakpoint 1 set at 0x4a600e for main.worker() ./main.go:232\n0  0x00000000004a600e in main.worker\n   at ./main.go:232\n")
	f.Add(" 0  0x1 in f\n    at :-1\n1  0x2 in g\n")
	f.Fuzz(func(t *testing.T, text string) {
		s := parseDelve(text)
		frames := 0
		for _, st := range s.Stacks {
			frames += len(st)
		}
		lines := 1
		for _, c := range text {
			if c == '\n' {
				lines++
			}
		}
		if frames+len(s.Breakpoints) > 2*lines {
			t.Fatalf("%d frames and %d breakpoints from %d lines", frames, len(s.Breakpoints), lines)
		}
	})
}
