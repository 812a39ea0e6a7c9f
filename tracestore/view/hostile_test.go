package view

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/allocs"
	"github.com/pctab/pctab/internal/mapfile"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
	"github.com/pctab/pctab/trampoline"
)

// serve calls h for a GET of target from a loopback Host, in process.
func serve(h http.Handler, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", target, nil)
	r.Host = "127.0.0.1:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestWideRanges is issue 26's item 5: when t1-t0 >= 2^63 the column
// arithmetic overflowed, and /api/tile and /api/func put data in the wrong
// columns with status 200. Every column of a tile is checked against
// Query over the column's range, its bounds computed with big integers.
func TestWideRanges(t *testing.T) {
	s := recordStore(t)
	h := Handler(s)
	var lanes []string
	for l := range s.NumLanes() {
		lanes = append(lanes, fmt.Sprint(l))
	}
	const px = 4
	for _, rg := range [][2]int64{{math.MinInt, math.MaxInt64}, {-1 << 62, 1<<62 + 1}, {math.MinInt64 + 1, 1 << 40}, {-5, 1 << 62}} {
		// bound(p) = t0 + floor((t1-t0)*p/px)
		bound := func(p int64) int64 {
			w := new(big.Int).Sub(big.NewInt(rg[1]), big.NewInt(rg[0]))
			w.Mul(w, big.NewInt(p)).Quo(w, big.NewInt(px))
			return w.Add(w, big.NewInt(rg[0])).Int64()
		}
		w := serve(h, fmt.Sprintf("/api/tile?t0=%d&t1=%d&px=%d&lanes=%s", rg[0], rg[1], px, strings.Join(lanes, ",")))
		if w.Code != 200 || w.Body.Len() != 8*px*len(lanes) {
			t.Fatalf("tile %v: %d, %d bytes", rg, w.Code, w.Body.Len())
		}
		b := w.Body.Bytes()
		for l := range s.NumLanes() {
			for p := range int64(px) {
				q := s.Query(l, bound(p), bound(p+1))
				cell := b[8*(px*int64(l)+p):]
				if got := binary.LittleEndian.Uint16(cell[2:]); int64(got) != min(q.Count, 65535) || (q.Count == 0) != (cell[0] == byte(tracestore.NoSpan)) {
					t.Fatalf("range %v lane %d: column %d [%d, %d) has %d spans (kind %d), Query says %d", rg, l, p, bound(p), bound(p+1), got, cell[0], q.Count)
				}
			}
		}
		// /api/func: each event in its column.
		fn := "runtime.gopark"
		var fc FuncCounts
		w = serve(h, fmt.Sprintf("/api/func?name=%s&t0=%d&t1=%d&px=%d", fn, rg[0], rg[1], px))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &fc) != nil {
			t.Fatalf("func %v: %d %s", rg, w.Code, w.Body.Bytes())
		}
		for p := range int64(px) {
			var n uint32
			if _, err := s.EventsThrough(fn, bound(p), bound(p+1), func(*tracestore.Event) bool { n++; return true }); err != nil {
				t.Fatal(err)
			}
			if fc.Counts[p] != n {
				t.Errorf("func %v: column %d [%d, %d) counts %d events, the store %d", rg, p, bound(p), bound(p+1), fc.Counts[p], n)
			}
		}
	}
}

// TestRequestLimits is issue 26's item 6: a 2 KB /api/tile request with
// 1,024 duplicate lanes and px=8192 allocated 64 MiB. Duplicate lanes and
// tiles of more than MaxCells cells get a 400 having allocated little,
// and the largest valid tile allocates its response's size and a few rows.
func TestRequestLimits(t *testing.T) {
	s := recordStore(t)
	h := Handler(s)
	dup := "/api/tile?t0=0&t1=1000000&px=8192&lanes=" + strings.Repeat("0,", 1023) + "0"
	if len(dup) > 2200 {
		t.Fatalf("a %d-byte request", len(dup))
	}
	nl := s.NumLanes()
	all := laneRange(0, nl)
	maxPx := min(MaxPixels, MaxCells/nl) // the largest tile of every lane
	for _, c := range []struct {
		target string
		code   int
		limit  uint64 // by the handler; the response is discarded
	}{
		{dup, 400, 256 << 10},
		{"/api/tile?t0=0&t1=1000000&px=8192&lanes=0,1,2,0", 400, 64 << 10},
		{"/api/tile?t0=0&t1=1000000&px=8193&lo=0&hi=1", 400, 64 << 10},
		{fmt.Sprintf("/api/tile?t0=0&t1=1000000&px=%d&lo=0&hi=%d", MaxCells/nl+1, nl), 400, 64 << 10},
		{"/api/func?name=x&t0=0&t1=10&px=100000000", 400, 64 << 10},
		{"/api/lanes?from=0&n=1025", 400, 64 << 10},
		{"/api/lanes?from=0&n=-1", 400, 64 << 10},
		{"/api/lanes?from=-9223372036854775808&n=1", 400, 64 << 10},
		{"/api/lanes?from=9223372036854775807&n=9223372036854775807", 400, 64 << 10},
		{"/api/lanes?from=18446744073709551616&n=1", 400, 64 << 10},
		{"/api/active?t0=0&t1=10&from=0&n=1025", 400, 64 << 10},
		{"/api/active?t0=0&t1=10&from=0", 400, 64 << 10},
		{"/api/active?t0=0&t1=10&from=-1&n=1", 400, 64 << 10},
		{fmt.Sprintf("/api/active?t0=0&t1=10&from=%d&n=1", nl+1), 400, 64 << 10},
		{"/api/active?t0=10&t1=10&from=0&n=1", 400, 64 << 10},
		{fmt.Sprintf("/api/lanes?from=0&n=%d", MaxLanes), 200, 512 << 10},
		{fmt.Sprintf("/api/active?t0=%d&t1=%d&from=0&n=%d&all=1", int64(math.MinInt64), int64(math.MaxInt64), MaxLanes), 200, 256 << 10},
		{"/api/active?t0=0&t1=10&from=0&n=1&label=query%3Dq1", 404, 64 << 10},
		{fmt.Sprintf("/api/tile?t0=0&t1=1000000&px=%d&lanes=%s", maxPx, all), 200, uint64(maxPx)*48*uint64(runtime.GOMAXPROCS(0)) + 512<<10}, // a few rows, not the 8 MB response
	} {
		r := httptest.NewRequest("GET", c.target, nil)
		r.Host = "localhost"
		w := &discardWriter{h: http.Header{}, code: 200}
		got := allocs.Bytes(func() { h.ServeHTTP(w, r) })
		t.Logf("%.60s...: %d, %d bytes written, %d allocated", c.target, w.code, w.n, got)
		if w.code != c.code {
			t.Errorf("%.60s: %d, want %d", c.target, w.code, c.code)
		}
		if got > c.limit {
			t.Errorf("%.60s: allocated %d bytes, want at most %d", c.target, got, c.limit)
		}
	}
}

// discardWriter is a ResponseWriter that counts and drops the response.
type discardWriter struct {
	h    http.Header
	code int
	n    int64
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }

// TestTruncatedWhileServed is issue 26's item 7: serve died (SIGBUS) when
// a store file was truncated while it was mapped, as copying a rebuilt
// store over the old one does. The requests that read what was lost get a
// 500 instead. Where the store's files are read into memory (package
// mapfile's fallback), truncating them changes nothing, and Windows
// refuses to truncate a mapped file.
func TestTruncatedWhileServed(t *testing.T) {
	if !mapfile.Supported {
		t.Skip("the store's files are read into memory, not mapped, in this build")
	}
	s, dir := recordStoreDir(t)
	h := Handler(s)
	d := s.Manifest().Duration
	tile := fmt.Sprintf("/api/tile?t0=0&t1=%d&px=500&lo=0&hi=%d", d+1, s.NumLanes())
	if w := serve(h, tile); w.Code != 200 {
		t.Fatalf("tile: %d %s", w.Code, w.Body.Bytes())
	}
	for _, name := range []string{"spans.bin", "blocks.idx", "func.idx", "stacks.dag", "pages.idx"} {
		if err := os.Truncate(filepath.Join(dir, name), 0); err != nil {
			if runtime.GOOS == "windows" {
				t.Skipf("%v: Windows keeps a mapped file from being truncated", err)
			}
			t.Fatal(err)
		}
	}
	for _, target := range []string{
		tile,
		fmt.Sprintf("/api/active?t0=0&t1=%d&from=0&n=10", d+1),
		fmt.Sprintf("/api/func?name=runtime.gopark&t0=0&t1=%d&px=10", d+1),
		"/api/span?lane=0&i=0",
		fmt.Sprintf("/api/pixel?lane=0&t0=0&t1=%d", d+1),
	} {
		w := serve(h, target)
		t.Logf("%s: %d %s", target, w.Code, bytes.TrimSpace(w.Body.Bytes()))
		if w.Code != 500 {
			t.Errorf("%s: %d after the store's files were truncated, want 500", target, w.Code)
		}
	}
}

// TestHostAllowList is issue 26's item 8: serve answered any Host header,
// which left it open to DNS rebinding from a browser.
func TestHostAllowList(t *testing.T) {
	s := recordStore(t)
	for _, c := range []struct {
		hosts []string
		host  string
		code  int
	}{
		{nil, "127.0.0.1:8080", 200},
		{nil, "localhost:8080", 200},
		{nil, "LOCALHOST", 200},
		{nil, "[::1]:8080", 200},
		{nil, "127.0.0.2", 200},
		{nil, "attacker.example:8080", 403},
		{nil, "attacker.example", 403},
		{nil, "localhost.attacker.example", 403},
		{nil, "", 403},
		{nil, "10.0.0.1:8080", 403},
		{[]string{"my.box"}, "my.box:9000", 200},
		{[]string{"my.box:9000"}, "MY.BOX", 200},
		{[]string{"my.box"}, "other.box", 403},
		{[]string{"10.0.0.1"}, "10.0.0.1:8080", 200},
		{[]string{"*"}, "anything.example", 200},
	} {
		h := NewHandler(s, Options{Hosts: c.hosts})
		for _, target := range []string{"/", "/api/meta"} {
			r := httptest.NewRequest("GET", target, nil)
			r.Host = c.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.code {
				t.Errorf("hosts %v, Host %q, %s: %d, want %d", c.hosts, c.host, target, w.Code, c.code)
			}
		}
	}
}

// TestServerTimeouts checks the server's limits: a client that never
// finishes its header is disconnected, and every timeout is set.
func TestServerTimeouts(t *testing.T) {
	srv := NewServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 64<<10 {
		t.Fatalf("server limits %+v", srv)
	}
	srv.ReadHeaderTimeout = 50 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n") // never ends
	c.SetReadDeadline(time.Now().Add(30 * time.Second))        // a bound on the test, not a measurement
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the server did not close a connection whose header never ended: %v", err)
	}
}

// TestInFlightBound checks that requests beyond MaxInFlight wait, and get
// a 503 when no turn comes.
func TestInFlightBound(t *testing.T) {
	s := recordStore(t)
	hh := NewHandler(s, Options{MaxInFlight: 1, QueueWait: time.Millisecond})
	h := &handler{s: s, turns: make(chan struct{}, 1), wait: time.Millisecond}
	h.turns <- struct{}{} // the one turn is taken
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/meta", nil)
	h.api(h.meta)(w, r)
	if w.Code != 503 {
		t.Errorf("a request with no turn: %d, want 503", w.Code)
	}
	<-h.turns
	w = httptest.NewRecorder()
	h.api(h.meta)(w, r)
	if w.Code != 200 {
		t.Errorf("a request with a turn: %d, want 200", w.Code)
	}
	if w := serve(hh, "/api/meta"); w.Code != 200 {
		t.Errorf("meta: %d", w.Code)
	}
}

// heapPeak samples the heap's live bytes until stop is closed.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// TestLoad serves 64 parallel clients over 127.0.0.1, mixing valid
// requests with hostile ones (duplicate lanes, tiles over the limits,
// foreign Host headers, ranges of 2^64 ns, bad parameters): every valid
// answer equals the sequential one, every hostile one is refused, and the
// heap's peak stays bounded (unbounded, sixteen such clients took the
// server from 15 MB to 1.07 GB).
func TestLoad(t *testing.T) {
	s := recordStore(t)
	srv := httptest.NewUnstartedServer(NewHandler(s, Options{}))
	srv.Config = NewServer(srv.Config.Handler)
	srv.Start()
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("serving at %s", srv.URL)
	}
	d := s.Manifest().Duration
	nl := s.NumLanes()
	valid := []string{
		"/api/meta",
		fmt.Sprintf("/api/tile?t0=0&t1=%d&px=1000&lo=0&hi=%d", d+1, nl),
		fmt.Sprintf("/api/tile?t0=%d&t1=%d&px=%d&lanes=%s", d/3, d/2, min(MaxPixels, MaxCells/nl), laneRange(0, nl)),
		fmt.Sprintf("/api/tile?t0=%d&t1=%d&px=64&lo=0&hi=%d", int64(math.MinInt), int64(math.MaxInt64), nl),
		fmt.Sprintf("/api/active?t0=%d&t1=%d&from=0&n=%d", d/4, d/2, MaxLanes),
		fmt.Sprintf("/api/active?t0=%d&t1=%d&from=%d&n=5&all=1", d/4, d/2, nl/2),
		fmt.Sprintf("/api/lanes?from=0&n=%d", MaxLanes),
		fmt.Sprintf("/api/func?name=runtime.gopark&t0=0&t1=%d&px=300", d+1),
		fmt.Sprintf("/api/pixel?lane=0&t0=0&t1=%d", d+1),
		"/api/span?lane=0&i=0",
	}
	hostile := []string{
		"/api/tile?t0=0&t1=1000000&px=8192&lanes=" + strings.Repeat("0,", 1023) + "0",
		fmt.Sprintf("/api/tile?t0=0&t1=1000000&px=%d&lo=0&hi=%d", MaxPixels, nl) + "&lanes=" + strings.Repeat("1,", 500) + "1",
		"/api/tile?t0=0&t1=1000000&px=99999999&lo=0&hi=1",
		"/api/tile?t0=5&t1=5&px=10&lo=0&hi=1",
		"/api/span?lane=0&i=-1",
		"/api/span?lane=99999999&i=0",
		"/api/func?name=x&t0=0&t1=1&px=0",
		"/api/tile?t0=x",
		"/api/lanes?from=0&n=1025",
		"/api/lanes?from=-1&n=10",
		fmt.Sprintf("/api/lanes?from=%d&n=1", nl+1),
		"/api/active?t0=0&t1=10&from=0&n=9223372036854775807",
		"/api/active?t0=0&t1=10&from=9223372036854775807&n=1",
	}
	get := func(c *http.Client, target, host string) (int, []byte, error) {
		req, _ := http.NewRequest("GET", srv.URL+target, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		// The digest, not the body: the clients' memory is not the
		// server's.
		hsh := sha256.New()
		_, err = io.Copy(hsh, resp.Body)
		return resp.StatusCode, hsh.Sum(nil), err
	}
	// The sequential answers.
	want := map[string][]byte{}
	for _, v := range valid {
		code, b, err := get(srv.Client(), v, "")
		if err != nil || code != 200 {
			t.Fatalf("%s: %d %v %s", v, code, err, b)
		}
		want[v] = b
	}
	runtime.GC()
	bs := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(bs)
	base := bs[0].Value.Uint64()
	stop := make(chan struct{})
	peakc := heapPeak(stop)
	const clients, rounds = 64, 12
	var wg sync.WaitGroup
	var okN, refusedN, busyN atomic.Int64
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for r := range rounds {
				switch k := (c + r) % 4; k {
				case 0, 1: // valid
					v := valid[(c*7+r)%len(valid)]
					code, b, err := get(client, v, "")
					if code == 503 {
						busyN.Add(1)
						continue
					}
					if err != nil || code != 200 || !bytes.Equal(b, want[v]) {
						t.Errorf("%s: %d %v, %d bytes differ from the sequential answer", v, code, err, len(b))
						return
					}
					okN.Add(1)
				case 2: // hostile parameters
					v := hostile[(c*5+r)%len(hostile)]
					code, _, err := get(client, v, "")
					if err != nil || (code != 400 && code != 404 && code != 503) {
						t.Errorf("%.80s: %d %v, want 400 or 404", v, code, err)
						return
					}
					refusedN.Add(1)
				case 3: // a foreign host
					code, _, err := get(client, valid[r%len(valid)], "rebind.attacker.example")
					if err != nil || code != 403 {
						t.Errorf("foreign host: %d %v, want 403", code, err)
						return
					}
					refusedN.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	peak := <-peakc
	t.Logf("%d valid answers, %d refused, %d busy; heap %d MB before, peak %d MB", okN.Load(), refusedN.Load(), busyN.Load(), base>>20, peak>>20)
	if okN.Load() == 0 {
		t.Error("no valid answer")
	}
	if grew := int64(peak) - int64(base); grew > 96<<20 {
		t.Errorf("the heap grew by %d MB under load", grew>>20)
	}
}

// recordStoreDir is recordStore, also returning the store's directory.
func recordStoreDir(t *testing.T) (*tracestore.Store, string) {
	t.Helper()
	s := recordStore(t)
	dir := s.Dir()
	return s, dir
}

// FuzzRequest sends arbitrary requests to the handler: none may panic or
// allocate more than the largest tile and a few rows.
func FuzzRequest(f *testing.F) {
	s := recordStore(f)
	h := NewHandler(s, Options{Hosts: []string{"my.box"}})
	for _, seed := range []string{
		"/api/tile?t0=0&t1=1000000&px=100&lo=0&hi=3",
		"/api/tile?t0=-9223372036854775808&t1=9223372036854775807&px=8192&lanes=0,1,2",
		"/api/func?name=runtime.gopark&t0=0&t1=100000000&px=30",
		"/api/active?t0=0&t1=1000&from=0&n=10",
		"/api/active?t0=0&t1=1000000&from=3&n=1024&all=1",
		"/api/lanes?from=0&n=1024",
		"/api/lanes?from=9223372036854775807&n=9223372036854775807",
		"/api/pixel?lane=1&t0=5&t1=100000",
		"/api/span?lane=2&i=3",
		"/api/meta",
		"/",
	} {
		f.Add(seed, "127.0.0.1:80")
	}
	f.Add("/api/tile?t0=0&t1=1&px=8192&lanes=0,0", "my.box")
	limit := uint64(8*MaxCells) + 4<<20
	f.Fuzz(func(t *testing.T, target, host string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Host != "" || !strings.HasPrefix(target, "/") {
			return
		}
		r, err := http.NewRequest("GET", target, nil)
		if err != nil {
			return
		}
		r.Host = host
		w := httptest.NewRecorder()
		if got := allocs.Bytes(func() { h.ServeHTTP(w, r) }); got > limit+uint64(64*len(target)) {
			t.Fatalf("%q: allocated %d bytes", target, got)
		}
		switch w.Code {
		case 200, 400, 403, 404, 405, 503:
		case 301, 307, 308: // http.ServeMux cleaning a path: "/." to "/"
			if loc := w.Header().Get("Location"); !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
				t.Fatalf("%q: redirect to %q, off this server", target, loc)
			}
		default:
			t.Fatalf("%q (Host %q): %d %s", target, host, w.Code, w.Body.Bytes())
		}
	})
}

// TestLabelRequests checks /api/label's answers to bad and good requests:
// 404 without a label index, 400 for a malformed label or range, and a
// bounded answer for a label the index lacks or has.
func TestLabelRequests(t *testing.T) {
	data, h := labelstest.Workload(t, 300*time.Millisecond)
	var ib bytes.Buffer
	if _, err := labels.Build(bytes.NewReader(data), h, 0, &ib); err != nil {
		t.Fatal(err)
	}
	x, err := labels.Read(ib.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s := recordStore(t)
	if w := serve(Handler(s), "/api/label?label=query%3Dq1&t0=0&t1=10&px=10"); w.Code != 404 {
		t.Errorf("no label index: %d", w.Code)
	}
	hd := NewHandler(s, Options{Labels: x})
	for _, c := range []struct {
		target string
		code   int
	}{
		{"/api/label?label=query&t0=0&t1=10&px=10", 400},
		{"/api/label?label=%3Dq1&t0=0&t1=10&px=10", 400},
		{"/api/label?label=query%3Dq1&t0=10&t1=10&px=10", 400},
		{"/api/label?label=query%3Dq1&t0=0&t1=10&px=8193", 400},
		{"/api/label?label=query%3Dq1&t0=0&px=10", 400},
		{"/api/label?label=query%3Dnone&t0=0&t1=10&px=10", 200},
		{"/api/label?label=query%3Dq1&t0=-9223372036854775808&t1=9223372036854775807&px=8192", 200},
	} {
		w := serve(hd, c.target)
		if w.Code != c.code {
			t.Errorf("%s: %d, want %d: %s", c.target, w.Code, c.code, w.Body.Bytes())
		}
		if c.code != 200 {
			continue
		}
		var lc LabelCounts
		if err := json.Unmarshal(w.Body.Bytes(), &lc); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range lc.Counts {
			n += int(c)
		}
		if n != lc.Samples || len(lc.Funcs) > MaxLabelFuncs {
			t.Errorf("%s: %d samples, %d in the columns, %d functions", c.target, lc.Samples, n, len(lc.Funcs))
		}
	}
}

// TestEmptyOrReversedRanges checks that every request with a time range
// [t0, t1) answers an empty or reversed one with a 400 that says so:
// /api/pixel answered 404 "no span", and /api/func and /api/label a 400
// that did not say what was wrong ("bad label query: <nil>").
func TestEmptyOrReversedRanges(t *testing.T) {
	s := recordStore(t)
	// An index without labels: /api/label checks its range all the same.
	data, err := os.ReadFile(filepath.Join("..", "testdata", "go1.21-small.trace"))
	if err != nil {
		t.Fatal(err)
	}
	var ib bytes.Buffer
	if _, err := labels.Build(bytes.NewReader(data), trampoline.History{}, 0, &ib); err != nil {
		t.Fatal(err)
	}
	x, err := labels.Read(ib.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(s, Options{Labels: x})
	for _, c := range []struct{ api, rest string }{
		{"tile", "px=10&lo=0&hi=1"},
		{"active", "from=0&n=1"},
		{"pixel", "lane=0"},
		{"func", "name=runtime.gopark&px=10"},
		{"label", "label=query%3Dq1&px=10"},
	} {
		for _, r := range [][2]int64{{10, 10}, {10, 5}, {math.MaxInt64, math.MinInt}} {
			target := fmt.Sprintf("/api/%s?t0=%d&t1=%d&%s", c.api, r[0], r[1], c.rest)
			w := serve(h, target)
			want := fmt.Sprintf("t0=%d, t1=%d: the time range [t0, t1) is empty or reversed", r[0], r[1])
			if w.Code != 400 || !strings.Contains(w.Body.String(), want) {
				t.Errorf("%s: %d %q, want 400 and %q", target, w.Code, w.Body.String(), want)
			}
		}
	}
}

// TestCorruptLanes serves a store whose first group of lanes in lanes.tab
// is corrupt (a byte flipped, which its checksum in lanes.idx catches
// when the group is first read): /api/lanes says why each of its lanes
// shows nothing, /api/active leaves them out, their tiles are empty, and
// the other lanes answer as before.
func TestCorruptLanes(t *testing.T) {
	good, dir := recordStoreDir(t)
	nl := good.NumLanes()
	if nl <= tracestore.LaneGroup {
		t.Fatalf("%d lanes: one group", nl)
	}
	bad := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(bad, 0o777); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "lanes.tab" {
			b[3] ^= 0x01 // the first lane's ID: a group's size is unchanged
		}
		if err := os.WriteFile(filepath.Join(bad, e.Name()), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	s, err := tracestore.Open(bad)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	h, gh := Handler(s), Handler(good)
	var lp LanePage
	if w := serve(h, fmt.Sprintf("/api/lanes?from=0&n=%d", nl)); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &lp) != nil || len(lp.Lanes) != nl {
		t.Fatalf("lanes: %d %s", w.Code, w.Body.Bytes())
	}
	for l, li := range lp.Lanes {
		if corrupt := l < tracestore.LaneGroup; corrupt != (li.Error != "") || corrupt && (li.Spans != 0 || !strings.Contains(li.Error, "lanes.tab")) {
			t.Errorf("lane %d: %+v", l, li)
		}
	}
	d := s.Manifest().Duration
	var act, gact Active
	q := fmt.Sprintf("/api/active?t0=0&t1=%d&from=0&n=%d", d+1, MaxLanes)
	json.Unmarshal(serve(h, q).Body.Bytes(), &act)
	json.Unmarshal(serve(gh, q).Body.Bytes(), &gact)
	var want []int
	for _, l := range gact.Lanes {
		if l >= tracestore.LaneGroup {
			want = append(want, l)
		}
	}
	if !slices.Equal(act.Lanes, want) || len(want) == 0 {
		t.Errorf("active lanes %v, want %v", act.Lanes, want)
	}
	tile := fmt.Sprintf("/api/tile?t0=0&t1=%d&px=50&lo=0&hi=%d", d+1, nl)
	b, gb := serve(h, tile).Body.Bytes(), serve(gh, tile).Body.Bytes()
	if len(b) != len(gb) || len(b) != 8*50*nl {
		t.Fatalf("tiles of %d and %d bytes", len(b), len(gb))
	}
	for l := range nl {
		row, grow := b[8*50*l:8*50*(l+1)], gb[8*50*l:8*50*(l+1)]
		for p := range 50 {
			if l < tracestore.LaneGroup && row[8*p] != byte(tracestore.NoSpan) || l >= tracestore.LaneGroup && !bytes.Equal(row, grow) {
				t.Fatalf("lane %d: % x, before % x", l, row[:16], grow[:16])
			}
		}
	}
}
