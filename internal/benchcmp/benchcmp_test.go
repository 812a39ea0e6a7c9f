package benchcmp_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/benchcmp"
)

// rounds writes n rounds of two flavours' results in the Go benchmark
// format, stock's time in round i being base+i and new's ratio×(base+i).
func rounds(n int, base, ratio float64) string {
	var b strings.Builder
	for i := range n {
		t := base + float64(i)
		fmt.Fprintf(&b, "toolchain: stock\nBenchmarkX 1 %g ns/op\n", t)
		fmt.Fprintf(&b, "toolchain: new\nBenchmarkX 1 %g ns/op\n", ratio*t)
	}
	return b.String()
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            string
		ratio, paired float64
		above         int
	}{
		{"faster", rounds(12, 100, 0.5), 0.5, 0.5, 0},
		{"slower", rounds(12, 100, 1.1), 1.1, 1.1, 1},
		{"same", rounds(12, 100, 1), 1, 1, 0},
		// The second flavour is 0.9× stock in every round, but the
		// rounds drift: the medians' ratio and the paired ratio agree.
		{"drift", rounds(12, 10, 0.9), 0.9, 0.9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := benchcmp.Read(strings.NewReader(tc.in), "sec/op", []string{"stock", "new"})
			if err != nil {
				t.Fatal(err)
			}
			if !res.HasBaseline() || len(res.Flavours) != 2 || res.Flavours[1] != "new" {
				t.Fatalf("flavours %v, baseline %q", res.Flavours, res.Baseline)
			}
			c, ok := res.Compare("", benchcmp.Key{Name: "X"}, "new")
			if !ok {
				t.Fatal("no comparison")
			}
			if math.Abs(c.Ratio-tc.ratio) > 1e-9 || math.Abs(c.Paired.Center-tc.paired) > 1e-9 {
				t.Errorf("ratio %g, paired %g; want %g, %g", c.Ratio, c.Paired.Center, tc.ratio, tc.paired)
			}
			if c.Value.N != 12 || c.Paired.N != 12 {
				t.Errorf("n = %d, paired n = %d, want 12", c.Value.N, c.Paired.N)
			}
			if above, total, _, _ := res.Above("new", 1.03); above != tc.above || total != 1 {
				t.Errorf("Above = %d of %d, want %d of 1", above, total, tc.above)
			}
		})
	}
}

func TestPerRound(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		num, den, numSub, denSub []float64
		want                     []float64
	}{
		{"plain", []float64{2, 3}, []float64{4, 6}, nil, nil, []float64{0.5, 0.5}},
		{"differences", []float64{5, 7}, []float64{9, 9}, []float64{1, 1}, []float64{1, 3}, []float64{0.5, 1}},
		{"shortest", []float64{1, 2, 3}, []float64{1, 1}, nil, nil, []float64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := benchcmp.PerRound(tc.num, tc.den, tc.numSub, tc.denSub)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("PerRound = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadNoBaseline(t *testing.T) {
	res, err := benchcmp.Read(strings.NewReader("toolchain: new\nBenchmarkX 1 1 ns/op\n"), "sec/op", []string{"stock", "new"})
	if err != nil {
		t.Fatal(err)
	}
	if res.HasBaseline() {
		t.Errorf("HasBaseline with no stock results")
	}
}

func ExampleResults_WriteTables() {
	in := rounds(8, 100, 0.5)
	res, err := benchcmp.Read(strings.NewReader(in), "sec/op", []string{"stock", "new"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res.WriteTables(os.Stdout)
	// Output:
	// benchmark                                    flavour                median     ±  ×stock   paired ×stock [95%]      p   n
	// X                                            stock                 103.5ns    3%                                        8
	//                                              new                    51.8ns    3%   0.500  0.500 [0.500, 0.500]  0.000   8
}
