package plots

import (
	"bytes"
	"math"
	"testing"

	"github.com/pctab/pctab/internal/stat"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/objscan"
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
	cfps := objscan.LinearVarintPCLnVariant
	r := &report.Report{
		Kinds: []report.KindRow{
			{Kind: "pcsp", VarintBytes: 1000, LinearBytes: 1200, DeltaPercent: 20, Variants: []report.KindVariant{{Name: cfps, Bytes: 900}}},
			{Kind: "empty", Variants: []report.KindVariant{{Name: cfps}}},
			{Kind: "pcln", VarintBytes: 2e6, LinearBytes: 1.5e6, DeltaPercent: -25, Variants: []report.KindVariant{{Name: cfps, Bytes: 2.2e6}}},
		},
		Tables:   report.Totals{VarintBytes: 2001000, LinearBytes: 1501200, DeltaPercent: -24.9},
		Variants: []report.VariantRow{{Name: cfps, Bytes: 2200900}},
		Mix:      &report.VariantRow{Name: report.MixName, Bytes: 2000900},
	}
	for _, tc := range []struct {
		variant string
		labels  []string
		values  []float64
		note    string
	}{
		{"", []string{"pcsp", "pcln", "all tables"}, []float64{20, -25, -24.9775}, "(2.00 MB → 1.50 MB)"},
		{cfps, []string{"pcsp", "pcln", "all tables", "all, pcln in varint"}, []float64{-10, 10, 9.9900, -0.004998}, "(2.00 MB → 2.20 MB)"},
	} {
		c, err := Kinds(r, tc.variant, "t", "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Bars) != len(tc.labels) {
			t.Fatalf("%q: bars %+v", tc.variant, c.Bars)
		}
		for i, b := range c.Bars {
			if b.Label != tc.labels[i] || math.Abs(b.Value-tc.values[i]) > 1e-3 {
				t.Errorf("%q: bar %d %s %.4f, want %s %.4f", tc.variant, i, b.Label, b.Value, tc.labels[i], tc.values[i])
			}
		}
		if c.Bars[1].Note != tc.note {
			t.Errorf("%q: note %q, want %q", tc.variant, c.Bars[1].Note, tc.note)
		}
		var b bytes.Buffer
		if err := c.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Kinds(r, "compact", "t", "s"); err == nil {
		t.Error("a variant the report has no bytes for gave a chart")
	}
}
