// Package view serves a trace store to a browser: one page that draws the
// store's lanes as timelines and zooms and pans them smoothly, from the
// whole trace down to single spans, and the HTTP API the page reads.
//
// Every frame the page draws comes from range queries on the store: for
// each lane on screen and each pixel column, the longest span under the
// pixel (as Perfetto draws a zoomed-out timeline), how many spans it
// covers and how busy it is (tracestore.Store.QueryRow). Nothing scans the
// events or the spans. The page is embedded in the binary and fetches
// nothing from elsewhere.
//
// The API (JSON is snake_case, with a schema_version):
//
//	GET /api/meta                       the store's manifest and lanes
//	GET /api/tile?t0=&t1=&px=&lo=&hi=   lanes [lo, hi) over [t0, t1) in px
//	                                    columns: binary, 8 bytes per cell
//	                                    (kind, busy 0-255, count uint16,
//	                                    name uint32; little-endian), lane
//	                                    after lane
//	GET /api/span?lane=&i=              one span, its names and its stack
//	GET /api/pixel?lane=&t0=&t1=        the longest span of a lane in a range
//	GET /api/func?name=&t0=&t1=&px=     events through a function per
//	                                    column, through the function index
package view

import (
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/pctab/pctab/tracestore"
)

//go:embed index.html
var indexHTML []byte

// SchemaVersion is the version of the API's JSON.
const SchemaVersion = 1

// Limits on a request's work.
const (
	MaxPixels = 8192
	MaxLanes  = 1024
)

// Handler returns the viewer's HTTP handler for s.
func Handler(s *tracestore.Store) http.Handler {
	h := &handler{s: s}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(indexHTML)
	})
	mux.HandleFunc("GET /api/meta", h.meta)
	mux.HandleFunc("GET /api/tile", h.tile)
	mux.HandleFunc("GET /api/span", h.span)
	mux.HandleFunc("GET /api/pixel", h.pixel)
	mux.HandleFunc("GET /api/func", h.fn)
	return mux
}

type handler struct {
	s *tracestore.Store
}

// Meta is /api/meta's answer.
type Meta struct {
	SchemaVersion int        `json:"schema_version"`
	Source        string     `json:"source"`
	Duration      int64      `json:"duration_ns"`
	Events        uint64     `json:"events"`
	Spans         int64      `json:"spans"`
	Kinds         []string   `json:"span_kinds"` // names of the span kinds, by number
	Lanes         []LaneInfo `json:"lanes"`
}

// LaneInfo describes one lane.
type LaneInfo struct {
	Track string `json:"track"`
	ID    int64  `json:"id"`
	Layer string `json:"layer"`
	Depth int    `json:"depth"`
	Spans int64  `json:"spans"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (h *handler) meta(w http.ResponseWriter, r *http.Request) {
	m := h.s.Manifest()
	out := Meta{SchemaVersion: SchemaVersion, Source: m.Source, Duration: m.Duration, Events: m.Events, Spans: m.Spans, Lanes: []LaneInfo{}}
	for k := tracestore.SpanKind(0); k < tracestore.SpanTask+1; k++ {
		out.Kinds = append(out.Kinds, k.String())
	}
	for _, l := range h.s.Lanes() {
		out.Lanes = append(out.Lanes, LaneInfo{Track: l.Track.String(), ID: l.ID, Layer: l.Layer.String(), Depth: l.Depth, Spans: l.Spans})
	}
	writeJSON(w, out)
}

// params reads integer query parameters; a missing or bad one is an error.
func params(r *http.Request, names ...string) ([]int64, error) {
	out := make([]int64, len(names))
	for i, n := range names {
		v, err := strconv.ParseInt(r.URL.Query().Get(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", n, err)
		}
		out[i] = v
	}
	return out, nil
}

func (h *handler) tile(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "t0", "t1", "px", "lo", "hi")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t0, t1, px, lo, hi := p[0], p[1], p[2], p[3], p[4]
	nl := int64(len(h.s.Lanes()))
	if px < 1 || px > MaxPixels || lo < 0 || hi < lo || hi > nl || hi-lo > MaxLanes || t1 <= t0 {
		http.Error(w, fmt.Sprintf("bad tile: t0=%d t1=%d px=%d lanes [%d, %d) of %d", t0, t1, px, lo, hi, nl), http.StatusBadRequest)
		return
	}
	start := time.Now()
	out := make([]byte, 8*px*(hi-lo))
	var wg sync.WaitGroup
	next := make(chan int64, hi-lo)
	for l := lo; l < hi; l++ {
		next <- l
	}
	close(next)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cells := make([]tracestore.Cell, px)
			for l := range next {
				h.s.QueryRow(int(l), t0, t1, cells)
				b := out[8*px*(l-lo):]
				for i, c := range cells {
					e := b[8*i:]
					e[0], e[1] = byte(c.Kind), c.Busy
					binary.LittleEndian.PutUint16(e[2:], c.Count)
					binary.LittleEndian.PutUint32(e[4:], c.Name)
				}
			}
		}()
	}
	wg.Wait()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Compute-Ms", strconv.FormatFloat(time.Since(start).Seconds()*1e3, 'f', 3, 64))
	w.Write(out)
}

// SpanInfo is /api/span's answer.
type SpanInfo struct {
	SchemaVersion int         `json:"schema_version"`
	Lane          int         `json:"lane"`
	Index         int64       `json:"index"`
	Start         int64       `json:"start_ns"`
	Dur           int64       `json:"dur_ns"`
	Kind          string      `json:"kind"`
	Name          string      `json:"name"`
	Stack         []FrameInfo `json:"stack"`
	SpansUnder    int64       `json:"spans_under,omitempty"` // for /api/pixel: spans overlapping the range
}

// FrameInfo is one frame of a stack.
type FrameInfo struct {
	Func string `json:"func"`
	File string `json:"file"`
	Line uint32 `json:"line"`
}

func (h *handler) span(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "lane", "i")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	lanes := h.s.Lanes()
	if p[0] < 0 || p[0] >= int64(len(lanes)) || p[1] < 0 || p[1] >= lanes[p[0]].Spans {
		http.Error(w, "no such span", http.StatusNotFound)
		return
	}
	h.writeSpan(w, int(p[0]), p[1], 0)
}

func (h *handler) pixel(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "lane", "t0", "t1")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if p[0] < 0 || p[0] >= int64(len(h.s.Lanes())) {
		http.Error(w, "no such lane", http.StatusNotFound)
		return
	}
	a := h.s.Query(int(p[0]), p[1], p[2])
	if a.Longest < 0 {
		http.Error(w, "no span", http.StatusNotFound)
		return
	}
	h.writeSpan(w, int(p[0]), a.Longest, a.Count)
}

func (h *handler) writeSpan(w http.ResponseWriter, lane int, i, under int64) {
	sp := h.s.Span(lane, i)
	p := []int64{int64(lane), i}
	out := SpanInfo{SchemaVersion: SchemaVersion, Lane: int(p[0]), Index: p[1], Start: sp.Start, Dur: sp.Dur, Kind: sp.Kind.String(), Name: h.s.String(sp.Name), Stack: []FrameInfo{}, SpansUnder: under}
	frames, err := h.s.Stack(uint64(sp.Stack))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, f := range frames {
		out.Stack = append(out.Stack, FrameInfo{Func: f.Func, File: f.File, Line: f.Line})
	}
	writeJSON(w, out)
}

// FuncCounts is /api/func's answer.
type FuncCounts struct {
	SchemaVersion int                   `json:"schema_version"`
	Func          string                `json:"func"`
	Counts        []uint32              `json:"counts"`
	Stats         tracestore.QueryStats `json:"stats"`
}

func (h *handler) fn(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "t0", "t1", "px")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t0, t1, px := p[0], p[1], p[2]
	name := r.URL.Query().Get("name")
	if px < 1 || px > MaxPixels || t1 <= t0 || name == "" {
		http.Error(w, "bad function query", http.StatusBadRequest)
		return
	}
	out := FuncCounts{SchemaVersion: SchemaVersion, Func: name, Counts: make([]uint32, px)}
	out.Stats, err = h.s.EventsThrough(name, t0, t1, func(e *tracestore.Event) bool {
		i := (e.Time - t0) * px / (t1 - t0)
		out.Counts[min(max(i, 0), px-1)]++
		return true
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, out)
}
