package lookupbench_test

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/objscan"
	"golang.org/x/perf/benchfmt"
)

// gofmtPath returns the local toolchain's gofmt binary.
func gofmtPath() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		log.Fatal(err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "bin", "gofmt")
}

// Time lookups of the hot set at return addresses, in the spec linear
// encoding and in the varint encoding without a cache, and write them in the
// Go benchmark format.
func Example() {
	f, err := objscan.Open(gofmtPath())
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	b, err := lookupbench.New(f, lookupbench.Options{ColdSize: 1 << 12})
	if err != nil {
		log.Fatal(err)
	}
	res, err := b.Run(lookupbench.RunOptions{
		BenchTime: lookupbench.BenchTime{N: 10000}, // as -benchtime=10000x
		Match: func(name string) bool {
			return name == "set=hot/pcs=ret/enc=linear" || name == "set=hot/pcs=ret/enc=varint"
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	g := res.Groups[0]
	fmt.Println(g.Set, g.PCs, g.Samples, "pairs")
	for _, t := range g.Timings {
		fmt.Println(lookupbench.BenchName("gofmt", &g, t.Encoding), t.Runs[0].Iters, t.NsPerOp > 0)
	}
	fmt.Println("linear/varint measured:", g.LinearVsVarint > 0)
	// Benchmark lines for benchstat, such as
	// BenchmarkLookup/bin=gofmt/set=hot/pcs=ret/enc=linear-2 10000 17.5 ns/op
	if err := lookupbench.WriteBench(benchfmt.NewWriter(os.Stderr), "gofmt", res); err != nil {
		log.Fatal(err)
	}
	// Output:
	// hot ret 1024 pairs
	// Lookup/bin=gofmt/set=hot/pcs=ret/enc=varint 10000 true
	// Lookup/bin=gofmt/set=hot/pcs=ret/enc=linear 10000 true
	// linear/varint measured: true
}

// Draw samples at return addresses: the pcsp table is looked up at the
// return address, every other table one byte before it, as the runtime's
// unwinder does.
func ExampleBench_Sample() {
	f, err := objscan.Open(gofmtPath())
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	b, err := lookupbench.New(f, lookupbench.Options{Sampling: lookupbench.ByTable})
	if err != nil {
		log.Fatal(err)
	}
	samples, err := b.Sample(lookupbench.PCReturn, 1000, 1)
	if err != nil {
		log.Fatal(err)
	}
	pcsp, other := 0, 0
	for _, s := range samples {
		if s.Kind == objscan.KindPCSP {
			pcsp++
		} else {
			other++
		}
	}
	n, _, _ := b.ReturnAddresses()
	fmt.Println(len(samples), n > 0, pcsp > 0, other > pcsp)
	// Output:
	// 1000 true true true
}

func ExampleParseBenchTime() {
	for _, s := range []string{"1s", "500ms", "1000x"} {
		t, err := lookupbench.ParseBenchTime(s)
		fmt.Println(t.D, t.N, err)
	}
	// Output:
	// 1s 0 <nil>
	// 500ms 0 <nil>
	// 0s 1000 <nil>
}
