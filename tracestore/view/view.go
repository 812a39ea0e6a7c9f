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
//	GET /api/meta                       the store's manifest and lane count
//	GET /api/lanes?from=&n=             lanes [from, from+n): their tracks,
//	                                    IDs, layers, depths and span counts
//	GET /api/tile?t0=&t1=&px=&lo=&hi=   lanes [lo, hi) (or lanes=3,8,...)
//	                                    over [t0, t1) in px columns: binary,
//	                                    8 bytes per cell (kind, busy 0-255,
//	                                    count uint16, name uint32;
//	                                    little-endian), lane after lane;
//	                                    zoomed out, the columns' bounds
//	                                    are rounded up to a multiple of
//	                                    2^X-Snap-Shift (SnapColumns)
//	GET /api/active?t0=&t1=&from=&n=    the first n lanes from lane from on
//	                                    with a span in [t0, t1) (every lane
//	                                    with all=1; with label=key=value
//	                                    only those of goroutines that the
//	                                    label's CPU samples in [t0, t1) ran
//	                                    on), and the lane to go on from
//	GET /api/span?lane=&i=              one span, its names and its stack
//	GET /api/pixel?lane=&t0=&t1=        the longest span of a lane in a range
//	GET /api/func?name=&t0=&t1=&px=     events through a function per
//	                                    column, through the function index
//	GET /api/label?label=&t0=&t1=&px=   CPU samples of a label (key=value)
//	                                    per column, its goroutines and its
//	                                    functions (Options.Labels)
//
// Pixel columns cut [t0, t1) exactly (tracestore.PixelStart), for any
// t0 < t1; an empty or reversed range gets a 400 that says so. The
// handler serves only requests whose Host header names a loopback host or
// one of Options.Hosts, bounds each request's lanes, pixels and response
// bytes (MaxLanes, MaxPixels, MaxCells; a lane at most once; MaxActiveScan
// lanes examined by /api/active), bounds the requests computed at once
// (Options.MaxInFlight), and answers a request that reads a store file
// truncated under it with a 500 (tracestore.Store.Guard). NewServer adds
// timeouts.
package view

import (
	"cmp"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
)

//go:embed index.html
var indexHTML []byte

// SchemaVersion is the version of the API's JSON. Version 2 pages the
// lane list: /api/meta gives the number of lanes, /api/lanes their
// records and /api/active a page of the active ones.
const SchemaVersion = 2

// Limits on a request's work. A request over them gets a 400.
const (
	MaxPixels = 8192    // px of /api/tile and /api/func
	MaxLanes  = 1024    // lanes of /api/tile (each at most once), /api/lanes and /api/active
	MaxCells  = 1 << 20 // lanes × px of /api/tile: a response of at most 8 MiB

	// MaxActiveScan bounds the lanes one /api/active examines: it
	// answers with fewer than n lanes, and where to go on from, when it
	// found fewer among them.
	MaxActiveScan = 1 << 16
)

// bufferedTile is the largest tile computed whole before it is written.
const bufferedTile = 1 << 20

// Options configure NewHandler.
type Options struct {
	// Hosts are the host names or addresses, with or without a port,
	// that a request's Host header may name besides the loopback ones
	// (localhost and loopback IP addresses), which are always allowed.
	// Any other Host gets a 403: a page of another site that a browser
	// reaches through DNS rebinding names its own host. "*" allows any.
	Hosts []string
	// MaxInFlight bounds the API requests computed at once; others wait
	// for a turn, and get a 503 if none comes within QueueWait. 0 means
	// 4 × GOMAXPROCS.
	MaxInFlight int
	// QueueWait is how long a request waits for a turn; 0 means 10 s.
	QueueWait time.Duration
	// Labels, if set, is the store's label index (labels.idx), which
	// /api/label answers from; without it /api/label answers 404.
	Labels *labels.Index
}

// Handler returns the viewer's HTTP handler for s, with the default
// Options: only loopback Host names.
func Handler(s *tracestore.Store) http.Handler { return NewHandler(s, Options{}) }

// NewHandler returns the viewer's HTTP handler for s.
func NewHandler(s *tracestore.Store, opts Options) http.Handler {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4 * runtime.GOMAXPROCS(0)
	}
	if opts.QueueWait <= 0 {
		opts.QueueWait = 10 * time.Second
	}
	h := &handler{s: s, labels: opts.Labels, turns: make(chan struct{}, opts.MaxInFlight), wait: opts.QueueWait, hosts: map[string]bool{}}
	for _, host := range opts.Hosts {
		if host == "*" {
			h.anyHost = true
		}
		h.hosts[hostName(host)] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(indexHTML)
	})
	mux.HandleFunc("GET /api/meta", h.api(h.meta))
	mux.HandleFunc("GET /api/lanes", h.api(h.lanes))
	mux.HandleFunc("GET /api/tile", h.api(h.tile))
	mux.HandleFunc("GET /api/span", h.api(h.span))
	mux.HandleFunc("GET /api/pixel", h.api(h.pixel))
	mux.HandleFunc("GET /api/active", h.api(h.active))
	mux.HandleFunc("GET /api/func", h.api(h.fn))
	mux.HandleFunc("GET /api/label", h.api(h.label))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		if !h.allowed(r.Host) {
			http.Error(w, fmt.Sprintf("host %q is not allowed: pctab-trace serve -allowhost %s allows it", r.Host, hostName(r.Host)), http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// NewServer returns a server of h with timeouts for reading a request's
// header and body, writing its response and keeping an idle connection,
// and a limit on the header's size.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// hostName returns host without its port or IPv6 brackets, in lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

func (h *handler) allowed(host string) bool {
	name := hostName(host)
	if h.anyHost || h.hosts[name] || name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// api wraps an API handler: it waits for a turn among the requests in
// flight, and turns a fault in a store file truncated under the server
// into a 500 (see tracestore.Store.Guard).
func (h *handler) api(f http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		timer := time.NewTimer(h.wait)
		defer timer.Stop()
		select {
		case h.turns <- struct{}{}:
		case <-timer.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy: too many requests in flight", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		defer func() { <-h.turns }()
		rw := &trackingWriter{ResponseWriter: w}
		if err := h.s.Guard(func() { f(rw, r) }); err != nil {
			if rw.wrote {
				panic(http.ErrAbortHandler) // the client sees a cut response
			}
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
}

// trackingWriter records whether a response has begun.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) { w.wrote = true; w.ResponseWriter.WriteHeader(code) }
func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

type handler struct {
	s       *tracestore.Store
	labels  *labels.Index
	turns   chan struct{} // one per API request in flight
	wait    time.Duration
	hosts   map[string]bool
	anyHost bool
}

// Meta is /api/meta's answer.
type Meta struct {
	SchemaVersion int      `json:"schema_version"`
	Source        string   `json:"source"`
	Duration      int64    `json:"duration_ns"`
	Events        uint64   `json:"events"`
	Spans         int64    `json:"spans"`
	Kinds         []string `json:"span_kinds"` // names of the span kinds, by number
	Lanes         int      `json:"lanes"`      // how many: /api/lanes lists them
}

// LaneInfo describes one lane.
type LaneInfo struct {
	Track string `json:"track"`
	ID    int64  `json:"id"`
	Layer string `json:"layer"`
	Depth int    `json:"depth"`
	Spans int64  `json:"spans"`
	Error string `json:"error,omitempty"` // why the lane shows no spans (tracestore.Store.LaneError)
}

// LanePage is /api/lanes's answer: lanes [from, from+len(lanes)).
type LanePage struct {
	SchemaVersion int        `json:"schema_version"`
	From          int        `json:"from"`
	Lanes         []LaneInfo `json:"lanes"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (h *handler) meta(w http.ResponseWriter, r *http.Request) {
	m := h.s.Manifest()
	out := Meta{SchemaVersion: SchemaVersion, Source: m.Source, Duration: m.Duration, Events: m.Events, Spans: m.Spans, Lanes: h.s.NumLanes()}
	for k := tracestore.SpanKind(0); k < tracestore.SpanTask+1; k++ {
		out.Kinds = append(out.Kinds, k.String())
	}
	writeJSON(w, out)
}

// page reads a request's page of lanes, "from" and "n": from in [0,
// lanes], n in [1, MaxLanes].
func (h *handler) page(r *http.Request) (from, n int, err error) {
	p, err := params(r, "from", "n")
	if err != nil {
		return 0, 0, err
	}
	if nl := int64(h.s.NumLanes()); p[0] < 0 || p[0] > nl || p[1] < 1 || p[1] > MaxLanes {
		return 0, 0, fmt.Errorf("from=%d n=%d: want from in [0, %d] and n in [1, %d]", p[0], p[1], nl, MaxLanes)
	}
	return int(p[0]), int(p[1]), nil
}

func (h *handler) lanes(w http.ResponseWriter, r *http.Request) {
	from, n, err := h.page(r)
	if err != nil {
		http.Error(w, fmt.Sprintf("bad lanes: %v", err), http.StatusBadRequest)
		return
	}
	to := min(h.s.NumLanes(), from+n)
	out := LanePage{SchemaVersion: SchemaVersion, From: from, Lanes: make([]LaneInfo, 0, to-from)}
	for l := from; l < to; l++ {
		ln := h.s.Lane(l)
		li := LaneInfo{Track: ln.Track.String(), ID: ln.ID, Layer: ln.Layer.String(), Depth: ln.Depth, Spans: ln.Spans}
		if err := h.s.LaneError(l); err != nil {
			li.Error = err.Error()
		}
		out.Lanes = append(out.Lanes, li)
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

// timeRange checks a request's time range [t0, t1): t0 < t1, or a 400
// that says which bound is wrong.
func timeRange(t0, t1 int64) error {
	if t1 <= t0 {
		return fmt.Errorf("t0=%d, t1=%d: the time range [t0, t1) is empty or reversed: want t0 < t1", t0, t1)
	}
	return nil
}

// pixels checks a request's pixel columns: px in [1, MaxPixels].
func pixels(px int64) error {
	if px < 1 || px > MaxPixels {
		return fmt.Errorf("px=%d: want px in [1, %d]", px, MaxPixels)
	}
	return nil
}

// laneList reads the lanes of a request: "lanes" (comma-separated lane
// numbers) or the range "lo" to "hi".
func (h *handler) laneList(r *http.Request) ([]int, error) {
	nl := h.s.NumLanes()
	var lanes []int
	if q := r.URL.Query().Get("lanes"); q != "" {
		for _, f := range strings.Split(q, ",") {
			l, err := strconv.Atoi(f)
			if err != nil || l < 0 || l >= nl {
				return nil, fmt.Errorf("lane %q of %d", f, nl)
			}
			if len(lanes) == MaxLanes {
				return nil, fmt.Errorf("more than %d lanes", MaxLanes)
			}
			lanes = append(lanes, l)
		}
		// Each lane once: a lane listed twice would cost its work twice.
		sorted := slices.Clone(lanes)
		slices.Sort(sorted)
		for i := 1; i < len(sorted); i++ {
			if sorted[i] == sorted[i-1] {
				return nil, fmt.Errorf("lane %d listed twice", sorted[i])
			}
		}
		return lanes, nil
	}
	p, err := params(r, "lo", "hi")
	if err != nil {
		return nil, err
	}
	lo, hi := p[0], p[1]
	if lo < 0 || hi < lo || hi > int64(nl) || hi-lo > MaxLanes {
		return nil, fmt.Errorf("lanes [%d, %d) of %d", lo, hi, nl)
	}
	for l := lo; l < hi; l++ {
		lanes = append(lanes, int(l))
	}
	return lanes, nil
}

// each calls f for every lane in lanes, on up to GOMAXPROCS goroutines;
// f gets the lane's position in lanes. It returns the first error of
// tracestore.Store.Guard.
func (h *handler) each(lanes []int, f func(i, lane int)) error {
	var wg sync.WaitGroup
	var next atomic.Int64
	errs := make(chan error, 1)
	for range min(runtime.GOMAXPROCS(0), len(lanes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := h.s.Guard(func() {
				for i := next.Add(1) - 1; i < int64(len(lanes)); i = next.Add(1) - 1 {
					f(int(i), lanes[i])
				}
			})
			if err != nil {
				next.Store(int64(len(lanes))) // stop the others
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (h *handler) tile(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "t0", "t1", "px")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t0, t1, px := p[0], p[1], p[2]
	lanes, err := h.laneList(r)
	if err == nil {
		err = cmp.Or(timeRange(t0, t1), pixels(px))
	}
	if err == nil && int64(len(lanes))*px > MaxCells {
		err = fmt.Errorf("%d lanes of %d pixels: more than %d cells", len(lanes), px, MaxCells)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad tile: t0=%d t1=%d px=%d: %v", t0, t1, px, err), http.StatusBadRequest)
		return
	}
	// A tile of up to bufferedTile bytes is computed whole, and says how
	// long that took (X-Compute-Ms). A larger one is computed a few lanes
	// at a time, in parallel, and written as they are done: the request's
	// memory is a few rows, whatever the response's size.
	// Zoomed out, the columns snap to the store's coarse levels
	// (tracestore.Store.Snap): X-Snap-Shift says to which power of two.
	start := time.Now()
	shift := h.s.Snap(t0, t1, int(px))
	bounds := tracestore.SnapColumns(t0, t1, int(px), shift, nil)
	w.Header().Set("X-Snap-Shift", strconv.FormatUint(uint64(shift), 10))
	chunk := len(lanes)
	if 8*px*int64(len(lanes)) > bufferedTile {
		chunk = runtime.GOMAXPROCS(0)
	}
	out := make([]byte, 8*px*int64(chunk))
	var pool sync.Pool
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(8*px*int64(len(lanes)), 10))
	for c0 := 0; c0 < len(lanes); c0 += chunk {
		part := lanes[c0:min(c0+chunk, len(lanes))]
		if err := h.each(part, func(i, l int) {
			cells, _ := pool.Get().([]tracestore.Cell)
			if int64(len(cells)) != px {
				cells = make([]tracestore.Cell, px)
			}
			defer pool.Put(cells)
			h.s.QueryColumns(l, bounds, cells)
			b := out[8*px*int64(i):]
			for j, c := range cells {
				e := b[8*j:]
				e[0], e[1] = byte(c.Kind), c.Busy
				binary.LittleEndian.PutUint16(e[2:], c.Count)
				binary.LittleEndian.PutUint32(e[4:], c.Name)
			}
		}); err != nil {
			if c0 > 0 {
				panic(http.ErrAbortHandler) // the client sees a cut response
			}
			w.Header().Del("Content-Length")
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if chunk == len(lanes) {
			w.Header().Set("X-Compute-Ms", strconv.FormatFloat(time.Since(start).Seconds()*1e3, 'f', 3, 64))
		}
		if _, err := w.Write(out[:8*px*int64(len(part))]); err != nil {
			return
		}
	}
}

// Active is /api/active's answer: the lanes with a span in a time range,
// from a lane on, and the lane after the last one examined, from which
// the next page goes on (the number of lanes when there are no more).
type Active struct {
	SchemaVersion int   `json:"schema_version"`
	Lanes         []int `json:"lanes"`
	Next          int   `json:"next"`
}

// activeChunk is the number of lanes /api/active examines at once, in
// parallel.
const activeChunk = 256

func (h *handler) active(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "t0", "t1")
	if err == nil {
		err = timeRange(p[0], p[1])
	}
	var from, n int
	if err == nil {
		from, n, err = h.page(r)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad active: %v", err), http.StatusBadRequest)
		return
	}
	t0, t1 := p[0], p[1]
	all := r.URL.Query().Get("all") == "1"
	// A label keeps the goroutines its samples in range ran on.
	var gs map[int64]bool
	if q := r.URL.Query().Get("label"); q != "" {
		if h.labels == nil {
			http.Error(w, "the store has no label index (pctab-trace build -labels)", http.StatusNotFound)
			return
		}
		l, err := labels.ParseLabel(q)
		if err != nil {
			http.Error(w, fmt.Sprintf("bad active: %v", err), http.StatusBadRequest)
			return
		}
		gs = map[int64]bool{}
		for _, s := range h.labels.Samples(l, t0, t1) {
			gs[s.Goroutine] = true
		}
	}
	out := Active{SchemaVersion: SchemaVersion, Lanes: []int{}, Next: from}
	end := min(h.s.NumLanes(), from+MaxActiveScan)
	lanes := make([]int, 0, activeChunk)
	has := make([]bool, activeChunk)
	for out.Next < end && len(out.Lanes) < n {
		lanes = lanes[:0]
		for l := out.Next; l < min(end, out.Next+activeChunk); l++ {
			lanes = append(lanes, l)
		}
		if err := h.each(lanes, func(i, l int) {
			if gs != nil {
				if ln := h.s.Lane(l); ln.Track != tracestore.TrackGoroutine || !gs[ln.ID] {
					has[i] = false
					return
				}
			}
			has[i] = all && h.s.Lane(l).Spans > 0 || h.s.HasSpans(l, t0, t1)
		}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out.Next = lanes[len(lanes)-1] + 1
		for i, l := range lanes {
			if has[i] {
				out.Lanes = append(out.Lanes, l)
				if len(out.Lanes) == n {
					out.Next = l + 1
					break
				}
			}
		}
	}
	writeJSON(w, out)
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
	if p[0] < 0 || p[0] >= int64(h.s.NumLanes()) || p[1] < 0 || p[1] >= h.s.Lane(int(p[0])).Spans {
		http.Error(w, "no such span", http.StatusNotFound)
		return
	}
	h.writeSpan(w, int(p[0]), p[1], 0)
}

func (h *handler) pixel(w http.ResponseWriter, r *http.Request) {
	p, err := params(r, "lane", "t0", "t1")
	if err == nil {
		err = timeRange(p[1], p[2])
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad pixel: %v", err), http.StatusBadRequest)
		return
	}
	if p[0] < 0 || p[0] >= int64(h.s.NumLanes()) {
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
	err = cmp.Or(timeRange(t0, t1), pixels(px))
	if err == nil && name == "" {
		err = errors.New("no function name")
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad function query: %v", err), http.StatusBadRequest)
		return
	}
	out := FuncCounts{SchemaVersion: SchemaVersion, Func: name, Counts: make([]uint32, px)}
	out.Stats, err = h.s.EventsThrough(name, t0, t1, func(e *tracestore.Event) bool {
		out.Counts[tracestore.PixelOf(t0, t1, px, e.Time)]++
		return true
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, out)
}

// LabelCounts is /api/label's answer: the CPU samples of a label in a
// time range, per pixel column, the goroutines they ran on (sorted) and
// their functions (at most MaxLabelFuncs, by samples where running).
type LabelCounts struct {
	SchemaVersion int                `json:"schema_version"`
	Label         string             `json:"label"`
	Samples       int                `json:"samples"`
	Counts        []uint32           `json:"counts"`
	Goroutines    []int64            `json:"goroutines"`
	Funcs         []labels.FuncCount `json:"funcs"`
}

// MaxLabelFuncs bounds /api/label's functions.
const MaxLabelFuncs = 20

func (h *handler) label(w http.ResponseWriter, r *http.Request) {
	if h.labels == nil {
		http.Error(w, "the store has no label index (pctab-trace build -labels)", http.StatusNotFound)
		return
	}
	p, err := params(r, "t0", "t1", "px")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t0, t1, px := p[0], p[1], p[2]
	l, err := labels.ParseLabel(r.URL.Query().Get("label"))
	if err == nil {
		err = cmp.Or(timeRange(t0, t1), pixels(px))
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad label query: %v", err), http.StatusBadRequest)
		return
	}
	ss := h.labels.Samples(l, t0, t1)
	out := LabelCounts{SchemaVersion: SchemaVersion, Label: l.String(), Samples: len(ss), Counts: make([]uint32, px), Goroutines: []int64{}}
	seen := map[int64]bool{}
	for _, s := range ss {
		out.Counts[tracestore.PixelOf(t0, t1, px, s.Time)]++
		if s.Goroutine >= 0 && !seen[s.Goroutine] {
			seen[s.Goroutine] = true
			out.Goroutines = append(out.Goroutines, s.Goroutine)
		}
	}
	slices.Sort(out.Goroutines)
	out.Funcs = h.labels.ByFunc(ss)
	out.Funcs = out.Funcs[:min(len(out.Funcs), MaxLabelFuncs)]
	writeJSON(w, out)
}
