package plots

import (
	"bytes"
	"testing"

	"github.com/pctab/pctab/internal/stat"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/report"
)

func TestOffsets(t *testing.T) {
	r := &lookupbench.Result{Count: 3, Clock: lookupbench.ClockThreadCPU}
	for i, lo := range []uint32{0, 512, 1024} {
		g := lookupbench.Group{Set: lookupbench.SetHotShuffled, PCs: lookupbench.OffsetGroupName(lo, lo+512)}
		g.Timings = []lookupbench.Timing{
			{Encoding: "varint", Summary: stat.Summary{Median: float64(50 * (i + 1))}},
			{Encoding: "linear", Summary: stat.Summary{Median: 15}},
		}
		r.Groups = append(r.Groups, g)
	}
	r.Groups = append(r.Groups, lookupbench.Group{Set: lookupbench.SetHotShuffled, PCs: lookupbench.OffsetGroupName(1536, 2048), Note: "no table covers byte offset 1536"})
	r.Groups = append(r.Groups, lookupbench.Group{Set: lookupbench.SetHot, PCs: "random", Timings: []lookupbench.Timing{{Encoding: "varint", Summary: stat.Summary{Median: 9}}}})
	p := Offsets(r, "t", "s")
	if len(p.Series) != 2 || p.Series[0].Name != "varint" || p.Series[1].Name != "linear" {
		t.Fatalf("series %+v", p.Series)
	}
	for _, s := range p.Series {
		if len(s.Points) != 3 {
			t.Errorf("%s: %d points, want one per bucket with timings", s.Name, len(s.Points))
		}
	}
	if pt := p.Series[0].Points[2]; pt.X != 1280 || pt.Y != 150 {
		t.Errorf("varint's third point %+v, want (1280, 150): the bucket's middle", pt)
	}
	var b bytes.Buffer
	if err := p.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
}

func TestKinds(t *testing.T) {
	r := &report.Report{
		Kinds:  []report.KindRow{{Kind: "pcsp", VarintBytes: 1000, LinearBytes: 1200, DeltaPercent: 20}, {Kind: "empty"}, {Kind: "pcln", VarintBytes: 2e6, LinearBytes: 1.5e6, DeltaPercent: -25}},
		Tables: report.Totals{VarintBytes: 2001000, LinearBytes: 1501200, DeltaPercent: -24.9},
	}
	c := Kinds(r, "t", "s")
	if len(c.Bars) != 3 || c.Bars[0].Label != "pcsp" || c.Bars[1].Label != "pcln" || c.Bars[2].Label != "all tables" {
		t.Fatalf("bars %+v", c.Bars)
	}
	if c.Bars[1].Note != "(2.00 MB → 1.50 MB)" || c.Bars[0].Note != "(1.0 kB → 1.2 kB)" {
		t.Errorf("notes %q, %q", c.Bars[0].Note, c.Bars[1].Note)
	}
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
}
