package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
)

// TestVsGoToolTrace measures, for each trace in $PCTAB_VS_TRACES
// (comma-separated paths), the time until the first timeline view answers
// and the peak RSS of: go tool trace (its trace command, built from the
// Go in use, started on the trace: until /jsontrace has answered the
// first range of the proc view that its main page links), pctab-trace
// build followed by pctab-trace serve (until the viewer's first frame:
// /, /api/meta, /api/active and a /api/tile of 2,000 columns of the first
// 64 lanes with spans, the whole trace), and pctab-trace serve on the
// store built (the same first frame). Times are wall clock from the start
// of the process and, beside them, the process's CPU time (user and
// system) by then; RSS is the kernel's high-water mark (VmHWM, polled
// every 100 ms for a server and every 20 ms for the build). It also gives the store's bytes against the
// trace's. It prints a markdown table, and writes it to $PCTAB_VS_OUT if
// that is set. It needs the long tests on and the traces (it records
// none), and takes minutes per large trace.
func TestVsGoToolTrace(t *testing.T) {
	testenv.SkipUnlessLong(t, "runs go tool trace and pctab-trace on large traces")
	list := os.Getenv("PCTAB_VS_TRACES")
	if list == "" {
		t.Skip("PCTAB_VS_TRACES names no traces")
	}
	tmp := t.TempDir()
	goTrace := filepath.Join(tmp, "trace")
	pt := filepath.Join(tmp, "pctab-trace")
	for _, b := range [][]string{{"-o", goTrace, "cmd/trace"}, {"-o", pt, "."}} {
		cmd := exec.Command(testbuild.GoBinary(), append([]string{"build"}, b...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", b, err, out)
		}
	}
	var rows []string
	for _, path := range strings.Split(list, ",") {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		store := filepath.Join(tmp, filepath.Base(path)+".store")
		// go tool trace, its address space capped at $PCTAB_VS_GOTRACE_MEM
		// bytes if set (it needs some 130 times the trace's bytes: a
		// large trace would take the shared machine's memory).
		gtBin, gtArgs := goTrace, []string{"-http=ADDR", path}
		if lim := os.Getenv("PCTAB_VS_GOTRACE_MEM"); lim != "" {
			gtBin, gtArgs = "prlimit", append([]string{"--as=" + lim, "--", goTrace}, gtArgs...)
		}
		gt := firstView(t, gtBin, gtArgs, []string{"BROWSER=true"}, goToolTraceView)
		// pctab-trace build, then serve.
		start := time.Now()
		cmd := exec.Command(pt, "build", path, store)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The build's peak RSS is its VmHWM, polled while it runs: the
		// rusage of wait4 (ru_maxrss) counts the high-water mark of the
		// address space the child started from, which Go's fork (a
		// vfork sharing the parent's memory) makes this test process's,
		// hundreds of MB once it has read go tool trace's JSON.
		pollDone, buildRSS := make(chan struct{}), int64(0)
		polled := make(chan int64)
		go func() {
			var peak int64
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, rss, ok := procStats(cmd.Process.Pid); ok {
					peak = max(peak, rss)
				}
				select {
				case <-pollDone:
					polled <- peak
					return
				case <-tick.C:
				}
			}
		}()
		werr := cmd.Wait()
		close(pollDone)
		buildRSS = <-polled
		if werr != nil {
			t.Fatalf("pctab-trace build %s: %v\n%s", path, werr, out.String())
		}
		buildWall := time.Since(start)
		buildCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		events := regexp.MustCompile(`: (\d+) events`).FindStringSubmatch(out.String())
		sv := firstView(t, pt, []string{"serve", "-addr", "ADDR", store}, nil, pctabView)
		if sv.err != nil {
			t.Fatalf("pctab-trace serve %s: %v", store, sv.err)
		}
		gtView := secs(gt.wall) + " / " + secs(gt.cpu)
		if gt.err != nil {
			t.Logf("go tool trace %s: %v", path, gt.err)
			gtView = "failed after " + gtView
		}
		var storeBytes int64
		filepath.Walk(store, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				storeBytes += fi.Size()
			}
			return nil
		})
		ev := "?"
		if events != nil {
			n, _ := strconv.ParseInt(events[1], 10, 64)
			ev = commas(n)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s / %s | %s | %s / %s | %s | %s / %s | %s | %s | %.2f |",
			filepath.Base(path), commas(st.Size()), ev,
			gtView, mb(gt.rss),
			secs(buildWall+sv.wall), secs(buildCPU+sv.cpu), mb(max(buildRSS, sv.rss)),
			secs(buildWall), secs(buildCPU), mb(buildRSS),
			secs(sv.wall), secs(sv.cpu), mb(sv.rss),
			commas(storeBytes), float64(storeBytes)/float64(max(1, st.Size()))))
		os.RemoveAll(store)
		t.Logf("%s: store %d bytes", path, storeBytes)
	}
	table := "| trace | bytes | events | go tool trace: first view, wall / CPU | peak RSS | pctab-trace build + serve: first frame, wall / CPU | peak RSS | of which build, wall / CPU | build max RSS | serve on the store: first frame, wall / CPU | peak RSS | store bytes | store ÷ trace |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + strings.Join(rows, "\n") + "\n"
	t.Log("\n" + table)
	if p := os.Getenv("PCTAB_VS_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type viewRun struct {
	wall, cpu  time.Duration
	rss        int64
	anon, file int64 // RssAnon and RssFile after the view
	err        error // the view did not load
}

// firstView starts bin with args (ADDR replaced by a free loopback
// address), runs view against its base URL until the first view has
// answered, and measures the process by then; then it stops the process.
func firstView(t *testing.T, bin string, args, env []string, view func(t *testing.T, base string) error) viewRun {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a := make([]string, len(args))
	for i, s := range args {
		a[i] = strings.ReplaceAll(s, "ADDR", addr)
	}
	cmd := exec.Command(bin, a...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	base := "http://" + addr
	// Wait for the port (a server that listens before it parses is
	// polled on its first page by view itself).
	exited := make(chan struct{})
	go func() {
		for {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)); err != nil || zombie(cmd.Process.Pid) {
				close(exited)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			return viewRun{wall: time.Since(start), err: fmt.Errorf("exited before it listened; stderr: %.300s", stderr.String())}
		default:
		}
		if time.Since(start) > 30*time.Minute {
			t.Fatalf("%s never listened", bin)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A process's CPU time and peak RSS are read while it lives: sample
	// them as the view loads, so that a process that fails (out of
	// memory) still reports what it reached.
	var r viewRun
	done := make(chan error, 1)
	go func() { done <- view(t, base) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			r.wall = time.Since(start)
			if cpu, rss, ok := procStats(cmd.Process.Pid); ok {
				r.cpu, r.rss = cpu, max(r.rss, rss)
			}
			r.anon, r.file = rssParts(cmd.Process.Pid)
			if err != nil {
				r.err = fmt.Errorf("%v; stderr: %.300s", err, stderr.String())
			}
			return r
		case <-tick.C:
			if cpu, rss, ok := procStats(cmd.Process.Pid); ok {
				r.cpu, r.rss = cpu, max(r.rss, rss)
			}
		}
	}
}

// procStats returns a process's CPU time (user and system) and its peak
// RSS (VmHWM) from /proc, and false if the process is gone.
func procStats(pid int) (time.Duration, int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	cpu := time.Duration(ut+stt) * time.Second / 100 // USER_HZ
	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	defer st.Close()
	var rss int64
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb << 10
		}
	}
	return cpu, rss, rss > 0
}

// rssParts returns a process's RssAnon and RssFile from /proc.
func rssParts(pid int) (anon, file int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch k {
		case "RssAnon":
			anon = kb << 10
		case "RssFile":
			file = kb << 10
		}
	}
	return anon, file
}

// zombie reports whether process pid has exited (and is not yet waited
// for).
func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	return len(f) == 0 || f[0] == "Z"
}

var client = &http.Client{Timeout: 60 * time.Minute}

func get(url string) ([]byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s, %v\n%.300s", url, resp.Status, err, b)
	}
	return b, nil
}

// goToolTraceView loads go tool trace's first timeline view: its main
// page, the first range of the proc view, and that range's JSON.
func goToolTraceView(t *testing.T, base string) error {
	page, err := get(base + "/")
	if err != nil {
		return err
	}
	// A trace small enough for one range has one link, without a range.
	m := regexp.MustCompile(`/trace\?view=proc(?:&(?:amp;)?start=(\d+)&(?:amp;)?end=(\d+))?"`).FindStringSubmatch(string(page))
	if m == nil {
		return fmt.Errorf("go tool trace's main page links no proc view:\n%.500s", page)
	}
	q := "view=proc"
	if m[1] != "" {
		q += "&start=" + m[1] + "&end=" + m[2]
	}
	if _, err := get(base + "/trace?" + q); err != nil {
		return err
	}
	_, err = get(base + "/jsontrace?" + q)
	return err
}

// pctabView loads the viewer's first frame, as its page does: the page,
// the meta, the first 64 lanes with spans in the whole trace (a page of
// /api/active) and their records (a page of /api/lanes), and a tile of
// 2,000 columns of them. A server of API schema 1 (a build before the
// lane list was paged, as PCTAB_SERVE_BIN may name) lists every lane in
// /api/meta and every active lane in /api/active, as its page asked.
func pctabView(t *testing.T, base string) error {
	if _, err := get(base + "/"); err != nil {
		return err
	}
	var meta struct {
		Duration int64           `json:"duration_ns"`
		Lanes    json.RawMessage `json:"lanes"`
	}
	b, err := get(base + "/api/meta")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return err
	}
	paged := !bytes.HasPrefix(meta.Lanes, []byte("["))
	var active struct {
		Lanes []int `json:"lanes"`
	}
	q := fmt.Sprintf("%s/api/active?t0=0&t1=%d", base, meta.Duration+1)
	if paged {
		q += "&from=0&n=64"
	}
	if b, err = get(q); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &active); err != nil {
		return err
	}
	lanes := active.Lanes[:min(64, len(active.Lanes))]
	var f []string
	for _, l := range lanes {
		f = append(f, strconv.Itoa(l))
	}
	if paged && len(lanes) > 0 {
		// The page fetches the records of the lanes on screen in pages
		// of 256 lanes.
		for p := lanes[0] / 256; p <= lanes[len(lanes)-1]/256; p++ {
			if _, err := get(fmt.Sprintf("%s/api/lanes?from=%d&n=256", base, p*256)); err != nil {
				return err
			}
		}
	}
	_, err = get(fmt.Sprintf("%s/api/tile?t0=0&t1=%d&px=2000&lanes=%s", base, meta.Duration+1, strings.Join(f, ",")))
	return err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func mb(b int64) string { return fmt.Sprintf("%d MB", (b+1<<19)>>20) }

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestServeStore measures pctab-trace serve on each existing store in
// $PCTAB_SERVE_STORES (comma-separated directories): the time from the
// start of the process until the viewer's first frame has answered (as
// TestVsGoToolTrace's pctabView loads it, the whole trace), the process's
// CPU time by then, and its peak RSS (VmHWM), with what of it was the
// heap and the stacks (RssAnon) and what the mapped store files
// (RssFile), read after the frame. Each store is served
// $PCTAB_SERVE_RUNS times (default 3), by the pctab-trace of this
// package or the binary $PCTAB_SERVE_BIN. It prints a markdown table, and
// writes it to $PCTAB_VS_OUT if that is set.
func TestServeStore(t *testing.T) {
	testenv.SkipUnlessLong(t, "serves large stores")
	list := os.Getenv("PCTAB_SERVE_STORES")
	if list == "" {
		t.Skip("PCTAB_SERVE_STORES names no stores")
	}
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("PCTAB_SERVE_RUNS")); err == nil && n > 0 {
		runs = n
	}
	pt := os.Getenv("PCTAB_SERVE_BIN") // another build to compare, or this one
	if pt == "" {
		pt = filepath.Join(t.TempDir(), "pctab-trace")
		if out, err := exec.Command(testbuild.GoBinary(), "build", "-o", pt, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	var rows []string
	for _, store := range strings.Split(list, ",") {
		var m struct {
			Events uint64 `json:"events"`
			Spans  int64  `json:"spans"`
			Lanes  int    `json:"lanes"`
		}
		b, err := os.ReadFile(filepath.Join(store, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for range runs {
			sv := firstView(t, pt, []string{"serve", "-addr", "ADDR", store}, nil, pctabView)
			if sv.err != nil {
				t.Fatalf("pctab-trace serve %s: %v", store, sv.err)
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", filepath.Base(store),
				commas(int64(m.Events)), commas(m.Spans), commas(int64(m.Lanes)),
				secs(sv.wall), secs(sv.cpu), mb(sv.rss), mb(sv.anon), mb(sv.file)))
		}
	}
	table := "| store | events | spans | lanes | first frame, wall | CPU | peak RSS | RssAnon | RssFile |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n" + strings.Join(rows, "\n") + "\n"
	t.Log("\n" + table)
	if p := os.Getenv("PCTAB_VS_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
