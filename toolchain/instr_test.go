package toolchain

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestParseIRefs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"==12== Cachegrind\n==12== \n==12== I   refs:      1,234,567\n", 1234567, true},
		{"==7== I refs:        42\n==7== I1  misses: 3\n", 42, true},
		{"==7== I1  misses: 3\n", 0, false},
		{"==7== I refs: 1,2x\n", 0, false},
	} {
		got, err := parseIRefs([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseIRefs(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

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
		re := strings.Split(benchRegexp(tc.name), "/")
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
				t.Errorf("benchRegexp(%q) = %q does not match %s", tc.name, benchRegexp(tc.name), m)
			}
		}
		for _, m := range tc.not {
			if matches(m) {
				t.Errorf("benchRegexp(%q) = %q matches %s", tc.name, benchRegexp(tc.name), m)
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
