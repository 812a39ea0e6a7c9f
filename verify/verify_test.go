package verify

import (
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/linearpc"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

func open(t *testing.T, cfg testbuild.Config) *objscan.File {
	t.Helper()
	f, err := objscan.Open(testbuild.Build(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestRealBinaries verifies every table of real binaries for targets with
// each PC quantum and byte order.
func TestRealBinaries(t *testing.T) {
	for _, tc := range []struct{ goos, goarch string }{
		{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "s390x"}, {"windows", "amd64"},
	} {
		t.Run(tc.goos+"-"+tc.goarch, func(t *testing.T) {
			f := open(t, testbuild.Config{Archive: "features", GOOS: tc.goos, GOARCH: tc.goarch})
			res, err := File(f, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Tables != len(f.Tabs) || res.PCs == 0 {
				t.Fatalf("%d tables of %d, %d PCs, %d mismatches: %q", res.Tables, len(f.Tabs), res.PCs, res.Mismatches, res.Examples)
			}
		})
	}
}

// TestRejectsNonLinkerTables checks that verify does not pass vacuously on
// a table the linker would not have written: a value delta stored as a
// non-minimal two-byte varint decodes to the same values, so lookups would
// agree, but the table is not canonical and must be reported.
func TestRejectsNonLinkerTables(t *testing.T) {
	f := open(t, testbuild.Config{Archive: "features"})
	for i := range f.Tabs {
		d := f.Tabs[i].Data
		if len(d) < 4 || d[0] >= 0x80 || d[0] == 0 {
			continue
		}
		bad := append([]byte{d[0] | 0x80, 0x00}, d[1:]...)
		f.Tabs[i].Data = bad
		_, err := File(f, 1)
		f.Tabs[i].Data = d
		if err == nil {
			t.Fatalf("table at %#x re-stored as % x: verify passed", f.Tabs[i].Offset, bad)
		}
		t.Logf("rejected: %v", err)
		return
	}
	t.Fatal("no table with a one-byte first value delta")
}

// TestReleases verifies every table at every PC of cmd/gofmt as built by
// the last patch release of every Go minor version, go1.2.2 to go1.27.4
// (testbuild.Releases; objscan's TestReleases cross-checks the same
// binaries against debug/gosym).
func TestReleases(t *testing.T) {
	testenv.SkipUnlessLong(t, "builds cmd/gofmt with 26 Go releases, downloading them")
	for _, tg := range testbuild.Releases() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			cfg := tg.Config
			cfg.Package = "cmd/gofmt"
			f := open(t, cfg)
			res, err := File(f, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Tables != len(f.Tabs) || res.PCs == 0 {
				t.Fatalf("%d tables of %d, %d PCs, %d mismatches: %q", res.Tables, len(f.Tabs), res.PCs, res.Mismatches, res.Examples)
			}
		})
	}
}

// TestHugeTable checks that a table of many runs, as in a generated
// function of megabytes, is verified in bounded time: the varint lookups,
// each of which walks the table from its start, are sampled at run ends
// once a lookup at every PC would walk more than maxVarintWalk entries,
// and the result says so. Before, a 7.4 MB binary with one 3.6 MB
// function ran for hours.
func TestHugeTable(t *testing.T) {
	defer func(old uint64) { maxVarintWalk = old }(maxVarintWalk)
	maxVarintWalk = 1 << 20
	const nruns = 1 << 14 // 2^14 × 2^15 / 2 = 2^28 steps if every PC were looked up
	var tab pcvalue.Table
	for i := 0; i < nruns; i++ {
		tab.Runs = append(tab.Runs, pcvalue.Run{PC: uint32(2 * i), Value: int32(i % 7)})
	}
	tab.Len = 2 * nruns
	data := varintpc.Encode(tab)
	f := &objscan.File{
		PCQuantum: 1,
		Funcs:     []objscan.Func{{Name: "main.huge", Entry: 0x1000, End: 0x1000 + 4*nruns, Size: 4 * nruns}},
		Tabs:      []objscan.Table{{Offset: 1, Data: data, Len: tab.Len, Refs: []objscan.Ref{{Func: 0, Kind: objscan.KindPCLn}}}},
	}
	res, err := File(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("mismatches: %v", res.Examples)
	}
	if res.VarintSampled != 1 {
		t.Errorf("%d tables sampled, want 1", res.VarintSampled)
	}
	if res.PCs != 2*nruns {
		t.Errorf("%d PCs checked, want %d", res.PCs, 2*nruns)
	}
	// A lookup at every PC, in the table and past it to the function's
	// end, would make 2 × 2^15 + 2 × 2^15 varint lookups; sampled, at most
	// the ends of every 2^7-th run and the ends of the uncovered span.
	variants := int64(0)
	for _, v := range linearpc.Variants() {
		variants++
		if !v.Pooled() {
			variants++
		}
	}
	other := 2*nruns*(1+variants) + 2*nruns*(1+variants)
	if varint := res.Lookups - other; varint > 2*(nruns/128+2)+4 {
		t.Errorf("%d varint lookups, want at most %d", varint, 2*(nruns/128+2)+4)
	}
}
