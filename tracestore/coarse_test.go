package tracestore

import (
	"bytes"
	"math/rand/v2"
	"runtime/trace"
	"testing"
	"time"
)

// recordPingPong traces goroutines that hand a token around thousands of
// times, with pauses of different lengths: lanes of thousands of spans,
// enough for coarse levels.
func recordPingPong(t testing.TB) []byte {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	const players = 4
	chans := make([]chan int, players)
	for i := range chans {
		chans[i] = make(chan int)
	}
	done := make(chan bool)
	for i := range players {
		go func() {
			for v := range chans[i] {
				if v%97 == 0 {
					time.Sleep(time.Duration(v%7) * 50 * time.Microsecond)
				}
				if v == 0 {
					done <- true
					return
				}
				chans[(i+1)%players] <- v - 1
			}
		}()
	}
	chans[0] <- 12000
	<-done
	trace.Stop()
	return buf.Bytes()
}

// TestQueryColumnsCoarse checks the coarse levels against the sweep over
// the spans: on every lane with levels of a real trace's store, every
// level, over the whole trace and random ranges snapped to the level,
// the cells from the level equal the sweep's for the same boundaries.
func TestQueryColumnsCoarse(t *testing.T) {
	testQueryColumnsCoarse(t, recordPingPong(t))
}

func testQueryColumnsCoarse(t *testing.T, data []byte) {
	s, _ := build(t, data)
	if s.coarse == nil || len(s.coarse.lanes) == 0 {
		t.Fatalf("no lane has coarse levels (%d lanes, %d spans)", len(s.Lanes()), s.Manifest().Spans)
	}
	d := s.Manifest().Duration
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for i := range s.coarse.lanes {
		c := &s.coarse.lanes[i]
		l := int(c.lane)
		lvs := c.levelsOf(s.coarse.data, s.Lanes()[l].Spans, s.m.TimeQuantum)
		if lvs == nil {
			t.Fatalf("lane %d: its levels do not check", l)
		}
		for k := range lvs {
			for trial := range 6 {
				t0, t1 := int64(0), d+1
				px := []int{1, 7, 200, 2000, 333, 2000}[trial]
				if trial >= 2 {
					t0 = rng.Int64N(d + 1)
					t1 = t0 + 1 + rng.Int64N(d+1-t0)
				}
				bounds := SnapColumns(t0, t1, px, lvs[k].shift, nil)
				got, want := make([]Cell, px), make([]Cell, px)
				for p := range got {
					got[p], want[p] = Cell{Kind: NoSpan, Span: -1}, Cell{Kind: NoSpan, Span: -1}
				}
				if !s.queryCoarse(l, &lvs[k], bounds, got) {
					t.Fatalf("lane %d, level %d: a bad record", l, k)
				}
				s.sweep(l, bounds, want)
				for p := range got {
					if a, b := bounds[p], bounds[p+1]; trial < 3 && b > a {
						q := s.Query(l, a, b)
						if int64(got[p].Count) != min(q.Count, 65535) || got[p].Busy != share(q.Busy, uint64(b-a)) || q.Count > 0 && got[p].Span != q.Longest {
							t.Fatalf("lane %d, level 2^%d, column %d [%d, %d): %+v, Query gives %+v", l, lvs[k].shift, p, a, b, got[p], q)
						}
					}
					if got[p] != want[p] {
						t.Fatalf("lane %d (%d spans), level 2^%d, [%d, %d) in %d columns, column %d [%d, %d): %+v, want %+v", l, s.Lanes()[l].Spans, lvs[k].shift, t0, t1, px, p, bounds[p], bounds[p+1], got[p], want[p])
					}
				}
				checked++
			}
		}
	}
	t.Logf("%d lanes with levels, %d rows checked; coarse.bin %d bytes", len(s.coarse.lanes), checked, len(s.coarse.data))
}
