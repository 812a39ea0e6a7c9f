package report

import (
	"os"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// The reference figures of golang/go#61984's size comparison, for the Go
// 1.26.8 linux/amd64 go binary.
const (
	refGoSize     = 15434687
	refVarint     = 1823043
	refLinear     = 2243978
	refGoVersion  = "go1.26.8"
	refGoPlatform = "linux/amd64"
)

// TestReferenceTotals reproduces the two reference totals exactly. They are
// defined for one binary; elsewhere the test says so and skips.
func TestReferenceTotals(t *testing.T) {
	path := testbuild.GoBinary()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := objscan.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st.Size() != refGoSize || f.GoVersion != refGoVersion || f.GOOS+"/"+f.GOARCH != refGoPlatform {
		t.Skipf("%s is %s %s/%s of %d bytes; the reference figures are for the %s %s go binary of %d bytes",
			path, f.GoVersion, f.GOOS, f.GOARCH, st.Size(), refGoVersion, refGoPlatform, refGoSize)
	}
	r, err := Compute(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Tables.VarintBytes != refVarint || r.Tables.LinearBytes != refLinear {
		t.Errorf("varint %d, linear %d bytes; want %d and %d", r.Tables.VarintBytes, r.Tables.LinearBytes, refVarint, refLinear)
	}
	checkConsistent(t, r)
}

// checkConsistent checks the relations between a report's figures.
func checkConsistent(t *testing.T, r *Report) {
	t.Helper()
	var refs int
	var vb, lb int64
	for _, k := range r.Kinds {
		refs += k.References
		vb += k.VarintBytes
		lb += k.LinearBytes
	}
	if refs != r.Tables.References || vb != r.Tables.VarintBytes || lb != r.Tables.LinearBytes {
		t.Errorf("kind rows sum to %d refs, %d varint, %d linear bytes; totals are %d, %d, %d",
			refs, vb, lb, r.Tables.References, r.Tables.VarintBytes, r.Tables.LinearBytes)
	}
	if r.Tables.LinearBytes > r.Tables.LinearNoDedup {
		t.Errorf("content dedup grew the tables: %d > %d", r.Tables.LinearBytes, r.Tables.LinearNoDedup)
	}
	if r.Tables.VarintBytes > r.Parts.PCTab {
		t.Errorf("varint tables (%d bytes) exceed the pctab (%d bytes)", r.Tables.VarintBytes, r.Parts.PCTab)
	}
	if r.OutOfBandBytes != 4*int64(r.Functions) {
		t.Errorf("out-of-band bytes %d for %d functions", r.OutOfBandBytes, r.Functions)
	}
}

// TestVariantsAndHybrid checks the variant rows on a real binary: the spec
// row equals the totals, and the hybrid lies between varint and spec.
func TestVariantsAndHybrid(t *testing.T) {
	path := testbuild.Build(t, testbuild.Config{Archive: "features"})
	f, err := objscan.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Compute(f, Options{Variants: true})
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, r)
	if len(r.Variants) == 0 || r.Variants[0].Name != "spec" || r.Variants[0].Bytes != r.Tables.LinearBytes {
		t.Fatalf("first variant row %+v, want spec with %d bytes", r.Variants[0], r.Tables.LinearBytes)
	}
	if r.Hybrid == nil || r.Hybrid.Bytes <= r.Tables.VarintBytes/2 || r.Hybrid.Bytes >= r.Tables.LinearBytes+r.Tables.VarintBytes {
		t.Errorf("hybrid %+v out of range", r.Hybrid)
	}
	found := false
	for _, v := range r.Variants {
		if v.Name == r.Best {
			found = true
		}
		if v.Bytes <= 0 {
			t.Errorf("variant %s: %d bytes", v.Name, v.Bytes)
		}
	}
	if !found {
		t.Errorf("best variant %q is not among the rows", r.Best)
	}
}

// TestVariantSizesExact checks every variant row, the hybrid and the spec
// totals against sets filled the plain way: every table decoded and added,
// none skipped, and for the hybrid a spec set of the tables a hot kind
// references plus the varint bytes of those a cold kind references. It
// runs on a test build and on the local go binary and gofmt, real
// binaries with tens of thousands of tables.
func TestVariantSizesExact(t *testing.T) {
	paths := map[string]func(t *testing.T) string{
		"features": func(t *testing.T) string { return testbuild.Build(t, testbuild.Config{Archive: "features"}) },
	}
	for name, path := range benchBinaries() {
		paths[name] = func(t *testing.T) string {
			if testing.Short() {
				t.Skip("a real binary takes a second; skipped in -short mode")
			}
			return path
		}
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			f, err := objscan.Open(path(t))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := Compute(f, Options{Variants: true})
			if err != nil {
				t.Fatal(err)
			}
			tabs := make([]pcvalue.Table, len(f.Tabs))
			for i := range f.Tabs {
				if tabs[i], _, err = varintpc.Decode(f.Tabs[i].Data); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]int64{}
			for _, v := range linearpc.Variants() {
				set := linearpc.NewSet(v)
				for _, tab := range tabs {
					set.Add(tab)
				}
				want[v.Name] = int64(set.Size())
				if v.IsSpec() && (r.Tables.LinearBytes != want[v.Name] || r.Tables.LinearDistinct != set.Len()) {
					t.Errorf("spec totals: %d bytes in %d encodings, want %d in %d", r.Tables.LinearBytes, r.Tables.LinearDistinct, want[v.Name], set.Len())
				}
			}
			if len(r.Variants) != len(want) {
				t.Fatalf("%d variant rows, want %d", len(r.Variants), len(want))
			}
			for _, row := range r.Variants {
				if row.Bytes != want[row.Name] {
					t.Errorf("variant %s: %d bytes, want %d", row.Name, row.Bytes, want[row.Name])
				}
			}
			// Every variant that does not pool chunks has per-kind
			// bytes, and they add up to its set's size.
			perKind := map[string]int64{}
			for _, kr := range r.Kinds {
				for _, kv := range kr.Variants {
					perKind[kv.Name] += kv.Bytes
				}
			}
			for _, v := range linearpc.Variants() {
				if got, ok := perKind[v.Name]; v.IsSpec() || v.Pooled() {
					if ok {
						t.Errorf("%s has per-kind bytes", v.Name)
					}
				} else if got != want[v.Name] {
					t.Errorf("variant %s: kinds add up to %d bytes, want %d", v.Name, got, want[v.Name])
				}
			}
			hot := linearpc.NewSet(linearpc.Spec())
			cold := map[int]bool{}
			var hybrid int64
			for fi := range f.Funcs {
				fn := &f.Funcs[fi]
				for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
					i, ok := f.TableIndex(fn.TableOffset(k))
					switch {
					case !ok:
					case hotKind(k):
						hot.Add(tabs[i])
					case !cold[i]:
						cold[i] = true
						hybrid += int64(len(f.Tabs[i].Data))
					}
				}
			}
			hybrid += int64(hot.Size())
			if r.Hybrid == nil || r.Hybrid.Bytes != hybrid {
				t.Errorf("hybrid %+v, want %d bytes", r.Hybrid, hybrid)
			}
			// The mix: pcln tables' varint bytes, each table once, and a
			// cf-palette-short set of every table another kind uses.
			cfps := linearpc.NewSet(variant(t, objscan.LinearVarintPCLnVariant))
			ln := map[int]bool{}
			var mix int64
			for fi := range f.Funcs {
				fn := &f.Funcs[fi]
				for k := objscan.KindPCSP; k < objscan.KindPCData+objscan.TableKind(len(fn.PCData)); k++ {
					i, ok := f.TableIndex(fn.TableOffset(k))
					switch {
					case !ok:
					case k != objscan.KindPCLn:
						cfps.Add(tabs[i])
					case !ln[i]:
						ln[i] = true
						mix += int64(len(f.Tabs[i].Data))
					}
				}
			}
			mix += int64(cfps.Size())
			if r.Mix == nil || r.Mix.Bytes != mix || r.Mix.Name != MixName {
				t.Errorf("mix %+v, want %d bytes", r.Mix, mix)
			}
			if r.Mix != nil && len(ln) == 0 {
				t.Error("no pcln table")
			}
		})
	}
}

func variant(t *testing.T, name string) linearpc.Variant {
	for _, v := range linearpc.Variants() {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no variant %s", name)
	return linearpc.Variant{}
}

// TestWasmNote checks that the text report of a js/wasm build says its
// sizes are of linear memory, which the module stores without its runs
// of zeros.
func TestWasmNote(t *testing.T) {
	f, err := objscan.Open(testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "js", GOARCH: "wasm"}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Compute(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "wasm: sizes are of linear memory") {
		t.Errorf("no note on linear memory:\n%s", b.String())
	}
}
