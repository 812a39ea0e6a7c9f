package forest

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"testing"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/gallop"
)

// A synthLane is a timeline of n synthetic spans laid end to end, as
// gigatrace benchmarks its forest: span i lasts 1 to 1,000 ns, a hash of
// (seed, i), and is never stored. Each leaf of the lane's forest is the
// longest span of a block of spans; a query recomputes the spans of the
// partial blocks at its ends from their block's start.
type synthLane struct {
	seed   uint64
	n      int
	starts []int64 // start of each block
	end    int64
	b      *Blocked[Span]
	coarse *Chunked[Span] // chunks of synthChunk leaves over b's forest
	// Bucketed levels, as tracestore's coarse.bin: at shifts
	// synthShift0, synthShift0+2, ..., the longest span that overlaps
	// each time bucket [j<<shift, (j+1)<<shift).
	levels []synthLevel
}

type synthLevel struct {
	shift   uint
	longest []Span
}

// synthShift0 is the finest bucketed level: 2^15 ns, some 64 spans a
// bucket; levels go up by factors of 4 while they have 64 buckets or more.
const synthShift0 = 15

// synthChunk is the leaves of a chunk of the lanes' coarse level.
const synthChunk = 16

const synthBlock = 32

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (l *synthLane) dur(i int) int64 { return 1 + int64(splitmix(l.seed^uint64(i))%1000) }

func newSynthLane(seed uint64, n int) *synthLane {
	l := &synthLane{seed: seed, n: n, starts: make([]int64, 0, n/synthBlock+1)}
	f, err := NewReserved(max(1, n/synthBlock), Longest, NoSpan)
	if err != nil {
		f = New(Longest, NoSpan)
	}
	l.b = NewBlocked(f, synthBlock)
	var t int64
	var fine []Span
	for i := range n {
		if i%synthBlock == 0 {
			l.starts = append(l.starts, t)
		}
		d := l.dur(i)
		sp := Span{Dur: d, ID: uint64(i)}
		l.b.Append(sp)
		// The buckets the span overlaps: those of its start to its last
		// nanosecond.
		for j := t >> synthShift0; j <= (t+d-1)>>synthShift0; j++ {
			for int64(len(fine)) <= j {
				fine = append(fine, NoSpan)
			}
			fine[j] = Longest(fine[j], sp)
		}
		t += d
	}
	l.end = t
	l.coarse = NewChunked(l.b.Forest(), synthChunk)
	for lv := (synthLevel{synthShift0, fine}); len(lv.longest) >= 64; {
		l.levels = append(l.levels, lv)
		next := synthLevel{lv.shift + 2, make([]Span, (len(lv.longest)+3)/4)}
		for j := range next.longest {
			next.longest[j] = NoSpan
		}
		for j, sp := range lv.longest {
			next.longest[j/4] = Longest(next.longest[j/4], sp)
		}
		lv = next
	}
	return l
}

// snapShift returns the shift of the power of two a frame of [t0, t1) in
// px columns snaps its columns to (as tracestore's Store.Snap): the
// largest no wider than a column, if the lane has a level that fine or
// finer; ok false if not.
func (l *synthLane) snapShift(t0, t1 int64, px int) (uint, bool) {
	w := (t1 - t0) / int64(px)
	if w <= 0 || len(l.levels) == 0 {
		return 0, false
	}
	u := uint(bits.Len64(uint64(w)) - 1)
	return u, u >= l.levels[0].shift
}

// snappedBounds returns the px+1 column boundaries of [t0, t1) rounded up
// to multiples of 2^shift (tracestore.SnapColumns).
func snappedBounds(t0, t1 int64, px int, shift uint) []int64 {
	out := make([]int64, px+1)
	m := int64(1)<<shift - 1
	for p := range out {
		out[p] = (t0 + (t1-t0)*int64(p)/int64(px) + m) &^ m
	}
	return out
}

// rowSnapped fills one lane's pixels as row does, over the columns of
// bounds (multiples of 2^shift, shift at least the finest level's): each
// column's longest span is the longest of its buckets' at the coarsest
// level no coarser than 2^shift, a few reads and no span computed.
func (l *synthLane) rowSnapped(bounds []int64, shift uint, out []Span) {
	k := 0
	for k+1 < len(l.levels) && l.levels[k+1].shift <= shift {
		k++
	}
	lv := &l.levels[k]
	n := int64(len(lv.longest))
	for p := range out {
		acc := NoSpan
		for j := max(0, bounds[p]>>lv.shift); j < min(n, bounds[p+1]>>lv.shift); j++ {
			acc = Longest(acc, lv.longest[j])
		}
		out[p] = acc
	}
}

// at returns the index of the span that covers time t (n if none),
// searching the block starts from block hint on: pixel boundaries grow
// from column to column, so a galloping search from the last one touches
// few cache lines of a large lane.
func (l *synthLane) at(t int64, hint *int) int {
	if t >= l.end {
		return l.n
	}
	k := gallop.Search(len(l.starts), *hint, func(k int) bool { return l.starts[k] > t }) - 1
	*hint = max(k, 0)
	s := l.starts[k]
	i := k * synthBlock
	for ; i < l.n; i++ {
		if s += l.dur(i); s > t {
			break
		}
	}
	return i
}

// row fills one lane's pixels: the longest span under each of px columns
// of [t0, t1). It sweeps the row as tracestore's QueryRow does: each
// column boundary is located in its block, whose spans are computed once
// (as QueryRow decodes a block once) and serve the partial blocks of the
// columns on both sides of the boundary; whole blocks come from the
// lane's coarse level (Chunked): a zoomed-out column's blocks are a
// suffix, a few chunks and a prefix, where the forest would read nodes
// spread over them.
func (l *synthLane) row(t0, t1 int64, out []Span) {
	px := int64(len(out))
	var c blockCache
	c.k[0], c.k[1] = -1, -1
	item := func(i int) Span { return Span{Dur: c.durs(l, i/synthBlock)[i%synthBlock], ID: uint64(i)} }
	hint := 0
	i0 := l.cachedAt(t0, &hint, &c)
	for p := range px {
		b := t0 + (t1-t0)*(p+1)/px
		i1 := min(l.n, l.cachedAt(b-1, &hint, &c)+1) // spans that start before b
		if i0 >= i1 {
			out[p] = NoSpan
		} else {
			out[p] = l.query(i0, i1, item)
		}
		i0 = max(i1-1, i0) // the last span may continue into the next column
	}
}

// query is Blocked.Query with the whole blocks from the coarse level.
func (l *synthLane) query(lo, hi int, item func(int) Span) Span {
	acc := NoSpan
	first := (lo + synthBlock - 1) / synthBlock
	last := hi / synthBlock
	if first >= last {
		for i := lo; i < hi; i++ {
			acc = Longest(acc, item(i))
		}
		return acc
	}
	for i := lo; i < first*synthBlock; i++ {
		acc = Longest(acc, item(i))
	}
	acc = Longest(acc, l.coarse.Query(first, last))
	for i := last * synthBlock; i < hi; i++ {
		acc = Longest(acc, item(i))
	}
	return acc
}

// rowRef is row as it was before the sweep: every span of a partial block
// recomputed each time a query reads it. TestSynthLane holds row to it.
func (l *synthLane) rowRef(t0, t1 int64, out []Span) {
	px := int64(len(out))
	item := func(i int) Span { return Span{Dur: l.dur(i), ID: uint64(i)} }
	hint := 0
	i0 := l.at(t0, &hint)
	for p := range px {
		b := t0 + (t1-t0)*(p+1)/px
		i1 := min(l.n, l.at(b-1, &hint)+1) // spans that start before b
		if i0 >= i1 {
			out[p] = NoSpan
		} else {
			out[p] = l.b.Query(i0, i1, item)
		}
		i0 = max(i1-1, i0) // the last span may continue into the next column
	}
}

// A blockCache holds the durations of the last two blocks a row computed.
type blockCache struct {
	k    [2]int
	d    [2][synthBlock]int64
	next int
}

func (c *blockCache) durs(l *synthLane, k int) *[synthBlock]int64 {
	if c.k[0] == k {
		return &c.d[0]
	}
	if c.k[1] == k {
		return &c.d[1]
	}
	j := c.next
	c.next ^= 1
	c.k[j] = k
	for i := range synthBlock {
		if k*synthBlock+i < l.n {
			c.d[j][i] = l.dur(k*synthBlock + i)
		}
	}
	return &c.d[j]
}

// cachedAt is at with the block's spans from c.
func (l *synthLane) cachedAt(t int64, hint *int, c *blockCache) int {
	if t >= l.end {
		return l.n
	}
	k := gallop.Search(len(l.starts), *hint, func(k int) bool { return l.starts[k] > t }) - 1
	*hint = max(k, 0)
	s := l.starts[k]
	d := c.durs(l, k)
	i := 0
	for ; k*synthBlock+i < l.n && i < synthBlock; i++ {
		if s += d[i]; s > t {
			break
		}
	}
	return k*synthBlock + i
}

// BenchmarkViewport draws one frame of 2,000 columns for 64 lanes of
// synthetic spans, 10^8 or 10^9 of them in all, from blocked forests: the
// gigatrace benchmark (its goal: under 16 ms a frame, 60 fps). Lanes are
// computed on one goroutine, and on all cores as a viewer would.
func BenchmarkViewport(b *testing.B) {
	for _, total := range []int{1e8, 1e9} {
		b.Run(fmt.Sprintf("spans=%.0e", float64(total)), func(b *testing.B) {
			if testing.Short() {
				b.Skip("-short: builds 10^8 spans or more")
			}
			lanes := make([]*synthLane, 64)
			var wg sync.WaitGroup
			for i := range lanes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lanes[i] = newSynthLane(uint64(i), total/len(lanes))
				}()
			}
			wg.Wait()
			defer func() {
				for _, l := range lanes {
					l.b.Forest().Close()
				}
			}()
			end := lanes[0].end
			rows := make([][]Span, len(lanes))
			for i := range rows {
				rows[i] = make([]Span, 2000)
			}
			for _, zoom := range []int64{1, 10, 100, 1000, 1000000} {
				t0 := end / 3
				t1 := t0 + end/zoom
				for _, variant := range []string{"", "/rowRef", "/snapped"} {
					name := fmt.Sprintf("zoom=%d/goroutines=1%s", zoom, variant)
					b.Run(name, func(b *testing.B) {
						row := (*synthLane).row
						switch variant {
						case "/rowRef":
							row = (*synthLane).rowRef // the rows as they were before the sweep
						case "/snapped":
							// The columns snapped to the bucketed levels where
							// the zoom allows, as tracestore's viewer does.
							shift, ok := lanes[0].snapShift(t0, t1, len(rows[0]))
							if !ok {
								b.Skip("zoomed in past the finest level: the row above")
							}
							row = func(l *synthLane, t0, t1 int64, out []Span) {
								l.rowSnapped(snappedBounds(t0, t1, len(out), shift), shift, out)
							}
						}
						// On the benchmark's own thread, so that its CPU time
						// (cpu-ms/frame) leaves out other processes'.
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						cpu0, ok := cputime.Thread()
						b.ResetTimer()
						for range b.N {
							for i, l := range lanes {
								row(l, t0, t1, rows[i])
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
						if cpu1, ok1 := cputime.Thread(); ok && ok1 {
							b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N)/1e6, "cpu-ms/frame")
						}
					})
				}
				b.Run(fmt.Sprintf("zoom=%d/goroutines=%d", zoom, runtime.GOMAXPROCS(0)), func(b *testing.B) {
					if runtime.GOMAXPROCS(0) == 1 {
						b.Skip("GOMAXPROCS=1: the row above")
					}
					for range b.N {
						var wg sync.WaitGroup
						next := make(chan int, len(lanes))
						for i := range lanes {
							next <- i
						}
						close(next)
						for range runtime.GOMAXPROCS(0) {
							wg.Add(1)
							go func() {
								defer wg.Done()
								for i := range next {
									lanes[i].row(t0, t1, rows[i])
								}
							}()
						}
						wg.Wait()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
				})
			}
		})
	}
}

// TestSynthLane checks the synthetic lane's rows against a fold over its
// spans.
func TestSynthLane(t *testing.T) {
	l := newSynthLane(7, 5000)
	var starts []int64
	var s int64
	for i := range l.n {
		starts = append(starts, s)
		s += l.dur(i)
	}
	out := make([]Span, 97)
	for _, r := range [][2]int64{{0, l.end}, {l.end / 3, l.end/3 + 5000}, {100, 40000}} {
		l.row(r[0], r[1], out)
		ref := make([]Span, len(out))
		l.rowRef(r[0], r[1], ref)
		for p := range out {
			if out[p] != ref[p] {
				t.Fatalf("range %v column %d: row %+v, rowRef %+v", r, p, out[p], ref[p])
			}
			a := r[0] + (r[1]-r[0])*int64(p)/97
			bnd := r[0] + (r[1]-r[0])*int64(p+1)/97
			want := NoSpan
			for i := range l.n {
				if starts[i] < bnd && starts[i]+l.dur(i) > a {
					want = Longest(want, Span{Dur: l.dur(i), ID: uint64(i)})
				}
			}
			if out[p] != want {
				t.Fatalf("range %v column %d [%d, %d): %+v, want %+v", r, p, a, bnd, out[p], want)
			}
		}
	}
}

// TestSynthLaneSnapped checks the bucketed levels' rows against a fold
// over the spans of each snapped column, at every level and between.
func TestSynthLaneSnapped(t *testing.T) {
	l := newSynthLane(9, 200000)
	if len(l.levels) < 2 {
		t.Fatalf("%d levels over %d ns", len(l.levels), l.end)
	}
	var starts []int64
	var s int64
	for i := range l.n {
		starts = append(starts, s)
		s += l.dur(i)
	}
	for _, r := range [][3]int64{{0, l.end, 97}, {0, l.end + 1, 13}, {l.end / 3, l.end/3 + l.end/5, 50}, {12345, 12345 + 1<<20, 3}} {
		px := int(r[2])
		shift, ok := l.snapShift(r[0], r[1], px)
		if !ok {
			t.Fatalf("range %v: no level", r)
		}
		bounds := snappedBounds(r[0], r[1], px, shift)
		out := make([]Span, px)
		l.rowSnapped(bounds, shift, out)
		i := 0
		for p := range out {
			a, b := bounds[p], bounds[p+1]
			want := NoSpan
			for i > 0 && starts[i-1]+l.dur(i-1) > a {
				i--
			}
			for ; i < l.n && starts[i] < b; i++ {
				if starts[i]+l.dur(i) > a {
					want = Longest(want, Span{Dur: l.dur(i), ID: uint64(i)})
				}
			}
			if out[p] != want {
				t.Fatalf("range %v, 2^%d, column %d [%d, %d): %+v, want %+v", r, shift, p, a, b, out[p], want)
			}
		}
	}
}
