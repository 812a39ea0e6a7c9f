package svgplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// elements parses doc as XML (failing the test if it is not well formed)
// and returns its elements.
func elements(t *testing.T, doc []byte) []xml.StartElement {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var out []xml.StartElement
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 && e.Name.Local != "svg" {
				t.Fatalf("root element %q, want svg", e.Name.Local)
			}
			depth++
			out = append(out, e.Copy())
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 || len(out) == 0 {
		t.Fatalf("unbalanced or empty document")
	}
	return out
}

func get(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func withClass(es []xml.StartElement, class string) []xml.StartElement {
	var out []xml.StartElement
	for _, e := range es {
		if get(e, "class") == class {
			out = append(out, e)
		}
	}
	return out
}

func TestPlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      Plot
		points int
		ranges [4]float64
	}{
		{
			name: "scatter-log",
			p: Plot{Title: "sizes <&> \"quoted\"", X: Axis{Label: "MB", Log: true}, Y: Axis{Label: "%"},
				Series:   []Series{{Name: "a&b", Markers: true, Points: []Point{{3.1, 0.4, "x<y"}, {48, 0.93, "go"}, {150, 1.2, "big"}}}},
				RefLines: []RefLine{{0.5, "goal"}}},
			points: 3,
			ranges: [4]float64{1, 1000, 0.4, 1.2},
		},
		{
			name: "lines",
			p: Plot{X: Axis{Label: "offset"}, Y: Axis{Label: "ns", Min: 0, Max: 0},
				Series: []Series{
					{Name: "varint", Line: true, Markers: true, Points: []Point{{256, 10, ""}, {768, 30, ""}, {7936, 700, ""}}},
					{Name: "linear", Line: true, Points: []Point{{256, 5, ""}, {768, 5.5, ""}, {7936, 6, ""}}},
				}},
			points: 3, // markers only on the first series
			ranges: [4]float64{0, 8000, 0, 700},
		},
		{
			name: "fixed",
			p: Plot{X: Axis{Min: 0, Max: 8192}, Y: Axis{Min: 0, Max: 100},
				Series: []Series{{Name: "s", Markers: true, Points: []Point{{1, 1, ""}, {9000, 5, "outside"}}}}},
			points: 1,
			ranges: [4]float64{0, 8192, 0, 100},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xmin, xmax, ymin, ymax, err := tc.p.Ranges()
			if err != nil {
				t.Fatal(err)
			}
			// The ranges hold every point and are the expected round values.
			if xmin > tc.ranges[0] || xmax < tc.ranges[1] || ymin > tc.ranges[2] || ymax < tc.ranges[3] {
				t.Errorf("ranges x [%v, %v] y [%v, %v] do not hold x [%v, %v] y [%v, %v]", xmin, xmax, ymin, ymax, tc.ranges[0], tc.ranges[1], tc.ranges[2], tc.ranges[3])
			}
			var buf bytes.Buffer
			if err := tc.p.WriteSVG(&buf); err != nil {
				t.Fatal(err)
			}
			es := elements(t, buf.Bytes())
			if n := len(withClass(es, "point")); n != tc.points {
				t.Errorf("%d points drawn, want %d", n, tc.points)
			}
			axes := withClass(es, "axes")
			if len(axes) != 1 {
				t.Fatalf("%d axes groups", len(axes))
			}
			for i, k := range []string{"data-xmin", "data-xmax", "data-ymin", "data-ymax"} {
				v, err := strconv.ParseFloat(get(axes[0], k), 64)
				if err != nil || v != [4]float64{xmin, xmax, ymin, ymax}[i] {
					t.Errorf("%s = %q, want %v", k, get(axes[0], k), [4]float64{xmin, xmax, ymin, ymax}[i])
				}
			}
			// Every marker lies inside the plot area.
			for _, c := range withClass(es, "point") {
				cx, _ := strconv.ParseFloat(get(c, "cx"), 64)
				cy, _ := strconv.ParseFloat(get(c, "cy"), 64)
				if cx < marginLeft || cx > DefaultWidth-marginRight || cy < marginTop || cy > DefaultHeight-marginBottom {
					t.Errorf("point at (%v, %v) outside the plot area", cx, cy)
				}
			}
			if len(withClass(es, "xtick")) < 2 || len(withClass(es, "ytick")) < 2 {
				t.Errorf("too few ticks")
			}
		})
	}
}

func TestPlotErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := (&Plot{}).WriteSVG(&buf); !errors.Is(err, ErrNoData) {
		t.Errorf("empty plot: %v, want ErrNoData", err)
	}
	p := Plot{X: Axis{Log: true}, Series: []Series{{Points: []Point{{0, 1, ""}}}}}
	if err := p.WriteSVG(&buf); err == nil || !strings.Contains(err.Error(), "log") {
		t.Errorf("log axis with 0: %v", err)
	}
}

func TestBarChart(t *testing.T) {
	c := BarChart{Title: "kinds", ValueLabel: "change (%)", Bars: []Bar{{"pcsp", 12.5, "(1 MB)"}, {"pcfile", -40, ""}, {"<pcln>", 3, ""}}}
	lo, hi, err := c.Range()
	if err != nil {
		t.Fatal(err)
	}
	if lo > -40 || hi < 12.5 {
		t.Errorf("range [%v, %v] does not hold [-40, 12.5]", lo, hi)
	}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	es := elements(t, buf.Bytes())
	if n := len(withClass(es, "bar")); n != 3 {
		t.Errorf("%d bars, want 3", n)
	}
	if !bytes.Contains(buf.Bytes(), []byte("&lt;pcln&gt;")) {
		t.Error("label not escaped")
	}
	if err := (&BarChart{}).WriteSVG(&buf); !errors.Is(err, ErrNoData) {
		t.Errorf("empty chart: %v", err)
	}
}

func TestTicks(t *testing.T) {
	if got := ticks(Axis{}, 0, 8000); len(got) < 3 || got[0] != 0 || got[len(got)-1] != 8000 {
		t.Errorf("linear ticks of [0, 8000]: %v", got)
	}
	if got := ticks(Axis{Log: true}, 1, 1000); len(got) != 10 || got[0] != 1 || got[9] != 1000 {
		t.Errorf("log ticks of [1, 1000]: %v", got)
	}
}

func TestTickValues(t *testing.T) {
	for _, tc := range []struct{ lo, hi float64 }{{0.4, 1.1}, {0, 0.7}, {-3, 12.5}} {
		lo, hi, err := axisRange(Axis{}, []float64{tc.lo, tc.hi})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range ticks(Axis{}, lo, hi) {
			if s := (Axis{}).format(v); len(s) > 6 {
				t.Errorf("range [%v, %v]: tick %q", tc.lo, tc.hi, s)
			}
		}
	}
	lo, _, _ := axisRange(Axis{Zero: true}, []float64{0.4, 1.1})
	if lo != 0 {
		t.Errorf("Zero: range starts at %v", lo)
	}
	if s := (Axis{}).format(math.Copysign(0, -1)); s != "0" {
		t.Errorf("negative zero formats as %q", s)
	}
}
