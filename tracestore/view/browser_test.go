//go:build !plan9 && !js && !wasip1

// The viewer's tests in a headless Chromium, through chromedp, which does
// not build on plan9, js and wasip1.

package view

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
)

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
