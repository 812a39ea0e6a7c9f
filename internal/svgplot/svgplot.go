// Package svgplot writes small, self-contained SVG charts: line and
// scatter plots on linear or logarithmic axes, and horizontal bar charts.
// The output is plain SVG 1.1 written with fmt and encoding/xml's escaping,
// with no script and no external resource, so a proposal or a Markdown page
// can embed it as is.
package svgplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Default sizes in SVG user units (pixels).
const (
	DefaultWidth  = 800
	DefaultHeight = 500
)

// Palette is the colors of successive series (colorblind-safe, Okabe-Ito
// and Tol).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#882255", "#999933", "#44AA99", "#AA4499", "#661100"}

// Color returns the color of the i-th series.
func Color(i int) string { return palette[i%len(palette)] }

// A Point is one data point; Label, if set, is written next to it.
type Point struct {
	X, Y  float64
	Label string
}

// A Series is one named set of points, drawn as a line through them
// (Line), as markers (Markers), or both.
type Series struct {
	Name    string
	Points  []Point
	Line    bool
	Markers bool
	Dashed  bool
}

// An Axis is one axis of a Plot. With Min == Max the range is chosen from
// the data (and the reference lines), extended to round tick values.
type Axis struct {
	Label    string
	Min, Max float64
	Log      bool // logarithmic (base 10); every value must be positive
	// Zero makes an automatic linear range include zero.
	Zero bool
	// Format formats a tick value; nil uses strconv's shortest form.
	Format func(v float64) string
}

// A RefLine is a horizontal reference line at Y, labelled.
type RefLine struct {
	Y     float64
	Label string
}

// A Plot is a line or scatter plot.
type Plot struct {
	Title         string
	Subtitle      string // the command, machine and date, say; "\n" breaks lines (two fit)
	X, Y          Axis
	Series        []Series
	RefLines      []RefLine
	Width, Height int // 0: DefaultWidth, DefaultHeight
}

// margins of the plot area.
const (
	marginLeft   = 80
	marginRight  = 190 // legend
	marginTop    = 68
	marginBottom = 60
)

// ErrNoData is returned for a plot or chart with nothing to draw.
var ErrNoData = errors.New("svgplot: no data")

// Ranges returns the ranges the axes will span: the axis's own, or the
// data's extended to round tick values.
func (p *Plot) Ranges() (xmin, xmax, ymin, ymax float64, err error) {
	var xs, ys []float64
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if bad(pt.X) || bad(pt.Y) {
				continue
			}
			xs = append(xs, pt.X)
			ys = append(ys, pt.Y)
		}
	}
	for _, r := range p.RefLines {
		ys = append(ys, r.Y)
	}
	if len(xs) == 0 {
		return 0, 0, 0, 0, ErrNoData
	}
	xmin, xmax, err = axisRange(p.X, xs)
	if err != nil {
		return
	}
	ymin, ymax, err = axisRange(p.Y, ys)
	return
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func axisRange(a Axis, vs []float64) (lo, hi float64, err error) {
	if a.Min != a.Max {
		if a.Log && a.Min <= 0 {
			return 0, 0, fmt.Errorf("svgplot: axis %q: log scale from %v", a.Label, a.Min)
		}
		return a.Min, a.Max, nil
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	if a.Zero && !a.Log {
		lo, hi = 0, 0
	}
	for _, v := range vs {
		if a.Log && v <= 0 {
			return 0, 0, fmt.Errorf("svgplot: axis %q: log scale, value %v", a.Label, v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if a.Log {
		return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)+1e-12)), nil
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	step := niceStep((hi - lo) / 5)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step, nil
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(x)))
	switch f := x / e; {
	case f <= 1:
		return e
	case f <= 2:
		return 2 * e
	case f <= 5:
		return 5 * e
	}
	return 10 * e
}

// ticks returns the tick values of [lo, hi].
func ticks(a Axis, lo, hi float64) []float64 {
	var ts []float64
	if a.Log {
		for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi*(1+1e-9); e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
					ts = append(ts, v)
				}
			}
		}
		return ts
	}
	step := niceStep((hi - lo) / 5)
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, round12(math.Round(v/step)*step))
	}
	return ts
}

// round12 rounds v to 12 significant digits, so that a tick reads 0.6,
// not 0.6000000000000001.
func round12(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return r
}

func (a Axis) format(v float64) string {
	v += 0 // no "-0"
	if a.Format != nil {
		return a.Format(v)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// scale maps v in [lo, hi] to [p0, p1].
func scale(a Axis, v, lo, hi, p0, p1 float64) float64 {
	if a.Log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	return p0 + (v-lo)/(hi-lo)*(p1-p0)
}

// svgWriter accumulates the document.
type svgWriter struct{ bytes.Buffer }

func (w *svgWriter) f(format string, args ...any) { fmt.Fprintf(&w.Buffer, format, args...) }

// text writes a text element with escaped content.
func (w *svgWriter) text(x, y float64, attrs, s string) {
	w.f(`<text x="%.1f" y="%.1f"%s>`, x, y, attrs)
	xml.EscapeText(&w.Buffer, []byte(s))
	w.f("</text>\n")
}

func (w *svgWriter) header(width, height int, title, subtitle string) {
	w.f(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	w.f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w.text(float64(width)/2, 22, ` text-anchor="middle" font-size="16" font-weight="bold"`, title)
	for i, line := range strings.Split(subtitle, "\n") {
		if line != "" {
			w.text(float64(width)/2, 38+13*float64(i), ` text-anchor="middle" font-size="11" fill="#444"`, line)
		}
	}
}

// WriteSVG writes the plot as an SVG document.
func (p *Plot) WriteSVG(out io.Writer) error {
	xmin, xmax, ymin, ymax, err := p.Ranges()
	if err != nil {
		return err
	}
	width, height := p.Width, p.Height
	if width == 0 {
		width = DefaultWidth
	}
	if height == 0 {
		height = DefaultHeight
	}
	x0, x1 := float64(marginLeft), float64(width-marginRight)
	y0, y1 := float64(height-marginBottom), float64(marginTop)
	X := func(v float64) float64 { return scale(p.X, v, xmin, xmax, x0, x1) }
	Y := func(v float64) float64 { return scale(p.Y, v, ymin, ymax, y0, y1) }
	w := &svgWriter{}
	w.header(width, height, p.Title, p.Subtitle)
	w.f(`<g class="axes" data-xmin="%g" data-xmax="%g" data-ymin="%g" data-ymax="%g">`+"\n", xmin, xmax, ymin, ymax)
	for _, t := range ticks(p.X, xmin, xmax) {
		x := X(t)
		w.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, y0, x, y1)
		w.text(x, y0+16, ` class="xtick" text-anchor="middle"`, p.X.format(t))
	}
	for _, t := range ticks(p.Y, ymin, ymax) {
		y := Y(t)
		w.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x1, y)
		w.text(x0-6, y+4, ` class="ytick" text-anchor="end"`, p.Y.format(t))
	}
	w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", x0, y1, x1-x0, y0-y1)
	w.text((x0+x1)/2, float64(height)-18, ` text-anchor="middle"`, p.X.Label)
	w.text(18, (y0+y1)/2, fmt.Sprintf(` text-anchor="middle" transform="rotate(-90 18 %.1f)"`, (y0+y1)/2), p.Y.Label)
	w.f("</g>\n")
	for _, r := range p.RefLines {
		if r.Y < ymin || r.Y > ymax {
			continue
		}
		y := Y(r.Y)
		w.f(`<line class="refline" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="6 4"/>`+"\n", x0, y, x1, y)
		w.text(x0+4, y-4, ` fill="#c00" font-size="11"`, r.Label)
	}
	inside := func(pt Point) bool {
		return !bad(pt.X) && !bad(pt.Y) && pt.X >= xmin && pt.X <= xmax && pt.Y >= ymin && pt.Y <= ymax
	}
	for i, s := range p.Series {
		c := Color(i)
		w.f(`<g class="series" data-name="%s">`+"\n", attr(s.Name))
		if s.Line {
			var path bytes.Buffer
			for _, pt := range s.Points {
				if !inside(pt) {
					continue
				}
				cmd := "L"
				if path.Len() == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, X(pt.X), Y(pt.Y))
			}
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="5 3"`
			}
			w.f(`<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", bytes.TrimSpace(path.Bytes()), c, dash)
		}
		for _, pt := range s.Points {
			if !inside(pt) {
				continue
			}
			if s.Markers {
				w.f(`<circle class="point" cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>`, X(pt.X), Y(pt.Y), c)
				xml.EscapeText(&w.Buffer, []byte(fmt.Sprintf("%s %s: %s, %s", s.Name, pt.Label, p.X.format(pt.X), p.Y.format(pt.Y))))
				w.f("</title></circle>\n")
			}
			if pt.Label != "" {
				w.text(X(pt.X)+5, Y(pt.Y)-4, ` class="label" font-size="9" fill="#333"`, pt.Label)
			}
		}
		w.f("</g>\n")
		// Legend.
		ly := float64(marginTop) + 18*float64(i)
		w.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", x1+14, ly, x1+34, ly, c)
		w.text(x1+40, ly+4, "", s.Name)
	}
	w.f("</svg>\n")
	_, err = out.Write(w.Bytes())
	return err
}

// attr escapes s for an attribute value.
func attr(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// A Bar is one bar of a BarChart.
type Bar struct {
	Label string
	Value float64
	Note  string // written after the value, e.g. the bytes behind it
}

// A BarChart is a horizontal bar chart: one bar per label, positive
// values to the right of zero, negative to the left.
type BarChart struct {
	Title, Subtitle string
	ValueLabel      string
	Bars            []Bar
	// Format formats a value; nil uses strconv's shortest form.
	Format func(v float64) string
	Width  int // 0: DefaultWidth
}

// Range returns the value range the chart spans: the bars' and zero,
// extended to round tick values.
func (c *BarChart) Range() (lo, hi float64, err error) {
	vs := []float64{0}
	for _, b := range c.Bars {
		if !bad(b.Value) {
			vs = append(vs, b.Value)
		}
	}
	if len(c.Bars) == 0 {
		return 0, 0, ErrNoData
	}
	return axisRange(Axis{Label: c.ValueLabel}, vs)
}

// WriteSVG writes the chart as an SVG document.
func (c *BarChart) WriteSVG(out io.Writer) error {
	lo, hi, err := c.Range()
	if err != nil {
		return err
	}
	width := c.Width
	if width == 0 {
		width = DefaultWidth
	}
	const barH, gap, left, right = 22, 8, 150, 170
	height := marginTop + len(c.Bars)*(barH+gap) + marginBottom
	ax := Axis{Label: c.ValueLabel, Format: c.Format}
	x0, x1 := float64(left), float64(width-right)
	X := func(v float64) float64 { return scale(ax, v, lo, hi, x0, x1) }
	w := &svgWriter{}
	w.header(width, height, c.Title, c.Subtitle)
	ybot := float64(height - marginBottom)
	w.f(`<g class="axes" data-xmin="%g" data-xmax="%g">`+"\n", lo, hi)
	for _, t := range ticks(ax, lo, hi) {
		x := X(t)
		w.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, float64(marginTop), x, ybot)
		w.text(x, ybot+16, ` class="xtick" text-anchor="middle"`, ax.format(t))
	}
	w.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", X(0), marginTop, X(0), ybot)
	w.text((x0+x1)/2, float64(height)-18, ` text-anchor="middle"`, c.ValueLabel)
	w.f("</g>\n")
	for i, b := range c.Bars {
		y := float64(marginTop + i*(barH+gap))
		v := b.Value
		if bad(v) {
			v = 0
		}
		xa, xb := X(0), X(v)
		if xb < xa {
			xa, xb = xb, xa
		}
		fill := Color(0)
		if v < 0 {
			fill = Color(2)
		}
		w.f(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>`, xa, y, xb-xa, barH, fill)
		xml.EscapeText(&w.Buffer, []byte(b.Label+": "+ax.format(b.Value)))
		w.f("</title></rect>\n")
		w.text(x0-8, y+barH/2+4, ` class="barlabel" text-anchor="end"`, b.Label)
		val := ax.format(b.Value)
		if b.Note != "" {
			val += " " + b.Note
		}
		w.text(x1+8, y+barH/2+4, ` font-size="11"`, val)
	}
	w.f("</svg>\n")
	_, err = out.Write(w.Bytes())
	return err
}
