package tracestore

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"golang.org/x/exp/trace"
)

// timeline fills e's arguments and opens and closes the spans ev begins
// and ends.
func (b *builder) timeline(ev *trace.Event, e *Event) error {
	t := e.Time
	switch ev.Kind() {
	case trace.EventStateTransition:
		st := ev.StateTransition()
		var from, to uint8
		var id int64
		switch st.Resource.Kind {
		case trace.ResourceGoroutine:
			f, tt := st.Goroutine()
			from, to, id = uint8(f), uint8(tt), int64(st.Resource.Goroutine())
			if err := b.goState(id, f, tt, t, st.Reason, e.Stack); err != nil {
				return err
			}
		case trace.ResourceProc:
			f, tt := st.Proc()
			from, to, id = uint8(f), uint8(tt), int64(st.Resource.Proc())
			if err := b.procState(id, f, tt, t); err != nil {
				return err
			}
		}
		e.Args = [3]uint64{uint64(st.Resource.Kind) | uint64(from)<<8 | uint64(to)<<16, uint64(id + 1), uint64(b.str(st.Reason))}
	case trace.EventRangeBegin, trace.EventRangeActive, trace.EventRangeEnd:
		r := ev.Range()
		track, id := scopeTrack(r.Scope)
		e.Args = [3]uint64{uint64(b.str(r.Name)), uint64(r.Scope.Kind), uint64(id + 1)}
		key := rowKey{track, id, LayerRange}
		open := b.ranges[key]
		if open == nil {
			open = map[string]*openSpan{}
			b.ranges[key] = open
		}
		o := open[r.Name]
		if ev.Kind() == trace.EventRangeEnd {
			if o == nil { // began before the trace
				o = b.open(key, Span{Start: 0, Kind: SpanRange, Name: b.str(r.Name)}, r.Name)
			}
			delete(open, r.Name)
			if err := b.close(key, o, t); err != nil {
				return err
			}
		} else if o == nil {
			start := t
			if ev.Kind() == trace.EventRangeActive {
				start = 0
			}
			open[r.Name] = b.open(key, Span{Start: start, Kind: SpanRange, Name: b.str(r.Name), Stack: uint32(e.Stack)}, r.Name)
		}
	case trace.EventRegionBegin, trace.EventRegionEnd:
		rg := ev.Region()
		e.Args = [3]uint64{uint64(b.str(rg.Type)), uint64(rg.Task)}
		g := e.G
		key := rowKey{TrackGoroutine, g, LayerRegion}
		rs := b.regions[g]
		if rs == nil {
			rs = &regionStack{byName: map[string][]int{}}
			b.regions[g] = rs
		}
		if ev.Kind() == trace.EventRegionBegin {
			rs.push(b.open(key, Span{Start: t, Kind: SpanRegion, Name: b.str(rg.Type), Stack: uint32(e.Stack)}, rg.Type))
			break
		}
		i := rs.innermost(rg.Type)
		if i < 0 {
			// Began before the trace, as a flight recorder's snapshot
			// shows a goroutine's long regions: drawn from time 0, as go
			// tool trace does and as a task begun before the trace is,
			// in a row of its own.
			o := b.open(key, Span{Start: 0, Kind: SpanRegion, Name: b.str(rg.Type)}, rg.Type)
			if err := b.close(key, o, t); err != nil {
				return err
			}
			break
		}
		// Regions nest: close the inner ones that did not end.
		for len(rs.open) > i {
			if err := b.close(key, rs.pop(), t); err != nil {
				return err
			}
		}
	case trace.EventTaskBegin, trace.EventTaskEnd:
		tk := ev.Task()
		e.Args = [3]uint64{uint64(b.str(tk.Type)), uint64(tk.ID), uint64(tk.Parent)}
		key := rowKey{TrackGlobal, 0, LayerTask}
		if ev.Kind() == trace.EventTaskBegin {
			if _, ok := b.tasks[tk.ID]; !ok {
				b.tasks[tk.ID] = b.open(key, Span{Start: t, Kind: SpanTask, Name: b.str(tk.Type), Stack: uint32(e.Stack)}, "")
			}
			break
		}
		o, ok := b.tasks[tk.ID]
		if !ok {
			o = b.open(key, Span{Start: 0, Kind: SpanTask, Name: b.str(tk.Type)}, "")
		}
		delete(b.tasks, tk.ID)
		if err := b.close(key, o, t); err != nil {
			return err
		}
	case trace.EventLog:
		l := ev.Log()
		e.Args = [3]uint64{uint64(b.str(l.Category)), uint64(b.str(l.Message)), uint64(l.Task)}
	case trace.EventLabel:
		e.Args = [3]uint64{uint64(b.str(ev.Label().Label))}
	case trace.EventMetric:
		m := ev.Metric()
		var v uint64
		if m.Value.Kind() == trace.ValueUint64 {
			v = m.Value.Uint64()
		}
		e.Args = [3]uint64{uint64(b.str(m.Name)), v}
	}
	return nil
}

func scopeTrack(r trace.ResourceID) (TrackKind, int64) {
	switch r.Kind {
	case trace.ResourceGoroutine:
		return TrackGoroutine, int64(r.Goroutine())
	case trace.ResourceProc:
		return TrackProc, int64(r.Proc())
	case trace.ResourceThread:
		return TrackThread, int64(r.Thread())
	}
	return TrackGlobal, 0
}

func (b *builder) goState(g int64, from, to trace.GoState, t int64, reason string, stack uint64) error {
	key := rowKey{TrackGoroutine, g, LayerState}
	if from == trace.GoUndetermined {
		// The goroutine's status at a generation's start, emitted at its
		// first event in the generation: it has been in state to since
		// the generation began (or since its span from the previous
		// generation, if that is the same state).
		k, ok := goSpanKind(to)
		if o := b.gState[g]; o != nil {
			if ok && o.span.Kind == k {
				return nil
			}
			if err := b.close(key, o, b.genStart); err != nil {
				return err
			}
			delete(b.gState, g)
		}
		if ok {
			s := Span{Start: b.genStart, Kind: k, Stack: uint32(stack)}
			if k == SpanWaiting {
				s.Name = b.str(reason)
			}
			b.gState[g] = b.open(key, s, "")
		}
		return nil
	}
	if o := b.gState[g]; o != nil {
		if err := b.close(key, o, t); err != nil {
			return err
		}
		delete(b.gState, g)
	} else if k, ok := goSpanKind(from); ok && t > 0 {
		// In this state since before the trace (or its generation).
		if err := b.close(key, b.open(key, Span{Start: 0, Kind: k}, ""), t); err != nil {
			return err
		}
	}
	if k, ok := goSpanKind(to); ok {
		s := Span{Start: t, Kind: k, Stack: uint32(stack)}
		if k == SpanWaiting {
			s.Name = b.str(reason)
		}
		b.gState[g] = b.open(key, s, "")
	} else if to == trace.GoNotExist && from != trace.GoSyscall {
		// A goroutine that ends in a syscall (GoDestroySyscall) is the
		// goroutine of an extra M that a C thread borrowed for cgo
		// callbacks: its ID comes back with the M (GoCreateSyscall), so
		// its lanes stay open.
		return b.retire(g)
	}
	return nil
}

// retire drops the row state of goroutine g, which has exited, unless it
// has regions or ranges still open: goroutine IDs are not reused (but for
// the goroutines of extra Ms, which goState does not retire), so its
// lanes are complete. Its lanes' records go to the lane file (spillLane):
// what stays in memory is a bit in retired, where the row state costs
// some 250 bytes per goroutine and a lane's record some 100. Spans a
// malformed trace gives a retired goroutine later are dropped.
func (b *builder) retire(g int64) error {
	if rs := b.regions[g]; rs != nil && len(rs.open) > 0 {
		return nil
	}
	rkey := rowKey{TrackGoroutine, g, LayerRange}
	if len(b.ranges[rkey]) > 0 {
		return nil
	}
	delete(b.regions, g)
	delete(b.ranges, rkey)
	for _, layer := range []Layer{LayerState, LayerRange, LayerRegion} {
		key := rowKey{TrackGoroutine, g, layer}
		if rs := b.rows[key]; rs != nil {
			for _, l := range rs.lane {
				if l >= 0 {
					if err := b.spillLane(l); err != nil {
						return err
					}
				}
			}
		}
		delete(b.rows, key)
	}
	b.retired.add(g)
	return nil
}

// A laneState is a lane's record while the trace is read, and where its
// last span ends.
type laneState struct {
	Lane
	end int64
}

// spillLane writes lane l's record to the lane file and forgets it: its
// rows are gone, so no span comes to it again.
func (b *builder) spillLane(l int32) error {
	ls := b.live[l]
	if ls == nil {
		return fmt.Errorf("tracestore: lane %d spilled twice", l)
	}
	var rec [laneRecBytes]byte
	putLaneRec(rec[:], uint32(l), ls.Lane)
	if _, err := b.laneW.Write(rec[:]); err != nil {
		return fmt.Errorf("%w: lanes: %w", errWrite, err)
	}
	b.lanesOut++
	delete(b.live, l)
	return nil
}

// An idSet is a set of int64s, 64 to a word: goroutine IDs are dense, so
// that a goroutine costs a bit, not a map entry.
type idSet map[int64]uint64

func (s idSet) add(id int64)      { s[id>>6] |= 1 << (uint64(id) & 63) }
func (s idSet) has(id int64) bool { return s[id>>6]&(1<<(uint64(id)&63)) != 0 }

func goSpanKind(s trace.GoState) (SpanKind, bool) {
	switch s {
	case trace.GoRunning:
		return SpanRunning, true
	case trace.GoRunnable:
		return SpanRunnable, true
	case trace.GoWaiting:
		return SpanWaiting, true
	case trace.GoSyscall:
		return SpanSyscall, true
	}
	return 0, false
}

func (b *builder) procState(p int64, from, to trace.ProcState, t int64) error {
	key := rowKey{TrackProc, p, LayerState}
	if from == trace.ProcUndetermined {
		// As for goroutines: running since the generation began.
		if o := b.pState[p]; o != nil {
			if to == trace.ProcRunning {
				return nil
			}
			if err := b.close(key, o, b.genStart); err != nil {
				return err
			}
			delete(b.pState, p)
		}
		if to == trace.ProcRunning {
			b.pState[p] = b.open(key, Span{Start: b.genStart, Kind: SpanRunning}, "")
		}
		return nil
	}
	if o := b.pState[p]; o != nil {
		if err := b.close(key, o, t); err != nil {
			return err
		}
		delete(b.pState, p)
	} else if from == trace.ProcRunning && t > 0 {
		if err := b.close(key, b.open(key, Span{Start: 0, Kind: SpanRunning}, ""), t); err != nil {
			return err
		}
	}
	if to == trace.ProcRunning {
		b.pState[p] = b.open(key, Span{Start: t, Kind: SpanRunning}, "")
	}
	return nil
}

// A regionStack is a goroutine's open regions, innermost last, with the
// positions of each type's, so that a region's end finds its begin in
// O(1) however deep the nesting.
type regionStack struct {
	open   []*openSpan
	byName map[string][]int // type -> positions in open, increasing
}

func (r *regionStack) push(o *openSpan) {
	r.byName[o.name] = append(r.byName[o.name], len(r.open))
	r.open = append(r.open, o)
}

func (r *regionStack) pop() *openSpan {
	o := r.open[len(r.open)-1]
	r.open = r.open[:len(r.open)-1]
	pos := r.byName[o.name]
	if len(pos) == 1 {
		delete(r.byName, o.name)
	} else {
		r.byName[o.name] = pos[:len(pos)-1]
	}
	return o
}

// innermost returns the position of the innermost open region of type
// name, or -1.
func (r *regionStack) innermost(name string) int {
	pos := r.byName[name]
	if len(pos) == 0 {
		return -1
	}
	return pos[len(pos)-1]
}

// A rowSet is the rows of one layer of one track: which are free (a heap
// of their depths, lowest first) and where each one's last span ends.
type rowSet struct {
	free   depthHeap
	inFree []bool  // depth -> in free
	end    []int64 // depth -> end of its last span
	lane   []int32 // depth -> lane, -1 until its first span
}

// maxRows is the number of rows a layer of a track may have (a viewer
// shows no more; decodeLane refuses a deeper lane): regions
// nested deeper than that, leaked ones as a rule, share the last row,
// where each starts no earlier than the previous ends. Each row is a lane,
// which costs some 100 bytes to build where a leaked region costs the
// trace some 5.
const maxRows = 1 << 12

type depthHeap []int

func (h depthHeap) Len() int           { return len(h) }
func (h depthHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h depthHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *depthHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *depthHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// open begins span s in a row of key: the lowest free row, if its last
// span ended by s's start, else a new row. A span that began before the
// trace (start 0) thus takes a row of its own, as overlapping tasks and
// ranges must. State layers have one row: a goroutine or proc is in one
// state at a time. O(log rows).
func (b *builder) open(key rowKey, s Span, name string) *openSpan {
	if key.track == TrackGoroutine && b.isRetired(key.id) {
		return &openSpan{span: s, name: name}
	}
	rs := b.rows[key]
	if rs == nil {
		rs = &rowSet{}
		b.rows[key] = rs
	}
	d := -1
	if len(rs.free) > 0 && (key.layer == LayerState || rs.end[rs.free[0]] <= s.Start) {
		d = heap.Pop(&rs.free).(int)
		rs.inFree[d] = false
	} else if key.layer == LayerState && len(rs.end) > 0 {
		d = 0 // busy: a malformed trace; close clamps the spans
	} else if len(rs.end) == maxRows {
		d = maxRows - 1
	}
	if d < 0 {
		d = len(rs.end)
		rs.end = append(rs.end, math.MinInt64)
		rs.inFree = append(rs.inFree, false)
	}
	return &openSpan{span: s, depth: d, name: name}
}

// close ends o at t, frees its row and writes the span to its lane. The
// span starts no earlier than the lane's last span ends, so that a lane's
// spans never overlap whatever order a malformed trace gives.
func (b *builder) close(key rowKey, o *openSpan, t int64) error {
	if key.track == TrackGoroutine && b.isRetired(key.id) {
		b.droppedSpans++
		return nil
	}
	rs := b.rows[key]
	if rs == nil { // a span opened elsewhere: not from open
		rs = &rowSet{}
		b.rows[key] = rs
	}
	for len(rs.lane) <= o.depth {
		rs.lane = append(rs.lane, -1)
	}
	lane := rs.lane[o.depth]
	var ls *laneState
	if lane < 0 {
		if b.numLanes >= math.MaxInt32 {
			return fmt.Errorf("tracestore: more than %d lanes", math.MaxInt32)
		}
		lane = int32(b.numLanes)
		b.numLanes++
		rs.lane[o.depth] = lane
		ls = &laneState{Lane: Lane{Track: key.track, ID: key.id, Layer: key.layer, Depth: o.depth}}
		b.live[lane] = ls
	} else if ls = b.live[lane]; ls == nil {
		return fmt.Errorf("tracestore: a span for lane %d, which was spilled", lane)
	}
	s := o.span
	s.Start = max(s.Start, ls.end)
	s.Dur = max(0, t-s.Start)
	ls.end = s.End()
	if o.depth < len(rs.end) {
		rs.end[o.depth] = max(rs.end[o.depth], s.End())
		if !rs.inFree[o.depth] {
			heap.Push(&rs.free, o.depth)
			rs.inFree[o.depth] = true
		}
	}
	ls.Spans++
	b.numSpans++
	if len(b.durSample) < quantumSample {
		b.durSample = append(b.durSample, s.Dur)
	}
	binary.LittleEndian.PutUint32(b.spanRec[:4], uint32(lane))
	putSpan(b.spanRec[4:], s)
	if _, err := b.spanW.Write(b.spanRec[:]); err != nil {
		return fmt.Errorf("%w: spans: %w", errWrite, err)
	}
	return nil
}

// closeAll ends every open span at the trace's end.
func (b *builder) closeAll() error {
	t := b.last
	for g, o := range b.gState {
		if err := b.close(rowKey{TrackGoroutine, g, LayerState}, o, t); err != nil {
			return err
		}
	}
	for p, o := range b.pState {
		if err := b.close(rowKey{TrackProc, p, LayerState}, o, t); err != nil {
			return err
		}
	}
	for key, open := range b.ranges {
		for _, o := range sortedOpen(open) {
			if err := b.close(key, o, t); err != nil {
				return err
			}
		}
	}
	for g, rs := range b.regions {
		for _, o := range rs.open {
			if err := b.close(rowKey{TrackGoroutine, g, LayerRegion}, o, t); err != nil {
				return err
			}
		}
	}
	for _, o := range b.tasks {
		if err := b.close(rowKey{TrackGlobal, 0, LayerTask}, o, t); err != nil {
			return err
		}
	}
	return nil
}

// sortedOpen returns the spans of m by name, for a deterministic store.
func sortedOpen(m map[string]*openSpan) []*openSpan {
	out := make([]*openSpan, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out
}

func (b *builder) isRetired(g int64) bool { return b.retired.has(g) }
