package lookupbench

import (
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
)

func TestOffsets(t *testing.T) {
	f, b := open(t, testbuild.Config{Archive: "features"}, Options{})
	q := uint32(f.PCQuantum)
	// Every sample of a bucket lies in it, in a table that covers it.
	for _, lo := range []uint32{0, 512, 1024} {
		s, err := b.sampleOffsets(lo, lo+512, 1024, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range s {
			if x.PC < lo || x.PC >= lo+512 || x.PC%q != 0 {
				t.Fatalf("bucket %d: sample %+v outside [%d, %d) or off the quantum", lo, x, lo, lo+512)
			}
			if uint64(x.PC) >= b.tableBytes(int(x.Tab)) {
				t.Fatalf("bucket %d: sample %+v past its table", lo, x)
			}
		}
	}
	if _, err := b.sampleOffsets(1<<30, 1<<30+512, 16, 1); err == nil {
		t.Error("no table reaches 1 GiB, but sampling succeeded")
	}
	res, err := b.Offsets(OffsetOptions{BucketBytes: 512, MaxBytes: 2048, Count: 2, BenchTime: BenchTime{N: 200},
		Match: func(name string) bool { return name != "set=hot-shuffled/pcs=offset=0-512/enc=flat" }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 4 {
		t.Fatalf("%d groups, want 4 buckets", len(res.Groups))
	}
	for i, g := range res.Groups {
		lo, hi, ok := OffsetBucket(g.PCs)
		if !ok || lo != uint32(i)*512 || hi != lo+512 {
			t.Errorf("group %d: PCs %q, want offset=%d-%d", i, g.PCs, i*512, i*512+512)
		}
		if g.Note != "" {
			continue // no function of the test binary is that long
		}
		want := len(b.encodings())
		if i == 0 {
			want-- // flat deselected
		}
		if len(g.Timings) != want {
			t.Errorf("group %s: %d timings, want %d", g.PCs, len(g.Timings), want)
		}
		for _, tm := range g.Timings {
			if len(tm.Runs) != 2 || tm.Summary.Median <= 0 {
				t.Errorf("group %s %s: %d runs, median %v", g.PCs, tm.Encoding, len(tm.Runs), tm.Summary.Median)
			}
		}
	}
	if res.Groups[0].Note != "" {
		t.Errorf("bucket 0: %s", res.Groups[0].Note)
	}
}
