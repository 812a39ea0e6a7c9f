// Package benchrun runs a test binary's benchmarks one at a time.
//
// A round-robin comparison of two builds pairs the runs of the same
// benchmark in the same round. When each run executes every benchmark of
// the binary, the two runs of one benchmark lie as far apart as the whole
// binary takes, and a slow spell of a shared machine can fall on one of
// them alone. Running the benchmarks one at a time, every build in turn
// ([Names], then one run per [Pattern]), puts the paired runs next to
// each other.
package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// ErrNoBenchmarks is returned by [Names] when the pattern selects no
// benchmark.
var ErrNoBenchmarks = errors.New("benchrun: no benchmark matches")

// Names runs the test binary bin once in directory dir, with
// -test.bench=re, -test.benchtime=1x and -test.cpu=1 and the further
// flags args, and returns the full names of the benchmarks that ran, in
// the order they ran (sub-benchmarks as "BenchmarkA/b/c"; -test.cpu=1
// gives them no GOMAXPROCS suffix). Benchmarks that only group
// sub-benchmarks print no result and are not listed.
func Names(ctx context.Context, bin, dir, re string, args []string) ([]string, error) {
	flags := append([]string{"-test.run=^$", "-test.bench=" + re, "-test.benchtime=1x", "-test.count=1", "-test.cpu=1"}, args...)
	cmd := exec.CommandContext(ctx, bin, flags...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("benchrun: listing the benchmarks of %s: %w\n%s%s", bin, err, out, stderr.Bytes())
	}
	names := ParseNames(out)
	if len(names) == 0 {
		return nil, fmt.Errorf("%w -test.bench=%q in %s", ErrNoBenchmarks, re, bin)
	}
	return names, nil
}

// ParseNames returns the names of the benchmark result lines of a test
// binary's output, in order, each once.
func ParseNames(out []byte) []string {
	var names []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		// A result line is a name, an iteration count and measurements.
		if len(f) < 3 || !strings.HasPrefix(f[0], "Benchmark") || !isCount(f[1]) {
			continue
		}
		if !seen[f[0]] {
			seen[f[0]] = true
			names = append(names, f[0])
		}
	}
	return names
}

func isCount(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Pattern returns the -test.bench expression that selects the benchmark
// named name, as [Names] returns it, and none other: each of its
// slash-separated elements quoted and anchored, as the testing package
// matches them level by level.
func Pattern(name string) string {
	elems := strings.Split(name, "/")
	for i, e := range elems {
		elems[i] = "^" + regexp.QuoteMeta(e) + "$"
	}
	return strings.Join(elems, "/")
}
