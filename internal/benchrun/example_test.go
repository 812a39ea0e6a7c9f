package benchrun_test

import (
	"fmt"

	"github.com/pctab/pctab/internal/benchrun"
)

// The pattern that runs one sub-benchmark of pkg/errors and no other:
// every element is quoted and anchored, so "%s-stack-10" matches neither
// "%s-stack-100" nor "%+v-stack-10".
func ExamplePattern() {
	fmt.Println(benchrun.Pattern("BenchmarkStackFormatting/%s-stack-10"))
	fmt.Println(benchrun.Pattern("BenchmarkAttrs/Text_discard/5_args"))
	// Output:
	// ^BenchmarkStackFormatting$/^%s-stack-10$
	// ^BenchmarkAttrs$/^Text_discard$/^5_args$
}

func ExampleParseNames() {
	out := []byte("goos: linux\nBenchmarkA-2   \t1000\t 12.5 ns/op\nBenchmarkB/x-2\t  10\t 99 ns/op\nPASS\n")
	fmt.Println(benchrun.ParseNames(out))
	// Output:
	// [BenchmarkA-2 BenchmarkB/x-2]
}
