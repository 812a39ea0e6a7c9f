package tracestore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pctab/pctab/diskmap"
	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/internal/pagecache"
	xtrace "golang.org/x/exp/trace"
)

// benchTrace returns the trace named by $TRACESTORE_BENCH_TRACE, or an
// in-process trace.
func benchTrace(b *testing.B) []byte {
	if p := os.Getenv("TRACESTORE_BENCH_TRACE"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	return recordTrace(b)
}

// benchStore opens the store in $TRACESTORE_BENCH_STORE, or builds one of
// benchTrace's trace.
func benchStore(b *testing.B) *Store {
	if dir := os.Getenv("TRACESTORE_BENCH_STORE"); dir != "" {
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	data := benchTrace(b)
	dir := filepath.Join(b.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkFrame computes one viewer frame: 2,000 pixels of each of the 64
// lanes with the most spans, over the whole trace, a half, a quarter, a fifth, a tenth and a
// hundredth of it, as the viewer's server does: the columns snapped as
// Store.Snap says (zoomed out, to the coarse levels), one QueryColumns
// per lane; on one goroutine, and on GOMAXPROCS.
func BenchmarkFrame(b *testing.B) {
	s := benchStore(b)
	lanes := make([]int, s.NumLanes())
	spans := make([]int64, len(lanes))
	for i := range lanes {
		lanes[i], spans[i] = i, s.Lane(i).Spans
	}
	sort.SliceStable(lanes, func(i, j int) bool { return spans[lanes[i]] > spans[lanes[j]] })
	lanes = lanes[:min(64, len(lanes))]
	d := s.Manifest().Duration
	workers := runtime.GOMAXPROCS(0)
	for _, v := range []struct {
		name   string
		t0, t1 int64
	}{{"whole", 0, d + 1}, {"half", d / 4, d/4 + d/2}, {"quarter", d / 2, d/2 + d/4}, {"fifth", d / 2, d/2 + d/5}, {"tenth", d / 2, d/2 + d/10}, {"hundredth", d / 2, d/2 + d/100}} {
		shift := s.Snap(v.t0, v.t1, 2000)
		bounds := SnapColumns(v.t0, v.t1, 2000, shift, nil)
		for _, par := range []int{1, workers} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", v.name, par), func(b *testing.B) {
				if par == 1 {
					// On the benchmark's own thread, so that its CPU
					// time (cpu-ms/frame) leaves out other processes'
					// on this shared machine.
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cells := make([]Cell, 2000)
					cpu0, ok := cputime.Thread()
					b.ResetTimer()
					for range b.N {
						bounds = SnapColumns(v.t0, v.t1, 2000, s.Snap(v.t0, v.t1, 2000), bounds[:0])
						for _, l := range lanes {
							s.QueryColumns(l, bounds, cells)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
					if cpu1, ok1 := cputime.Thread(); ok && ok1 {
						b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N)/1e6, "cpu-ms/frame")
					}
					return
				}
				for range b.N {
					var wg sync.WaitGroup
					next := make(chan int, len(lanes))
					for _, l := range lanes {
						next <- l
					}
					close(next)
					for range par {
						wg.Add(1)
						go func() {
							defer wg.Done()
							cells := make([]Cell, 2000)
							for l := range next {
								s.QueryColumns(l, bounds, cells)
							}
						}()
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
			})
		}
	}
}

// BenchmarkOpen opens the store in $TRACESTORE_BENCH_STORE (or one built
// of benchTrace's trace) and closes it: Open reads the metadata only, so
// its time and the bytes it allocates grow with the pages, strings and
// frames, neither with the lanes nor with the spans.
func BenchmarkOpen(b *testing.B) {
	dir := os.Getenv("TRACESTORE_BENCH_STORE")
	if dir == "" {
		dir = benchStore(b).Dir()
	}
	b.ReportAllocs()
	for range b.N {
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkQuery finds the events whose stack passes through a function,
// over the whole trace: through the store's function index (reading only
// the pages it names and re-checking their events), and by re-reading the
// whole trace with x/exp/trace, as a tool without the store must. The
// function is $TRACESTORE_BENCH_FUNC, or runtime.gcBgMarkWorker.
func BenchmarkQuery(b *testing.B) {
	data := benchTrace(b)
	fn := os.Getenv("TRACESTORE_BENCH_FUNC")
	if fn == "" {
		fn = "runtime.gcBgMarkWorker"
	}
	dir := filepath.Join(b.TempDir(), "store")
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := s.Manifest().Duration
	var want int
	b.Run("store", func(b *testing.B) {
		var st QueryStats
		for range b.N {
			n := 0
			st, err = s.EventsThrough(fn, 0, d+1, func(*Event) bool { n++; return true })
			if err != nil {
				b.Fatal(err)
			}
			want = n
		}
		b.ReportMetric(float64(st.PagesRead), "pages-read")
		b.ReportMetric(float64(s.Manifest().Pages), "pages")
		b.ReportMetric(float64(want), "events")
	})
	b.Run("x-exp-trace", func(b *testing.B) {
		for range b.N {
			r, err := xtrace.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				e, err := r.ReadEvent()
				if err != nil {
					break
				}
				st := e.Stack()
				if e.Kind() == xtrace.EventStateTransition && st == xtrace.NoStack {
					st = e.StateTransition().Stack
				}
				for f := range st.Frames() {
					if f.Func == fn {
						n++
						break
					}
				}
			}
			if n != want {
				b.Fatalf("x/exp/trace finds %d events, the store %d", n, want)
			}
		}
		b.ReportMetric(float64(want), "events")
	})
}

// BenchmarkFuncIndex looks up every function of the store's frames in its
// function index (func.idx, a checked diskmap): mapped and in the page
// cache, and cold, with the file's pages dropped from the page cache before
// each open (POSIX_FADV_DONTNEED; it has no effect on tmpfs, so set
// $TRACESTORE_BENCH_DIR to a directory on disk).
func BenchmarkFuncIndex(b *testing.B) {
	data := benchTrace(b)
	root := os.Getenv("TRACESTORE_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir, err := os.MkdirTemp(root, "store-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dir = filepath.Join(dir, "s")
	if _, err := Build(bytes.NewReader(data), dir, Options{}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	var names [][]byte
	seen := map[string]bool{}
	for _, f := range s.frames {
		if !seen[f.Func] {
			seen[f.Func] = true
			names = append(names, []byte(f.Func))
		}
	}
	s.Close()
	path := filepath.Join(dir, fileFuncIdx)
	st, _ := os.Stat(path)
	b.Run("mapped", func(b *testing.B) {
		m, err := diskmap.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		var dst []uint32
		for i := range b.N {
			var all bool
			dst, all = m.AppendLookup(dst[:0], names[i%len(names)])
			if all || len(dst) == 0 {
				b.Fatalf("%s: %v, every page %v", names[i%len(names)], dst, all)
			}
		}
		b.ReportMetric(float64(st.Size()), "index-bytes")
		b.ReportMetric(float64(len(names)), "keys")
	})
	b.Run("cold", func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			if err := pagecache.Drop(path); err != nil {
				b.Skip(err)
			}
			b.StartTimer()
			m, err := diskmap.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if pages, all := m.Lookup(names[(i*7919)%len(names)]); all || len(pages) == 0 {
				b.Fatal("lookup failed")
			}
			m.Close()
		}
	})
}

// BenchmarkReadTrace reads the trace named by $TRACESTORE_BENCH_TRACE
// (streamed from its file) or an in-process trace with x/exp/trace alone,
// keeping nothing: what the trace reader itself costs a build. It reports
// the trace's events, its generations, the most events in one, the most
// heap in use (sampled at every generation's start, where the reader has
// read the whole generation it returns) and the process's peak RSS: the
// reader holds one generation at a time. Command: TRACESTORE_BENCH_TRACE=
// TRACE go test -run '^$' -bench '^BenchmarkReadTrace$' -benchtime 1x.
func BenchmarkReadTrace(b *testing.B) {
	open := func() io.Reader {
		if p := os.Getenv("TRACESTORE_BENCH_TRACE"); p != "" {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { f.Close() })
			return bufio.NewReaderSize(f, 64<<10)
		}
		return bytes.NewReader(recordTrace(b))
	}
	var events, gens, inGen, maxGen uint64
	var maxHeap uint64
	var ms runtime.MemStats
	for b.Loop() {
		events, gens, inGen, maxGen, maxHeap = 0, 0, 0, 0, 0
		r, err := xtrace.NewReader(open())
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := r.ReadEvent()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events++
			if ev.Kind() == xtrace.EventSync {
				gens++
				maxGen, inGen = max(maxGen, inGen), 0
				runtime.ReadMemStats(&ms)
				maxHeap = max(maxHeap, ms.HeapInuse)
			}
			inGen++
		}
		maxGen = max(maxGen, inGen)
	}
	b.ReportMetric(float64(events), "events")
	b.ReportMetric(float64(gens), "generations")
	b.ReportMetric(float64(maxGen), "max-gen-events")
	b.ReportMetric(float64(maxHeap)/(1<<20), "max-heap-MiB")
	// The process's peak RSS, where the kernel reports it: the reader's,
	// run alone with -benchtime 1x on a trace from a file.
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
					b.ReportMetric(float64(kb)/(1<<10), "peak-RSS-MiB")
				}
			}
		}
	}
}
