package benchrun

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestPattern(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"BenchmarkTop", "^BenchmarkTop$"},
		{"BenchmarkGroup/%s-stack-10", "^BenchmarkGroup$/^%s-stack-10$"},
		{"BenchmarkGroup/a.b", `^BenchmarkGroup$/^a\.b$`},
		{"BenchmarkGroup/x+y", `^BenchmarkGroup$/^x\+y$`},
		{"BenchmarkGroup/nested/inner", "^BenchmarkGroup$/^nested$/^inner$"},
	} {
		if got := Pattern(tc.name); got != tc.want {
			t.Errorf("Pattern(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseNames(t *testing.T) {
	out := []byte(`goos: linux
goarch: amd64
pkg: names
BenchmarkTop         	1000000000	         0.5 ns/op
BenchmarkGroup/a.b   	       1	       100 ns/op	      8 B/op
BenchmarkGroup/a.b   	       1	       100 ns/op
Benchmarking is fun 1 2
BenchmarkBroken
PASS
`)
	want := []string{"BenchmarkTop", "BenchmarkGroup/a.b"}
	if got := ParseNames(out); !slices.Equal(got, want) {
		t.Errorf("ParseNames = %q, want %q", got, want)
	}
}

// TestNames builds testdata/names, lists its benchmarks and runs each
// Pattern: every pattern must run exactly its own benchmark.
func TestNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	dir, err := filepath.Abs("testdata/names")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "names.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	ctx := context.Background()
	names, err := Names(ctx, bin, dir, ".", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"BenchmarkTop", "BenchmarkTopLonger",
		"BenchmarkGroup/%s-stack-10", "BenchmarkGroup/%s-stack-1", "BenchmarkGroup/a.b",
		"BenchmarkGroup/x+y", "BenchmarkGroup/with_space", "BenchmarkGroup/nested/inner",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("Names = %q, want %q", names, want)
	}
	for _, name := range names {
		got, err := Names(ctx, bin, dir, Pattern(name), nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !slices.Equal(got, []string{name}) {
			t.Errorf("Pattern(%q) ran %q", name, got)
		}
	}
	if _, err := Names(ctx, bin, dir, "^BenchmarkNone$", nil); !errors.Is(err, ErrNoBenchmarks) {
		t.Errorf("Names of no benchmark: %v, want ErrNoBenchmarks", err)
	}
}
