package svgplot_test

import (
	"bytes"
	"fmt"

	"github.com/pctab/pctab/internal/svgplot"
)

// A scatter plot on a log-scale X axis with a reference line.
func ExamplePlot() {
	p := &svgplot.Plot{
		Title:    "File change against size",
		X:        svgplot.Axis{Label: "MB", Log: true},
		Y:        svgplot.Axis{Label: "%"},
		Series:   []svgplot.Series{{Name: "compact-fast", Markers: true, Points: []svgplot.Point{{X: 3.1, Y: 0.4, Label: "gofmt"}, {X: 15.6, Y: 0.93, Label: "go"}}}},
		RefLines: []svgplot.RefLine{{Y: 0.5, Label: "goal"}},
	}
	xmin, xmax, ymin, ymax, _ := p.Ranges()
	fmt.Println(xmin, xmax, ymin, ymax)
	var svg bytes.Buffer
	if err := p.WriteSVG(&svg); err != nil {
		fmt.Println(err)
	}
	fmt.Println(bytes.Count(svg.Bytes(), []byte(`class="point"`)), "points")
	// Output:
	// 1 100 0.4 1
	// 2 points
}
