package benchcmp_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchmath"

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

// threeWay writes n rounds of stock, new and ctl for each benchmark of
// ratios: stock's value in round i is 100+i, and new's and ctl's the
// benchmark's ratios to it, each moved by ±spread in alternate rounds.
func threeWay(unit string, n int, spread float64, ratios map[string][2]float64) string {
	var b strings.Builder
	for i := range n {
		t := 100 + float64(i)
		d := spread
		if i%2 == 1 {
			d = -spread
		}
		for name, r := range ratios {
			fmt.Fprintf(&b, "toolchain: stock\nBenchmark%s 1 %g %s\n", name, t, unit)
			fmt.Fprintf(&b, "toolchain: new\nBenchmark%s 1 %g %s\n", name, (r[0]+d)*t, unit)
			fmt.Fprintf(&b, "toolchain: ctl\nBenchmark%s 1 %g %s\n", name, (r[1]+d)*t, unit)
		}
	}
	return b.String()
}

func TestWithinControl(t *testing.T) {
	for _, tc := range []struct {
		name       string
		unit       string
		n          int
		spread     float64
		ratios     map[string][2]float64 // new's and ctl's ratio to stock
		limit      float64
		above, got int
	}{
		// Times: B's interval [1.03, 1.07] overlaps ctl's [1.01, 1.05];
		// C's [1.08, 1.12] lies above ctl's [0.98, 1.02].
		{"time", "ns/op", 12, 0.02, map[string][2]float64{"A": {0.9, 1}, "B": {1.05, 1.03}, "C": {1.1, 1.0}}, 1.03, 2, 1},
		// Counts, one round: ctl's ratios span 0.95-1.06; B's 1.04
		// lies within them, C's 1.08 above.
		{"count", "instructions/op", 1, 0, map[string][2]float64{"A": {0.5, 0.95}, "B": {1.04, 1.06}, "C": {1.08, 1.0}}, 1.00, 2, 1},
		{"none above", "ns/op", 12, 0.01, map[string][2]float64{"A": {0.9, 1.2}}, 1.03, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unit := tc.unit
			if unit == "ns/op" {
				unit = "sec/op"
			}
			res, err := benchcmp.Read(strings.NewReader(threeWay(tc.unit, tc.n, tc.spread, tc.ratios)), unit, []string{"stock", "new", "ctl"})
			if err != nil {
				t.Fatal(err)
			}
			if above, _, _, _ := res.Above("new", tc.limit); above != tc.above {
				t.Fatalf("Above = %d, want %d", above, tc.above)
			}
			got, ok := res.WithinControl("new", "ctl", tc.limit)
			if !ok || got != tc.got {
				t.Errorf("WithinControl = %d, %v; want %d, true", got, ok, tc.got)
			}
			if _, ok := res.WithinControl("new", "absent", tc.limit); ok {
				t.Errorf("WithinControl of an absent control: ok")
			}
			var w strings.Builder
			res.WriteControl(&w, "new", "ctl", tc.limit)
			if want := fmt.Sprintf("%d of the %d within the layout control ctl", tc.got, tc.above); (tc.above > 0) != strings.Contains(w.String(), want) {
				t.Errorf("WriteControl wrote %q; want %q only if some are above", w.String(), want)
			}
		})
	}
}

// TestShift checks the two-sample ratio and its interval on samples with
// known shifts, and that its interval excludes 1 where benchmath's
// Mann-Whitney U test (benchstat's) finds the samples different.
func TestShift(t *testing.T) {
	seq := func(n int, f float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = f * float64(i+1)
		}
		return s
	}
	for _, tc := range []struct {
		name       string
		base, vals []float64
		center     float64
		finite     bool
		excludes1  bool
	}{
		{"same", seq(10, 1), seq(10, 1), 1, true, false},
		{"10% slower", seq(20, 1), seq(20, 1.1), 1.1, true, false},
		{"twice as fast", []float64{10, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 10.7}, []float64{5, 5.05, 5.1, 5.15, 5.2, 5.25, 5.3, 5.35}, 0.5, true, true},
		{"too few", []float64{1, 2}, []float64{1, 2}, 1, false, false},
		// Values that are not positive and finite are left out.
		{"bad values", append(seq(10, 1), 0, -1, math.NaN(), math.Inf(1)), append(seq(10, 2), math.Inf(-1), 0), 2, true, false},
		{"nothing left", []float64{0, math.NaN()}, seq(3, 1), math.NaN(), false, false},
	} {
		s := benchcmp.Shift(tc.base, tc.vals)
		if math.IsNaN(tc.center) {
			if !math.IsNaN(s.Center) || !math.IsNaN(s.Lo) || !math.IsNaN(s.Hi) {
				t.Errorf("%s: %+v, want NaN everywhere", tc.name, s)
			}
			continue
		}
		if math.Abs(s.Center-tc.center) > 1e-9 {
			t.Errorf("%s: center %v, want %v", tc.name, s.Center, tc.center)
		}
		if finite := !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0); finite != tc.finite {
			t.Errorf("%s: interval [%v, %v], want finite %v", tc.name, s.Lo, s.Hi, tc.finite)
		}
		if tc.finite && !(s.Lo <= s.Center && s.Center <= s.Hi) {
			t.Errorf("%s: center %v outside [%v, %v]", tc.name, s.Center, s.Lo, s.Hi)
		}
		if ex := s.Lo > 1 || s.Hi < 1; ex != tc.excludes1 {
			t.Errorf("%s: [%v, %v] excludes 1: %v, want %v", tc.name, s.Lo, s.Hi, ex, tc.excludes1)
		}
	}
	// Random samples, some shifted: the interval and the U test agree,
	// but for a few at the boundary (normal approximation, ties).
	r := rand.New(rand.NewPCG(1, 2))
	disagree, n := 0, 400
	for i := range n {
		shift := 1 + 0.02*float64(i%5)
		base, vals := make([]float64, 20), make([]float64, 20)
		for j := range base {
			base[j] = 100 * (1 + 0.05*r.NormFloat64())
			vals[j] = 100 * shift * (1 + 0.05*r.NormFloat64())
		}
		s := benchcmp.Shift(base, vals)
		p := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(base), &benchmath.DefaultThresholds), benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds)).P
		if (s.Lo > 1 || s.Hi < 1) != (p < 0.05) {
			disagree++
		}
	}
	t.Logf("%d of %d disagree", disagree, n)
	if disagree > n/50 {
		t.Errorf("the interval and the U test disagree on %d of %d sample pairs, want at most %d", disagree, n, n/50)
	}
}

func ExampleShift() {
	base := []float64{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}
	vals := []float64{90, 91, 92, 93, 94, 95, 96, 97, 98, 99}
	s := benchcmp.Shift(base, vals)
	fmt.Printf("%.3f [%.3f, %.3f]\n", s.Center, s.Lo, s.Hi)
	// Output:
	// 0.904 [0.877, 0.932]
}
