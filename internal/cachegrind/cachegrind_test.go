package cachegrind

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		total  int64
		byFile map[string]int64
		err    bool
	}{
		{"files", "events: Ir\nfl=a.go\nfn=f\n1 10\n2 5\nfl=b.go\nfn=g\n3 7\nfi=a.go\n4 1\nfe=b.go\n5 2\nsummary: 25\n", 25, map[string]int64{"a.go": 16, "b.go": 9}, false},
		{"empty", "events: Ir\nsummary: 0\n", 0, map[string]int64{}, false},
		{"no summary", "events: Ir\nfl=a.go\n1 10\n", 0, nil, true},
		{"wrong summary", "events: Ir\nfl=a.go\n1 10\nsummary: 11\n", 0, nil, true},
		{"other event", "events: Dr\nsummary: 0\n", 0, nil, true},
		{"bad count", "events: Ir\nfl=a.go\n1 x\nsummary: 0\n", 0, nil, true},
		{"negative count", "events: Ir\nfl=a.go\n1 -1\nsummary: -1\n", 0, nil, true},
		{"one field", "events: Ir\nfl=a.go\n1\nsummary: 0\n", 0, nil, true},
		{"overflow", "events: Ir\nfl=a.go\n1 9223372036854775807\n2 1\nsummary: 0\n", 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.in))
			if tc.err {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("Parse = %v, want ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != tc.total || len(p.ByFile) != len(tc.byFile) {
				t.Fatalf("Parse = %d %v, want %d %v", p.Total, p.ByFile, tc.total, tc.byFile)
			}
			for f, n := range tc.byFile {
				if p.ByFile[f] != n {
					t.Errorf("%s: %d, want %d", f, p.ByFile[f], n)
				}
			}
		})
	}
}

// TestParseReal reads part of a real profile (logrus' caller benchmark
// built by the patched toolchain) and checks the runtime's files.
func TestParseReal(t *testing.T) {
	f, err := os.Open("testdata/logrus.cg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	sym := p.Sum(func(f string) bool { return strings.Contains(f, "/runtime/symtab") })
	if sym <= 0 || sym >= p.Total {
		t.Errorf("runtime/symtab*.go: %d of %d instructions", sym, p.Total)
	}
}

// TestParseHostile checks that a large corrupt profile costs memory in
// proportion to its distinct files, not its size.
func TestParseHostile(t *testing.T) {
	big := "events: Ir\nfl=a.go\n" + strings.Repeat("1 1\n", 1<<18) + "summary: 1\n"
	var err error
	n := allocs.Least(3, func() { _, err = Parse(strings.NewReader(big)) })
	if !errors.Is(err, ErrFormat) {
		t.Errorf("Parse = %v, want ErrFormat", err)
	}
	if n > 4<<20 {
		t.Errorf("Parse of %d bytes allocated %d bytes", len(big), n)
	}
}

func TestRun(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("no valgrind")
	}
	exe := filepath.Join(t.TempDir(), "prog")
	src := filepath.Join(t.TempDir(), "prog.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, p, err := Run(context.Background(), Cmd{Path: exe})
	if err != nil {
		t.Fatal(err)
	}
	rt := p.Sum(func(f string) bool { return strings.Contains(f, "/runtime/") })
	if p.Total < 10000 || rt <= 0 || rt > p.Total {
		t.Errorf("hello: %d instructions, %d in the runtime", p.Total, rt)
	}
}

// TestRunCputicks runs under cachegrind a program whose runtime reads the
// processor's tick counter (block profiling times every blocking event
// with cputicks), which valgrind 3.19 cannot run where Go uses RDTSCP.
func TestRunCputicks(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("no valgrind")
	}
	exe := filepath.Join(t.TempDir(), "prog")
	src := filepath.Join(t.TempDir(), "prog.go")
	prog := `package main

import "runtime"

func main() {
	runtime.SetBlockProfileRate(1)
	ch := make(chan int)
	for i := range 100 {
		go func() { ch <- i }()
		<-ch
	}
	println("done")
}
`
	if err := os.WriteFile(src, []byte(prog), 0o666); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "GODEBUG=gctrace=0")
	if _, _, err := Run(context.Background(), Cmd{Path: exe, Env: env}); err != nil {
		t.Fatal(err)
	}
}

func TestWithGODEBUG(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"A=1"}, "GODEBUG=x=1"},
		{[]string{"GODEBUG=", "A=1"}, "GODEBUG=x=1"},
		{[]string{"GODEBUG=a=1,b=2", "A=1"}, "GODEBUG=a=1,b=2,x=1"},
		{[]string{"GODEBUG=a=1", "GODEBUG=b=2"}, "GODEBUG=b=2,x=1"},
	} {
		got := withGODEBUG(tc.env, "x=1")
		n := 0
		for _, kv := range got {
			if strings.HasPrefix(kv, "GODEBUG=") {
				n++
				if kv != tc.want {
					t.Errorf("withGODEBUG(%q): %q, want %q", tc.env, kv, tc.want)
				}
			}
		}
		if n != 1 || !slices.Contains(got, "A=1") && slices.Contains(tc.env, "A=1") {
			t.Errorf("withGODEBUG(%q) = %q: want one GODEBUG and the other variables", tc.env, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("events: Ir\nfl=a.go\nfn=f\n1 10\nsummary: 10\n"))
	if b, err := os.ReadFile("testdata/logrus.cg"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		var sum int64
		for _, n := range p.ByFile {
			sum += n
		}
		if sum != p.Total {
			t.Fatalf("files sum to %d, total %d", sum, p.Total)
		}
	})
}
