package stackcompress

import (
	"bytes"
	"testing"
)

type benchStack struct {
	thread uint64
	stack  []uint64
}

func benchWorkload(n int) []benchStack {
	w := newWorkload(42, 2000, 16, 32)
	out := make([]benchStack, n)
	for i := range out {
		th, s := w.next()
		out[i] = benchStack{th, s}
	}
	return out
}

var benchLayouts = []Layout{LayoutSeed(), LayoutFrame32(), LayoutDelta32(), {Parents: ParentChain}, LayoutPacked()}

// BenchmarkInsert inserts 100k synthetic stacks per iteration. The frames/s
// metric counts every frame of every stack, as the report does.
func BenchmarkInsert(b *testing.B) {
	stacks := benchWorkload(100_000)
	var frames int
	for _, s := range stacks {
		frames += len(s.stack)
	}
	for _, l := range benchLayouts {
		for _, noCache := range []bool{false, true} {
			name := l.String()
			if noCache {
				name += "/nocache"
			}
			b.Run(name, func(b *testing.B) {
				// Small pages, so that most key reads decode sealed pages.
				for b.Loop() {
					bl, _ := NewBuilder(Options{Layout: l, PageNodes: 4096, NoCache: noCache})
					for _, s := range stacks {
						if _, err := bl.Insert(s.thread, s.stack); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
			})
		}
	}
}

// BenchmarkStack reads every stack back, from the builder and through a
// Reader of the written file.
func BenchmarkStack(b *testing.B) {
	stacks := benchWorkload(20_000)
	for _, l := range benchLayouts {
		bl, _ := NewBuilder(Options{Layout: l, PageNodes: 4096})
		ids := make([]uint64, len(stacks))
		var frames int
		for i, s := range stacks {
			ids[i], _ = bl.Insert(s.thread, s.stack)
			frames += len(s.stack)
		}
		var file bytes.Buffer
		bl.WriteTo(&file)
		r, err := NewReader(bytes.NewReader(file.Bytes()), int64(file.Len()), ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, src := range []struct {
			name string
			s    stacker
		}{{"builder", bl}, {"reader", r}} {
			b.Run(l.String()+"/"+src.name, func(b *testing.B) {
				var buf []uint64
				for b.Loop() {
					for _, id := range ids {
						buf, _ = src.s.Stack(id, buf[:0])
					}
				}
				b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
			})
		}
	}
}

// BenchmarkGetBits compares the general bit extraction at a byte-aligned
// width with a plain 16-bit load.
func BenchmarkGetBits(b *testing.B) {
	data := make([]byte, 1<<16+16)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.Run("getBits16", func(b *testing.B) {
		var s uint64
		for b.Loop() {
			for i := uint64(0); i < 1<<15; i++ {
				s += getBits(data, i*16, 16)
			}
		}
		sink = s
	})
	b.Run("getBits13", func(b *testing.B) {
		var s uint64
		for b.Loop() {
			for i := uint64(0); i < 1<<15; i++ {
				s += getBits(data, i*13, 13)
			}
		}
		sink = s
	})
}

var sink uint64
