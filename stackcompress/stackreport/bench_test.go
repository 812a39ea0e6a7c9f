package stackreport

import (
	"context"
	"os"
	"testing"

	"github.com/pctab/pctab/internal/stackcapture"
	"github.com/pctab/pctab/stackcompress"
	"github.com/pctab/pctab/stackinput"
)

// BenchmarkInsertCapture inserts every stack of the compress/flate test
// trace, in order, keyed by goroutine, into a fresh builder per iteration.
// frames/s counts every frame of every stack, as the report's throughput
// does.
func BenchmarkInsertCapture(b *testing.B) {
	files, err := stackcapture.Std(context.Background(), "compress/flate")
	if err != nil {
		b.Skip(err)
	}
	f, err := os.Open(files.Trace)
	if err != nil {
		b.Fatal(err)
	}
	c, err := stackinput.ReadTrace(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	base := stackinput.LowestPC(c.Locations)
	for _, v := range DefaultVariants() {
		var m stackinput.FrameMapper
		switch v.Frames {
		case FramesPC:
			m = stackinput.PCFrames{}
		case FramesText:
			m = stackinput.TextOffsetFrames{Base: base}
		default:
			m = stackinput.NewLineFrames()
		}
		cv, err := convert(c, m)
		if err != nil {
			b.Fatal(err)
		}
		var frames int
		for _, s := range c.Samples {
			frames += len(cv.stack(s.Stack))
		}
		for _, key := range []string{KeyGoroutine, KeyOff} {
			b.Run(v.Name()+"/cache="+key, func(b *testing.B) {
				for b.Loop() {
					bl, err := stackcompress.NewBuilder(stackcompress.Options{Layout: v.Layout, NoCache: key == KeyOff})
					if err != nil {
						b.Fatal(err)
					}
					for _, s := range c.Samples {
						if _, err := bl.Insert(cacheKey(s, key), cv.stack(s.Stack)); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
			})
		}
	}
}
