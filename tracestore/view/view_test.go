package view

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pctab/pctab/tracestore"
)

// recordStore traces a small workload of goroutines that compute, block
// and mark regions, and builds its store.
func recordStore(t testing.TB) *tracestore.Store {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for round := range 10 {
		var wg sync.WaitGroup
		ch := make(chan int)
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				trace.WithRegion(ctx, "work", func() {
					for t := time.Now(); time.Since(t) < time.Duration(100+50*i)*time.Microsecond; {
					}
				})
				if i%2 == 0 {
					<-ch
				} else {
					ch <- round
				}
			}()
		}
		wg.Wait()
		time.Sleep(200 * time.Microsecond)
	}
	// Two goroutines that hand a token back and forth: lanes of
	// thousands of spans, which get coarse levels, so that a zoomed-out
	// frame snaps its columns.
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	for i := range 2000 {
		ping <- i
		<-pong
		if i%200 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	close(ping)
	trace.Stop()
	dir := filepath.Join(t.TempDir(), "store")
	if _, err := tracestore.Build(&buf, dir, tracestore.Options{Source: "view test"}); err != nil {
		t.Fatal(err)
	}
	s, err := tracestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func get(t *testing.T, url string) ([]byte, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.StatusCode
}

// TestAPI checks the API's answers against the store's own queries.
func TestAPI(t *testing.T) {
	s := recordStore(t)
	srv := httptest.NewServer(Handler(s))
	defer srv.Close()
	var meta Meta
	b, code := get(t, srv.URL+"/api/meta")
	if code != 200 || json.Unmarshal(b, &meta) != nil || meta.SchemaVersion != SchemaVersion || meta.Lanes != s.NumLanes() {
		t.Fatalf("meta: %d %s", code, b)
	}
	d := s.Manifest().Duration
	px, lo, hi := 300, 0, min(10, s.NumLanes())
	b, code = get(t, fmt.Sprintf("%s/api/tile?t0=0&t1=%d&px=%d&lo=%d&hi=%d", srv.URL, d+1, px, lo, hi))
	if code != 200 || len(b) != 8*px*(hi-lo) {
		t.Fatalf("tile: %d, %d bytes", code, len(b))
	}
	cells := make([]tracestore.Cell, px)
	bounds := tracestore.SnapColumns(0, d+1, px, s.Snap(0, d+1, px), nil)
	for l := lo; l < hi; l++ {
		s.QueryColumns(l, bounds, cells)
		for i, c := range cells {
			e := b[8*(px*(l-lo)+i):]
			if e[0] != byte(c.Kind) || e[1] != c.Busy || binary.LittleEndian.Uint16(e[2:]) != c.Count || binary.LittleEndian.Uint32(e[4:]) != c.Name {
				t.Fatalf("tile lane %d pixel %d: % x, QueryRow %+v", l, i, e[:8], c)
			}
		}
	}
	// The same lanes by list, and the active lanes against Query.
	b2, code := get(t, fmt.Sprintf("%s/api/tile?t0=0&t1=%d&px=%d&lanes=%s", srv.URL, d+1, px, laneRange(lo, hi)))
	if code != 200 || !bytes.Equal(b2, b) {
		t.Errorf("tile by lanes=: %d, %d bytes, differs from lo/hi", code, len(b2))
	}
	// The lane list, in pages of every size up to the whole.
	nl := s.NumLanes()
	for _, n := range []int{1, 7, MaxLanes} {
		for from := 0; from <= nl; from += n {
			var lp LanePage
			b2, code = get(t, fmt.Sprintf("%s/api/lanes?from=%d&n=%d", srv.URL, from, n))
			if code != 200 || json.Unmarshal(b2, &lp) != nil || lp.SchemaVersion != SchemaVersion || lp.From != from || len(lp.Lanes) != min(n, nl-from) {
				t.Fatalf("lanes from %d, n %d: %d %s", from, n, code, b2)
			}
			for i, li := range lp.Lanes {
				ln := s.Lane(from + i)
				if want := (LaneInfo{Track: ln.Track.String(), ID: ln.ID, Layer: ln.Layer.String(), Depth: ln.Depth, Spans: ln.Spans}); li != want {
					t.Fatalf("lane %d: %+v, the store has %+v", from+i, li, want)
				}
			}
		}
	}
	// The active lanes against Query, in pages of every size, each going
	// on from the last one's next.
	var wantActive []int
	for l := range nl {
		if s.Query(l, d/3, d/2).Count > 0 {
			wantActive = append(wantActive, l)
		}
	}
	for _, n := range []int{1, 3, MaxLanes} {
		var got []int
		for from, pages := 0, 0; from < nl; pages++ {
			var act Active
			b2, code = get(t, fmt.Sprintf("%s/api/active?t0=%d&t1=%d&from=%d&n=%d", srv.URL, d/3, d/2, from, n))
			if code != 200 || json.Unmarshal(b2, &act) != nil || len(act.Lanes) > n || act.Next <= from || act.Next > nl || pages > nl {
				t.Fatalf("active from %d, n %d: %d %s", from, n, code, b2)
			}
			for _, l := range act.Lanes {
				if l < from || l >= act.Next {
					t.Fatalf("active from %d, n %d: lane %d, next %d", from, n, l, act.Next)
				}
			}
			got = append(got, act.Lanes...)
			from = act.Next
		}
		if !slices.Equal(got, wantActive) || len(got) == 0 {
			t.Errorf("active lanes in pages of %d: %v, want %v", n, got, wantActive)
		}
	}
	for _, bad := range []string{"t0=0&t1=10&px=0&lo=0&hi=1", "t0=0&t1=10&px=1&lanes=0,x", "t0=0&t1=10&px=1&lanes=999999", "t0=0&t1=10&px=10&lo=0&hi=100000", "t0=10&t1=0&px=10&lo=0&hi=1", "t0=x"} {
		if _, code := get(t, srv.URL+"/api/tile?"+bad); code != 400 {
			t.Errorf("tile?%s: %d, want 400", bad, code)
		}
	}
	a := s.Query(0, 0, d+1)
	var sp SpanInfo
	b, code = get(t, fmt.Sprintf("%s/api/pixel?lane=0&t0=0&t1=%d", srv.URL, d+1))
	if code != 200 || json.Unmarshal(b, &sp) != nil || sp.Index != a.Longest || sp.SpansUnder != a.Count {
		t.Fatalf("pixel: %d %s; Query %+v", code, b, a)
	}
	// A function some event's stack passes through.
	fn := ""
	s.Events(0, d+1, func(e *tracestore.Event) bool {
		if fr, _ := s.Stack(e.Stack); len(fr) > 0 {
			fn = fr[0].Func
		}
		return fn == ""
	})
	var fc FuncCounts
	b, code = get(t, fmt.Sprintf("%s/api/func?name=%s&t0=0&t1=%d&px=7", srv.URL, url.QueryEscape(fn), d+1))
	if code != 200 || json.Unmarshal(b, &fc) != nil || len(fc.Counts) != 7 {
		t.Fatalf("func: %d %s", code, b)
	}
	var n uint32
	for _, c := range fc.Counts {
		n += c
	}
	if n == 0 || uint64(n) != fc.Stats.Matched {
		t.Errorf("func: %d events in the columns, %d matched", n, fc.Stats.Matched)
	}
}

func laneRange(lo, hi int) string {
	var f []string
	for l := lo; l < hi; l++ {
		f = append(f, strconv.Itoa(l))
	}
	return strings.Join(f, ",")
}
