package toolchain

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestBenchRegexp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match []string // full names, split at '/' as go test does
		not   []string
	}{
		{"Callers/no-cache", []string{"BenchmarkCallers/no-cache"}, []string{"BenchmarkCallers/no-cache2", "BenchmarkFPCallers/no-cache", "BenchmarkCallers/cached"}},
		{"StackCopy", []string{"BenchmarkStackCopy"}, []string{"BenchmarkStackCopyPtr"}},
		{"X/a+b", []string{"BenchmarkX/a+b"}, []string{"BenchmarkX/aab"}},
	} {
		re := strings.Split(BenchRegexp("Benchmark"+tc.name), "/")
		matches := func(full string) bool {
			parts := strings.Split(full, "/")
			if len(parts) != len(re) {
				return false
			}
			for i := range parts {
				if !regexp.MustCompile(re[i]).MatchString(parts[i]) {
					return false
				}
			}
			return true
		}
		for _, m := range tc.match {
			if !matches(m) {
				t.Errorf("benchRegexp(%q) = %q does not match %s", tc.name, BenchRegexp("Benchmark"+tc.name), m)
			}
		}
		for _, m := range tc.not {
			if matches(m) {
				t.Errorf("benchRegexp(%q) = %q matches %s", tc.name, BenchRegexp("Benchmark"+tc.name), m)
			}
		}
	}
}

func TestSummarizeInstructions(t *testing.T) {
	in := "goos: linux\n" +
		"toolchain: stock\nBenchmarkCallers/cached\t5000\t18612 instructions/op\nBenchmarkStackCopy\t8\t488951328 instructions/op\n" +
		"toolchain: default\nBenchmarkCallers/cached\t5000\t16109 instructions/op\nBenchmarkStackCopy\t8\t358552070 instructions/op\n"
	var out bytes.Buffer
	if err := SummarizeInstructions(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := "| instructions/op | stock | default |\n|---|---:|---:|\n" +
		"| Callers/cached | 18,612 | 16,109 (0.866×) |\n" +
		"| StackCopy | 488,951,328 | 358,552,070 (0.733×) |\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestIsSymtabFile(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/usr/local/go/src/runtime/symtab.go", true},
		{"/root/.cache/pctab-toolchain/x/go/src/runtime/symtab_linear_cf.go", true},
		{"/usr/local/go/src/runtime/symtabinl.go", true},
		{"/usr/local/go/src/runtime/traceback.go", true},
		{"runtime/extern.go", true},
		{"/usr/local/go/src/runtime/malloc.go", false},
		{"/usr/local/go/src/runtime/symtab.s", false},
		{"/home/x/myruntime/symtab.go", false},
		{"/usr/local/go/src/debug/gosym/symtab.go", false},
	} {
		if got := IsSymtabFile(tc.path); got != tc.want {
			t.Errorf("IsSymtabFile(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
