package tracestore

import (
	"encoding/binary"
	"fmt"

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
		i := len(open) - 1
		for i >= 0 && open[i].name != r.Name {
			i--
		}
		if ev.Kind() == trace.EventRangeEnd {
			if i < 0 { // began before the trace
				i = len(open)
				open = append(open, b.open(key, Span{Start: 0, Kind: SpanRange, Name: b.str(r.Name)}, r.Name))
			}
			if err := b.close(key, open[i], t); err != nil {
				return err
			}
			b.ranges[key] = append(open[:i], open[i+1:]...)
		} else if i < 0 {
			start := t
			if ev.Kind() == trace.EventRangeActive {
				start = 0
			}
			b.ranges[key] = append(open, b.open(key, Span{Start: start, Kind: SpanRange, Name: b.str(r.Name), Stack: uint32(e.Stack)}, r.Name))
		}
	case trace.EventRegionBegin, trace.EventRegionEnd:
		rg := ev.Region()
		e.Args = [3]uint64{uint64(b.str(rg.Type)), uint64(rg.Task)}
		g := e.G
		key := rowKey{TrackGoroutine, g, LayerRegion}
		open := b.regions[g]
		if ev.Kind() == trace.EventRegionBegin {
			b.regions[g] = append(open, b.open(key, Span{Start: t, Kind: SpanRegion, Name: b.str(rg.Type), Stack: uint32(e.Stack)}, rg.Type))
			break
		}
		i := len(open) - 1
		for i >= 0 && open[i].name != rg.Type {
			i--
		}
		if i < 0 { // began before the trace: not drawn
			break
		}
		// Regions nest: close the inner ones that did not end.
		for j := len(open) - 1; j >= i; j-- {
			if err := b.close(key, open[j], t); err != nil {
				return err
			}
		}
		b.regions[g] = open[:i]
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
	}
	return nil
}

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

// open begins span s in the lowest free row of key.
func (b *builder) open(key rowKey, s Span, name string) *openSpan {
	rows := b.rows[key]
	d := 0
	for d < len(rows) && rows[d] {
		d++
	}
	if d == len(rows) {
		rows = append(rows, false)
	}
	rows[d] = true
	b.rows[key] = rows
	return &openSpan{span: s, depth: d, name: name}
}

// close ends o at t, frees its row and writes the span to its lane.
func (b *builder) close(key rowKey, o *openSpan, t int64) error {
	if rows := b.rows[key]; o.depth < len(rows) {
		rows[o.depth] = false
	}
	lk := laneKey{key.track, key.id, key.layer, o.depth}
	lane, ok := b.lanes[lk]
	if !ok {
		lane = uint32(len(b.laneList))
		b.lanes[lk] = lane
		b.laneList = append(b.laneList, Lane{Track: key.track, ID: key.id, Layer: key.layer, Depth: o.depth})
	}
	s := o.span
	s.Dur = max(0, t-s.Start)
	b.laneList[lane].Spans++
	b.numSpans++
	binary.LittleEndian.PutUint32(b.spanRec[:4], lane)
	putSpan(b.spanRec[4:], s)
	if _, err := b.spanW.Write(b.spanRec[:]); err != nil {
		return fmt.Errorf("tracestore: writing spans: %w", err)
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
		for _, o := range open {
			if err := b.close(key, o, t); err != nil {
				return err
			}
		}
	}
	for g, open := range b.regions {
		for _, o := range open {
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
