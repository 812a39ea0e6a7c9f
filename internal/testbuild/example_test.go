package testbuild_test

import (
	"context"
	"fmt"
	"log"

	"github.com/pctab/pctab/internal/testbuild"
)

// Compile builds outside of a test. In a test, use Build, which skips or
// fails the test itself.
func ExampleCompile() {
	cfg := testbuild.Config{Archive: "callers", GOOS: "linux", GOARCH: "arm64"}
	bin, err := testbuild.Compile(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	out, err := testbuild.Exec(context.Background(), cfg, bin) // under qemu-aarch64 on other hosts
	if err != nil {
		log.Fatal(err)
	}
	c, err := testbuild.ParseCallers(out)
	if err != nil {
		log.Fatal(err)
	}
	s, _ := c.Stack("mid-inlined")
	fmt.Println(s.Functions())
}

// Targets gives stable subtest names for the standard build matrix.
func ExampleTargets() {
	for _, t := range testbuild.Targets() {
		fmt.Println(t.Name)
	}
}
