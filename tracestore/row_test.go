package tracestore

import (
	"math/rand/v2"
	"testing"
)

// queryRowRef is QueryRow as it was before its one sweep, for TestQueryRowSweep:
// it fills cells with lane l over [t0, t1) cut into len(cells)
// equal pixel ranges: one range query per pixel, with the pixel
// boundaries located once each and decoded blocks reused between
// neighbouring pixels.
func (s *Store) queryRowRef(l int, t0, t1 int64, cells []Cell) {
	px := int64(len(cells))
	if px == 0 {
		return
	}
	for i := range cells {
		cells[i] = Cell{Kind: NoSpan, Span: -1}
	}
	ln := s.lane(l)
	if ln.Spans == 0 || t1 <= t0 {
		return
	}
	r := newRowCursor(s, l, ln)
	at := func(p int64) int64 { return PixelStart(t0, t1, px, p) }
	// Pixels before the first span and after the last are empty.
	first := r.span(0).Start
	last := r.span(ln.Spans - 1).End()
	j := r.locate(at(0))
	for p := int64(0); p < px; p++ {
		a, b := at(p), at(p+1)
		if b == a {
			continue // an empty pixel: the range is narrower than px
		}
		if b <= first || a >= last {
			if a >= last {
				break
			}
			j = r.locate(b)
			continue
		}
		i0 := j
		if j > 0 && r.span(j-1).End() > a {
			i0 = j - 1
		}
		j = r.locate(b)
		i1 := j
		if i0 >= i1 {
			continue
		}
		agg := r.aggregate(i0, i1)
		busy := agg.Busy
		if f := r.span(i0); f.Start < a {
			busy -= a - f.Start
		}
		if e := r.span(i1 - 1).End(); e > b {
			busy -= e - b
		}
		c := &cells[p]
		c.Count = uint16(min(i1-i0, 65535))
		c.Busy = share(busy, uint64(b)-uint64(a))
		if agg.Index >= i0 && agg.Index < i1 {
			kn, _ := s.kindName(ln.firstSpan + agg.Index)
			c.Kind, c.Name, c.Span = kn.kind(), kn.name(), agg.Index
		}
	}
}

// TestQueryRowSweep checks QueryRow against queryRowRef, a pixel-by-pixel
// computation, on every lane of a real trace's store over random ranges
// and pixel counts, the whole trace among them.
func TestQueryRowSweep(t *testing.T) {
	for name, data := range rowTraces(t) {
		t.Run(name, func(t *testing.T) { testQueryRowSweep(t, data) })
	}
}

func testQueryRowSweep(t *testing.T, data []byte) {
	s, _ := build(t, data)
	d := s.Manifest().Duration
	rng := rand.New(rand.NewPCG(1, 2))
	for l := range s.NumLanes() {
		for k := range 8 {
			t0, t1 := int64(0), d+1
			px := []int{1, 7, 200, 2000}[k%4]
			if k >= 2 {
				t0 = rng.Int64N(d + 1)
				t1 = t0 + 1 + rng.Int64N(d+1-t0+int64(k))
			}
			got, want := make([]Cell, px), make([]Cell, px)
			s.QueryRow(l, t0, t1, got)
			s.queryRowRef(l, t0, t1, want)
			for p := range got {
				if got[p] != want[p] {
					t.Fatalf("lane %d (%d spans), [%d, %d) in %d pixels, pixel %d: %+v, want %+v", l, s.Lane(l).Spans, t0, t1, px, p, got[p], want[p])
				}
			}
		}
	}
}
