package lookupbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/objdump"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"golang.org/x/perf/benchfmt"
)

// open builds archive for cfg and prepares a Bench with small sample sets.
func open(t *testing.T, cfg testbuild.Config, opt Options) (*objscan.File, *Bench) {
	t.Helper()
	bin := testbuild.Build(t, cfg)
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if opt.HotSize == 0 {
		opt.HotSize = 64
	}
	if opt.ColdSize == 0 {
		opt.ColdSize = 1024
	}
	b, err := New(f, opt)
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

func TestSample(t *testing.T) {
	f, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	n, dis, why := b.ReturnAddresses()
	if n == 0 {
		t.Fatalf("no return addresses on %s/%s: %s", f.GOOS, f.GOARCH, why)
	}
	t.Logf("%d return addresses (%s)", n, dis)
	for _, sampling := range []Sampling{ByReference, ByTable} {
		b.opt.Sampling = sampling
		for _, p := range AllPCs() {
			t.Run(sampling.String()+"/"+p.String(), func(t *testing.T) {
				s, err := b.Sample(p, 4096, 7)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := b.Sample(p, 4096, 7)
				if !slices.Equal(s, again) {
					t.Error("same seed, different samples")
				}
				tables := map[int32]bool{}
				for _, x := range s {
					tab := &f.Tabs[x.Tab]
					tables[x.Tab] = true
					if !slices.ContainsFunc(tab.Refs, func(r objscan.Ref) bool { return int(r.Func) == int(x.Func) && r.Kind == x.Kind }) {
						t.Fatalf("sample %+v: table is not referenced by func %d as %s", x, x.Func, x.Kind)
					}
					if uint64(x.PC) >= uint64(tab.Len)*uint64(f.PCQuantum) {
						t.Fatalf("sample %+v: table covers only %d units", x, tab.Len)
					}
					switch p {
					case PCRandom:
						if x.PC%uint32(f.PCQuantum) != 0 {
							t.Fatalf("sample %+v: PC not a multiple of the quantum", x)
						}
					case PCZero:
						if x.PC != 0 {
							t.Fatalf("sample %+v: want PC 0", x)
						}
					case PC4096:
						if x.PC != 4096 {
							t.Fatalf("sample %+v: want PC 4096", x)
						}
					case PCReturn:
						ra := x.PC
						if x.Kind != objscan.KindPCSP {
							ra++
						}
						if !slices.Contains(b.calls[x.Func], ra) {
							t.Fatalf("sample %+v: %#x is not a return address of %s", x, ra, f.Funcs[x.Func].Name)
						}
					}
				}
				if p != PC4096 && len(tables) < 100 {
					t.Errorf("only %d distinct tables in 4096 samples", len(tables))
				}
			})
		}
	}
}

// TestSamplingWeights checks what ByReference and ByTable are uniform over,
// on the table with the most references.
func TestSamplingWeights(t *testing.T) {
	f, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	most := 0
	for i := range f.Tabs {
		if len(f.Tabs[i].Refs) > len(f.Tabs[most].Refs) {
			most = i
		}
	}
	refs, tabs := 0, 0
	for i := range f.Tabs {
		if f.Tabs[i].Len > 0 {
			refs += len(f.Tabs[i].Refs)
			tabs++
		}
	}
	const n = 1 << 18
	for _, tc := range []struct {
		sampling Sampling
		want     float64 // expected share of the table
	}{
		{ByReference, float64(len(f.Tabs[most].Refs)) / float64(refs)},
		{ByTable, 1 / float64(tabs)},
	} {
		b.opt.Sampling = tc.sampling
		s, err := b.Sample(PCZero, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, x := range s {
			if int(x.Tab) == most {
				got++
			}
		}
		share := float64(got) / n
		if share < tc.want*0.8 || share > tc.want*1.2 {
			t.Errorf("%s: table with %d refs drawn %.5f of the time, want %.5f", tc.sampling, len(f.Tabs[most].Refs), share, tc.want)
		}
	}
}

// TestReturnAddressesObjdump compares the return addresses with the CALL
// instructions go tool objdump prints for the program's own functions, on
// every container format and disassembled architecture.
func TestReturnAddressesObjdump(t *testing.T) {
	for _, tc := range []struct{ name, goos, goarch string }{
		{"linux-amd64", "linux", "amd64"},
		{"linux-386", "linux", "386"},
		{"linux-arm64", "linux", "arm64"},
		{"darwin-arm64", "darwin", "arm64"},
		{"windows-amd64", "windows", "amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testbuild.Config{Archive: "features", GOOS: tc.goos, GOARCH: tc.goarch}
			bin := testbuild.Build(t, cfg)
			f, b := open(t, cfg, Options{})
			calls, err := objdump.Calls(context.Background(), testbuild.GoBinary(), bin, "-s", `^main\.`)
			if err != nil {
				t.Fatal(err)
			}
			want := map[uint64]bool{} // return addresses objdump shows
			for _, c := range calls {
				want[c.Ret()] = true
			}
			if len(want) == 0 {
				t.Fatal("objdump shows no CALL in main.*")
			}
			got := map[uint64]bool{}
			for i, fn := range f.Funcs {
				if strings.HasPrefix(fn.Name, "main.") {
					for _, ra := range b.calls[i] {
						got[fn.Entry+uint64(ra)] = true
					}
				}
			}
			for ra := range want {
				if !got[ra] {
					t.Errorf("objdump has a call returning to %#x, lookupbench does not", ra)
				}
			}
			for ra := range got {
				if !want[ra] {
					t.Errorf("lookupbench has a return address %#x, objdump shows no call before it", ra)
				}
			}
			t.Logf("%d return addresses in main.*", len(got))
		})
	}
}

// TestReturnAddressesRuntime checks that every return address the runtime
// reports in real stacks is one that disassembly found.
func TestReturnAddressesRuntime(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			cfg := testbuild.Config{Archive: "callers", GOOS: "linux", GOARCH: goarch}
			c := testbuild.RunCallers(t, cfg)
			f, b := open(t, cfg, Options{})
			checked := 0
			for _, s := range c.Stacks {
				// The frames of one physical frame are its inlined calls,
				// innermost first, then the function itself; the PC of the
				// innermost is the return address. Skip the first physical
				// frame, whose innermost calls runtime.Callers may have
				// skipped, and runtime.goexit, whose "return address" is
				// made up by newproc.
				for start, i := 0, 0; i < len(s.Frames); i++ {
					if s.Frames[i].Inlined {
						continue
					}
					fr, ra := s.Frames[i], s.PCs[start]
					first := start == 0
					start = i + 1
					if first || fr.Function == "runtime.goexit" {
						continue
					}
					fi := funcAt(f, ra)
					if fi < 0 {
						t.Fatalf("stack %s: no function at %#x", s.Name, ra)
					}
					if !slices.Contains(b.calls[fi], uint32(ra-f.Funcs[fi].Entry)) {
						t.Errorf("stack %s frame %d (%s): return address %#x not found by disassembly", s.Name, i, fr.Function, ra)
					}
					checked++
				}
			}
			if checked < 10 {
				t.Errorf("checked only %d return addresses", checked)
			}
		})
	}
}

func funcAt(f *objscan.File, pc uint64) int {
	for i := range f.Funcs {
		if f.Funcs[i].Entry < pc && pc <= f.Funcs[i].End {
			return i
		}
	}
	return -1
}

func TestRun(t *testing.T) {
	_, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	var calls []string
	res, err := b.Run(RunOptions{
		Count:     2,
		BenchTime: BenchTime{N: 300},
		Progress: func(done, total int, name string) {
			calls = append(calls, name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	encs := b.Encodings()
	if want := 3*4*len(encs)*2 + 1; len(calls) != want {
		t.Errorf("%d progress calls, want %d", len(calls), want)
	}
	if len(res.Groups) != 12 {
		t.Fatalf("%d groups, want 12", len(res.Groups))
	}
	for _, g := range res.Groups {
		if len(g.Timings) != len(encs) {
			t.Fatalf("group %s/%s: %d timings, want %d (note %q)", g.Set, g.PCs, len(g.Timings), len(encs), g.Note)
		}
		for _, tm := range g.Timings {
			if len(tm.Runs) != 2 || tm.NsPerOp <= 0 || tm.Runs[0].Iters != 300 {
				t.Errorf("%s: %+v", g.Name(tm.Encoding), tm)
			}
			// Thread CPU time is present and positive. It is not checked
			// against the wall time: a test must not depend on wall time,
			// and on a virtual machine whose CPUs' clocks drift apart a
			// thread moved between them measured up to 3.4x its wall time
			// (2026-12-06). internal/cputime tests the clock itself.
			if res.Clock == ClockThreadCPU && !(tm.CPUNsPerOp > 0) {
				t.Errorf("%s: thread CPU %.2f ns/op, want > 0", g.Name(tm.Encoding), tm.CPUNsPerOp)
			}
			cached := tm.Encoding == EncVarintCacheCold || tm.Encoding == EncVarintCacheHit
			if cached != (tm.HitRate != nil) {
				t.Errorf("%s: hit rate %v", g.Name(tm.Encoding), tm.HitRate)
			}
		}
		// Up to 7/8, less when random replacement evicts a key of a group
		// early; more only when the set has few distinct keys (PC 0 and PC
		// 4096 in a small program), so that groups repeat keys.
		hmax := 7.0 / 8
		if g.PCs == "0" || g.PCs == "4096" {
			hmax = 1
		}
		if h := *g.Timing(EncVarintCacheHit).HitRate; h < 0.75 || h > hmax {
			t.Errorf("%s: cache-hit pattern hit rate %.3f, want about 7/8", g.Name(EncVarintCacheHit), h)
		}
		if g.LinearVsVarint <= 0 || g.LinearVsCacheHit <= 0 {
			t.Errorf("%s/%s: ratios %v %v", g.Set, g.PCs, g.LinearVsVarint, g.LinearVsCacheHit)
		}
		// Every encoding against each baseline but itself, from the
		// same rounds' times.
		if want := len(Baselines) * (len(encs) - 1); len(g.Ratios) != want {
			t.Errorf("%s/%s: %d ratios, want %d", g.Set, g.PCs, len(g.Ratios), want)
		}
		if r := g.Ratio(EncLinear, EncVarintWalk); r == nil || r.Summary.N != 2 || r.Summary.Median <= 0 {
			t.Errorf("%s/%s: linear / varint-walk: %+v", g.Set, g.PCs, r)
		}
	}
	if wantClock := map[bool]string{true: ClockThreadCPU, false: ClockWall}[runtime.GOOS == "linux"]; res.Clock != wantClock {
		t.Errorf("clock %q, want %q", res.Clock, wantClock)
	}
	// The ratio itself depends on the machine's load (and the kernel's
	// accounting of a thread's CPU time against the wall clock), so only
	// its presence is checked.
	if res.Clock == ClockThreadCPU && !(res.WallPerCPU > 0 && res.WallPerCPU < math.Inf(1)) {
		t.Errorf("wall/cpu = %v, want a positive ratio", res.WallPerCPU)
	}
	var buf bytes.Buffer
	if err := WriteBench(benchfmt.NewWriter(&buf), "features", res); err != nil {
		t.Fatal(err)
	}
	checkBenchfmt(t, buf.Bytes(), 12*len(encs)*2)
	buf.Reset()
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hot set, 64 pairs", "hot-shuffled set, 64 pairs", "cold set, 1,024 pairs", "linear / varint-cache-7in8", "linear / varint-walk", "linear-compact-fast / varint", "pcs=ret", "\nflat "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}

// checkBenchfmt parses data as benchstat does and checks it holds n results
// with ns/op, named uniquely except for repeated runs.
func checkBenchfmt(t *testing.T, data []byte, n int) {
	t.Helper()
	r := benchfmt.NewReader(bytes.NewReader(data), "bench.txt")
	got := 0
	names := map[string]int{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("benchfmt: %v", rec)
		case *benchfmt.Result:
			got++
			names[string(rec.Name.Full())]++
			if _, ok := rec.Value("sec/op"); !ok {
				t.Errorf("%s: no time per op", rec.Name)
			}
			if _, ok := rec.Value("cpu-sec/op"); ok != (runtime.GOOS == "linux") {
				t.Errorf("%s: cpu-sec/op present: %v", rec.Name, ok)
			}
			if rec.GetConfig("pctab-timing") == "" {
				t.Errorf("%s: no pctab-timing", rec.Name)
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Errorf("%d results, want %d", got, n)
	}
	for name, k := range names {
		if k != 2 {
			t.Errorf("%s appears %d times, want once per round", name, k)
		}
	}
}

func TestRunMatch(t *testing.T) {
	_, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	res, err := b.Run(RunOptions{
		BenchTime: BenchTime{N: 10},
		Match: func(name string) bool {
			return strings.HasPrefix(name, "set=hot/pcs=ret/") && strings.HasSuffix(name, "/enc=flat")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || len(res.Groups[0].Timings) != 1 || res.Groups[0].Timings[0].Encoding != EncFlat {
		t.Fatalf("got %+v", res.Groups)
	}
	if res.Groups[0].LinearVsVarint != 0 {
		t.Errorf("ratio without both timings: %v", res.Groups[0].LinearVsVarint)
	}
}

func TestFallback(t *testing.T) {
	// No disassembler for s390x: return addresses fall back to random PCs.
	_, b := open(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: "s390x"}, Options{})
	if n, _, why := b.ReturnAddresses(); n != 0 || why == "" {
		t.Fatalf("ReturnAddresses = %d, %q", n, why)
	}
	res, err := b.Run(RunOptions{BenchTime: BenchTime{N: 10}, Match: func(name string) bool { return strings.HasPrefix(name, "set=hot/pcs=random-fallback/") }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Groups[0].Note == "" || len(res.Groups[0].Timings) == 0 {
		t.Fatalf("got %+v", res.Groups)
	}
}

func TestNewOptions(t *testing.T) {
	bin := testbuild.Build(t, testbuild.Config{Archive: "features"})
	f, err := objscan.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, opt := range []Options{{HotSize: 1000}, {ColdSize: 1}, {HotSize: -4}} {
		if _, err := New(f, opt); err == nil {
			t.Errorf("New(%+v) succeeded", opt)
		}
	}
}

func TestParseBenchTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want BenchTime
		ok   bool
	}{
		{"1s", BenchTime{D: time.Second}, true},
		{"250ms", BenchTime{D: 250 * time.Millisecond}, true},
		{"100x", BenchTime{N: 100}, true},
		{"0x", BenchTime{}, false},
		{"-1s", BenchTime{}, false},
		{"x", BenchTime{}, false},
		{"fast", BenchTime{}, false},
	} {
		got, err := ParseBenchTime(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBenchTime(%q) = %v, %v", tc.in, got, err)
		}
		if tc.ok && got.String() != tc.in {
			t.Errorf("%q round-trips to %q", tc.in, got.String())
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	for _, tc := range []struct {
		name, info, model, family string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse\n", "Intel(R) Xeon(R) Processor", "x86"},
		{"amd", "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n", "AMD EPYC 7B13", "x86"},
		{"arm64", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "", "arm"},
		{"s390x", "vendor_id       : IBM/S390\n# processors    : 2\n", "", "s390"},
		{"ppc64le", "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n", "POWER9 (architected), altivec supported", "ppc"},
		{"riscv64", "processor\t: 0\nisa\t\t: rv64imafdc\n", "", "riscv"},
		{"empty", "", "", ""},
	} {
		model, family := parseCPUInfo([]byte(tc.info))
		if model != tc.model || family != tc.family {
			t.Errorf("%s: got %q, %q; want %q, %q", tc.name, model, family, tc.model, tc.family)
		}
	}
	for goarch, fam := range map[string]string{"amd64": "x86", "arm64": "arm", "s390x": "s390", "wasm": ""} {
		if got := archFamily(goarch); got != fam {
			t.Errorf("archFamily(%s) = %q, want %q", goarch, got, fam)
		}
	}
}

func TestNameValue(t *testing.T) {
	for in, want := range map[string]string{"go": "go", "a b/c=d": "a_b_c_d", "go.exe": "go.exe"} {
		if got := NameValue(in); got != want {
			t.Errorf("NameValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOrder checks the access patterns: in order, one pass of the identity;
// shuffled, ShuffledPasses passes, each a permutation of the samples, not
// all alike.
func TestOrder(t *testing.T) {
	const n = 64
	if o := order(SetHot, n, 1); len(o) != n || o[0] != 0 || o[n-1] != n-1 {
		t.Errorf("hot order %v", o)
	}
	o := order(SetHotShuffled, n, 1)
	if len(o) != n*ShuffledPasses {
		t.Fatalf("shuffled order has %d entries, want %d", len(o), n*ShuffledPasses)
	}
	distinct := map[string]bool{}
	for p := 0; p < ShuffledPasses; p++ {
		pass := o[p*n : (p+1)*n]
		seen := make([]bool, n)
		for _, i := range pass {
			if i >= n || seen[i] {
				t.Fatalf("pass %d is not a permutation: %v", p, pass)
			}
			seen[i] = true
		}
		distinct[fmt.Sprint(pass)] = true
	}
	if len(distinct) < ShuffledPasses/2 {
		t.Errorf("only %d distinct passes of %d", len(distinct), ShuffledPasses)
	}
}

// TestWritePairs reads back the pairs file and checks every pair's value
// with linearpc.Lookup on the written bytes.
func TestWritePairs(t *testing.T) {
	_, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	var buf bytes.Buffer
	if err := b.WritePairs(&buf, PCRandom, 256); err != nil {
		t.Fatal(err)
	}
	d := buf.Bytes()
	if !bytes.HasPrefix(d, []byte(PairsMagic)) {
		t.Fatalf("no magic: %q", d[:min(len(d), 20)])
	}
	d = d[len(PairsMagic):]
	size := binary.LittleEndian.Uint32(d)
	data := append(d[4:4+size:4+size], make([]byte, linearpc.SetPad)...)
	d = d[4+size:]
	n := binary.LittleEndian.Uint32(d)
	d = d[4:]
	if n != 256 || len(d) != 16*int(n) {
		t.Fatalf("%d pairs in %d bytes", n, len(d))
	}
	for i := 0; i < int(n); i++ {
		off, tl, pc, want := binary.LittleEndian.Uint32(d[16*i:]), binary.LittleEndian.Uint32(d[16*i+4:]), binary.LittleEndian.Uint32(d[16*i+8:]), int32(binary.LittleEndian.Uint32(d[16*i+12:]))
		if got := linearpc.Lookup(data[off:], tl, pc); got != want {
			t.Fatalf("pair %d: table at %d, len %d, pc %d: %d, want %d", i, off, tl, pc, got, want)
		}
	}
	if err := b.WritePairs(&buf, PCRandom, 3); err == nil {
		t.Error("3 pairs: no error")
	}
}

// TestInOrderAndCheck checks inOrder's layouts and that kernel.check fails
// a timing loop that does not visit the pattern's samples.
func TestInOrderAndCheck(t *testing.T) {
	xs := []int32{10, 20, 30, 40}
	if seq := inOrder(xs, []uint32{0, 1, 2, 3}); &seq[0] != &xs[0] {
		t.Error("inOrder copied an identity order")
	}
	ord := []uint32{2, 0, 3, 1, 1, 3, 0, 2}
	seq := inOrder(xs, ord)
	for i, j := range ord {
		if seq[i] != xs[j] {
			t.Fatalf("inOrder: position %d = %d, want %d", i, seq[i], xs[j])
		}
	}
	samples := make([]Sample, len(xs))
	for _, tc := range []struct {
		name string
		run  func(n int) int64
		ok   bool
	}{
		{"pattern", func(n int) int64 {
			var s int64
			for i := 0; i < n; i++ {
				s += int64(seq[i&7])
			}
			return s
		}, true},
		{"identity instead of the pattern, one period short", func(n int) int64 {
			var s int64
			for i := 0; i < n-1; i++ {
				s += int64(xs[i&3])
			}
			return s
		}, false},
	} {
		k := kernel{run: tc.run, one: func(i int) int32 { return xs[i] }, idx: orderIdx(ord), period: len(ord)}
		if err := k.check("test", samples, xs); (err == nil) != tc.ok {
			t.Errorf("%s: check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestKernelMix checks the cfps-varint-pcln kernel on a real binary's
// samples, pcln and not: every lookup against the decoded tables, and the
// timing loop's sum over every prefix of a shuffled pass, which it splits
// into a pcln loop and a loop for the rest.
func TestKernelMix(t *testing.T) {
	_, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	samples, err := b.Sample(PCRandom, 256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := b.reference(samples)
	if err != nil {
		t.Fatal(err)
	}
	order := make([]uint32, len(samples))
	for i := range order {
		order[i] = uint32((i*37 + 11) % len(samples))
	}
	var k *kernel
	for _, e := range b.encodings() {
		if e.info.Name == EncMixVarintPCLn {
			kk := e.prepare(b, kernelInput{samples: samples, order: order, seed: 1})
			k = &kk
		}
	}
	if k == nil {
		t.Fatalf("no %s encoding", EncMixVarintPCLn)
	}
	nln := 0
	for _, s := range samples {
		if s.Kind == objscan.KindPCLn {
			nln++
		}
	}
	if nln == 0 || nln == len(samples) {
		t.Fatalf("%d of %d samples are pcln: the test needs both", nln, len(samples))
	}
	if err := k.check(EncMixVarintPCLn, samples, ref); err != nil {
		t.Fatal(err)
	}
	var want int64
	for n := 1; n <= 2*len(order)+3; n++ {
		want += int64(ref[order[(n-1)%len(order)]])
		if got := k.run(n); got != want {
			t.Fatalf("run(%d) = %d, want %d", n, got, want)
		}
	}
}
