package view

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
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

// chromium returns the path of a headless-capable Chromium, skipping the
// test if there is none (and failing it in CI, which installs one).
func chromium(t *testing.T) string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium; CI installs Debian's chromium package")
	}
	t.Skip("no chromium (apt-get install chromium)")
	return ""
}

// browser starts headless Chromium (bin) with a window of width × height
// pixels, and returns its context, which ends after two minutes or with
// the test.
func browser(t *testing.T, bin string, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancel(); cancelCtx(); cancelAlloc() })
	return ctx
}

// TestChromium loads the viewer in headless Chromium (driven through the
// DevTools protocol), zooms it with real mouse-wheel input, pans it with a
// real drag, opens it at a fragment, and after each step takes a
// screenshot and checks what it drew: every pixel column of every lane on
// screen is colored exactly where the store has a span in the range the
// page reports.
func TestChromium(t *testing.T) {
	bin := chromium(t)
	s := recordStore(t)
	srv := httptest.NewServer(Handler(s))
	defer srv.Close()
	const width, height = 1000, 500
	ctx := browser(t, bin, width, height)

	// settled waits until the page has drawn a frame after frame number
	// prev and owes none, and returns its data attributes.
	settled := func(prev int) map[string]string {
		t.Helper()
		for {
			ds, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.assign({}, document.body.dataset)`))
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := strconv.Atoi(ds["frames"]); n > prev && ds["idle"] == "1" {
				if ds["status"] != "ok" {
					t.Fatalf("page status %q", ds["status"])
				}
				return ds
			}
			if strings.HasPrefix(ds["status"], "error") {
				t.Fatalf("page status %q", ds["status"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	frames := func(ds map[string]string) int { n, _ := strconv.Atoi(ds["frames"]); return n }
	rangeOf := func(ds map[string]string) (int64, int64) {
		t0, err0 := strconv.ParseInt(ds["t0"], 10, 64)
		t1, err1 := strconv.ParseInt(ds["t1"], 10, 64)
		if err0 != nil || err1 != nil || t1 <= t0 {
			t.Fatalf("page reports range %q, %q", ds["t0"], ds["t1"])
		}
		return t0, t1
	}
	// shoot takes a screenshot and checks it against the store, lane by
	// lane as the page reports them, and checks that those lanes are the
	// ones the page should show: from the top-th of all lanes, or of those
	// with a span in view.
	shoot := func(name string, top int, active bool, ds map[string]string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(buf))
		if err != nil {
			t.Fatal(err)
		}
		if dir := os.Getenv("VIEW_SCREENSHOTS"); dir != "" {
			os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o666)
		}
		t0, t1 := rangeOf(ds)
		var lanes []int
		for _, f := range strings.Split(ds["lanes"], ",") {
			l, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("page reports lanes %q", ds["lanes"])
			}
			lanes = append(lanes, l)
		}
		var want []int
		for l := range s.NumLanes() {
			if !active || s.Query(l, t0, t1).Count > 0 {
				want = append(want, l)
			}
		}
		rows := (height - barH - axisH - funcH) / laneH
		want = want[min(top, len(want)):min(top+rows, len(want))]
		if !slices.Equal(lanes, want) {
			t.Errorf("%s: the page shows lanes %v, want %v", name, lanes, want)
		}
		t.Logf("%s: %s frames, last %s ms, [%d, %d), %d lanes, %s cells", name, ds["frames"], ds["lastMs"], t0, t1, len(lanes), ds["cells"])
		checkPixels(t, s, img, t0, t1, lanes, ds)
	}
	d := s.Manifest().Duration

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	ds := settled(0)
	if t0, t1 := rangeOf(ds); t0 != 0 || t1 != d+1 {
		t.Errorf("the page opened at [%d, %d), want the whole trace [0, %d)", t0, t1, d+1)
	}
	if ds["snap"] == "0" {
		t.Errorf("the whole trace's frame did not snap its columns to coarse levels")
	}
	shoot("whole", 0, true, ds)

	// Scroll the lane list down with the wheel (shift held), past the
	// first page of /api/active the page fetched (64 lanes), and back.
	x, y := float64(gutter+(width-gutter)/2), float64(barH+axisH+funcH+laneH)
	scroll := func(steps int, dy float64) {
		t.Helper()
		for range steps {
			if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, x, y, func(p *input.DispatchMouseEventParams) {
				p.DeltaX, p.DeltaY, p.Modifiers = 0.01, dy, 8 // shift
			})); err != nil {
				t.Fatal(err)
			}
		}
	}
	active := 0
	for l := range s.NumLanes() {
		if s.Query(l, 0, d+1).Count > 0 {
			active++
		}
	}
	scroll(20, 100)
	ds = settled(frames(ds))
	top, _ := strconv.Atoi(ds["top"])
	if want := min(80, active-1); top != want {
		t.Errorf("scrolled to lane %d of the list, want %d (of %d lanes with spans)", top, want, active)
	}
	t.Logf("scrolled to the %d-th of %d lanes with spans", top, active)
	shoot("scrolled", top, true, ds)
	scroll(30, -100)
	ds = settled(frames(ds))
	if top, _ := strconv.Atoi(ds["top"]); top != 0 {
		t.Errorf("scrolled back to lane %d of the list, want 0", top)
	}

	// Zoom in with the wheel, around the middle of the timeline.
	wheelUp := func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 0.01, -100 } // a zero deltaX is left out, and Chrome wants one
	for range 10 {
		if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, x, y, wheelUp)); err != nil {
			t.Fatal(err)
		}
	}
	ds = settled(frames(ds))
	z0, z1 := rangeOf(ds)
	if (z1-z0)*3 > d {
		t.Errorf("10 wheel steps in left [%d, %d) of %d ns", z0, z1, d)
	}
	shoot("zoomed", 0, true, ds)

	// Pan right by dragging left by 200 pixels.
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x-100, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x-200, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x-200, y, chromedp.ButtonLeft)); err != nil {
		t.Fatal(err)
	}
	ds = settled(frames(ds))
	p0, p1 := rangeOf(ds)
	if w := (p1 - p0) - (z1 - z0); (w > 1 || w < -1) && p1 != d+1 { // the page rounds its range to whole ns
		t.Errorf("panning changed the width from %d to %d ns", z1-z0, p1-p0)
	}
	if p0 <= z0 && z1 != d+1 {
		t.Errorf("dragging left moved the view from %d to %d, not later", z0, p0)
	}
	shoot("panned", 0, true, ds)

	// A fragment: a range and a first lane.
	a, b := d/3, d/3+d/20
	if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/#t0=%d&t1=%d&top=2&all=1", srv.URL, a, b))); err != nil {
		t.Fatal(err)
	}
	ds = settled(frames(ds))
	if f0, f1 := rangeOf(ds); f0 != a || f1 != b {
		t.Errorf("fragment: the page shows [%d, %d), want [%d, %d)", f0, f1, a, b)
	}
	shoot("fragment", 2, false, ds)
}

// Layout of the page, as index.html draws it.
const (
	barH   = 33 // the bar above the canvas
	gutter = 150
	axisH  = 18
	funcH  = 10
	laneH  = 14
)

func colored(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	r, g, b = r>>8, g>>8, b>>8
	return max(r, g, b)-min(r, g, b) > 30 // a hue, not the white or grey background
}

// checkPixels checks every column of the lanes on screen against
// QueryColumns over the columns the page drew: those of [t0, t1) snapped
// as the server says it snapped them (ds["snap"]), which must be as the
// store snaps such a frame.
func checkPixels(t *testing.T, s *tracestore.Store, img image.Image, t0, t1 int64, lanes []int, ds map[string]string) {
	t.Helper()
	px := img.Bounds().Dx() - gutter
	snap, err := strconv.ParseUint(ds["snap"], 10, 8)
	if want := s.Snap(t0, t1, px); err != nil || uint(snap) != want {
		t.Errorf("the page reports columns snapped to 2^%q, the store snaps [%d, %d) in %d columns to 2^%d", ds["snap"], t0, t1, px, want)
	}
	bounds := tracestore.SnapColumns(t0, t1, px, uint(snap), nil)
	cells := make([]tracestore.Cell, px)
	checked, mismatched, spans := 0, 0, 0
	for li, lane := range lanes {
		s.QueryColumns(lane, bounds, cells)
		y := barH + axisH + funcH + li*laneH + laneH/2
		for x, c := range cells {
			want := c.Kind != tracestore.NoSpan
			if want {
				spans++
			}
			if colored(img, gutter+x, y) != want {
				mismatched++
				if mismatched <= 5 {
					t.Errorf("lane %d column %d (pixel %d,%d): drawn %v, the store has %+v", lane, x, gutter+x, y, !want, c)
				}
			}
			checked++
		}
	}
	if spans == 0 {
		t.Error("the store has no span on screen to check")
	}
	how := "columns not snapped"
	if snap > 0 {
		how = fmt.Sprintf("columns snapped to 2^%d ns", snap)
	}
	t.Logf("%d pixel columns checked (%d with spans), %d mismatched; %s", checked, spans, mismatched, how)
}

func laneRange(lo, hi int) string {
	var f []string
	for l := lo; l < hi; l++ {
		f = append(f, strconv.Itoa(l))
	}
	return strings.Join(f, ",")
}

// TestChromiumLabels opens the viewer on a store of the labelled workload
// (trampoline/resolve's, for 2 s of CPU; with the long tests on, 10 s
// beside 64 noise goroutines, millions of events recorded in under a
// minute) with its label index, zoomed all the way out with the label
// query=q3 in the fragment.
// It checks that the page shows exactly the lanes of the goroutines that
// q3's samples ran on (of those with spans in view), that its pixels agree
// with QueryRow, and that the label's strip marks exactly the columns that
// hold q3's samples.
func TestChromiumLabels(t *testing.T) {
	bin := chromium(t)
	d, noise := 2*time.Second, 0
	if testenv.Full() {
		// As large a trace as CI records in under a minute: the
		// labelled goroutines among 64 noisy ones, millions of events.
		d, noise = 10*time.Second, 64
	}
	data, h := labelstest.WorkloadWithNoise(t, d, noise)
	dir := filepath.Join(t.TempDir(), "store")
	m, err := tracestore.Build(bytes.NewReader(data), dir, tracestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ibuf bytes.Buffer
	if _, err := labels.Build(bytes.NewReader(data), h, m.BaseTime, &ibuf); err != nil {
		t.Fatal(err)
	}
	x, err := labels.Read(ibuf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s, err := tracestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(NewHandler(s, Options{Labels: x}))
	defer srv.Close()
	const width, height = 1000, 500
	ctx := browser(t, bin, width, height)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), chromedp.Navigate(srv.URL+"/#label=query%3Dq3")); err != nil {
		t.Fatal(err)
	}
	var ds map[string]string
	for {
		ds, err = chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.assign({}, document.body.dataset)`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(ds["status"], "error") {
			t.Fatalf("page status %q", ds["status"])
		}
		if n, _ := strconv.Atoi(ds["frames"]); n > 0 && ds["idle"] == "1" && ds["labelGoroutines"] != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t0, err0 := strconv.ParseInt(ds["t0"], 10, 64)
	t1, err1 := strconv.ParseInt(ds["t1"], 10, 64)
	if err0 != nil || err1 != nil || t0 != 0 || t1 != m.Duration+1 {
		t.Fatalf("the page shows [%q, %q), want the whole trace [0, %d)", ds["t0"], ds["t1"], m.Duration+1)
	}
	q3 := labels.Label{Key: "query", Value: "q3"}
	samples := x.Samples(q3, t0, t1)
	if got := ds["labelSamples"]; got != strconv.Itoa(len(samples)) || len(samples) == 0 {
		t.Fatalf("the page reports %s samples of q3, the index has %d", got, len(samples))
	}
	gs := map[int64]bool{}
	for _, sm := range samples {
		gs[sm.Goroutine] = true
	}
	var want []int
	for l := range s.NumLanes() {
		ln := s.Lane(l)
		if ln.Track == tracestore.TrackGoroutine && gs[ln.ID] && s.Query(l, t0, t1).Count > 0 {
			want = append(want, l)
		}
	}
	rows := (height - barH - axisH - funcH) / laneH
	want = want[:min(rows, len(want))]
	var lanes []int
	for _, f := range strings.Split(ds["lanes"], ",") {
		l, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("page reports lanes %q", ds["lanes"])
		}
		lanes = append(lanes, l)
	}
	if !slices.Equal(lanes, want) || len(want) == 0 {
		t.Errorf("the page shows lanes %v, want q3's goroutines' %v", lanes, want)
	}
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	checkPixels(t, s, img, t0, t1, lanes, ds)
	// The label's strip: blue where a column holds a q3 sample.
	px := int64(img.Bounds().Dx() - gutter)
	counts := make([]int, px)
	for _, sm := range samples {
		counts[tracestore.PixelOf(t0, t1, px, sm.Time)]++
	}
	y := barH + axisH + funcH*3/4
	marked, bad := 0, 0
	for c := range px {
		r, g, b, _ := img.At(gutter+int(c), y).RGBA()
		blue := b>>8 > 150 && r>>8 < 150 && g>>8 < 150
		if blue != (counts[c] > 0) {
			bad++
			if bad <= 5 {
				t.Errorf("column %d: marked %v, %d samples of q3", c, blue, counts[c])
			}
		}
		if blue {
			marked++
		}
	}
	t.Logf("%d events, %d lanes shown of q3's %d goroutines, %d samples of q3 in %d marked columns", m.Events, len(lanes), len(gs), len(samples), marked)
}
