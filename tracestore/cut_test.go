package tracestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
	xtrace "golang.org/x/exp/trace"
)

// xCounts is what x/exp/trace reads of a trace: its events, how many of
// them are Syncs, the events after the last Sync, and its error.
type xCounts struct {
	events, syncs, afterSync uint64
	err                      error
}

func xread(data []byte) xCounts {
	var c xCounts
	r, err := xtrace.NewReader(bytes.NewReader(data))
	if err != nil {
		c.err = err
		return c
	}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF { // its end; some of its errors wrap io.EOF
			return c
		}
		if err != nil {
			c.err = err
			return c
		}
		c.events++
		c.afterSync++
		if ev.Kind() == xtrace.EventSync {
			c.syncs++
			c.afterSync = 0
		}
	}
}

// TestConcatenatedTraces builds a store of a file that holds two traces,
// one after the other, as a program writes that calls trace.Start,
// trace.Stop and trace.Start again with the same file. It is not one
// trace. Build keeps the first and says where the second starts: for
// Go 1.22 and later, x/exp/trace fails at the second header ("expected
// batch event, got event 103"), which only the framing places; for the
// format of Go 1.21 and older, which x/exp/trace reads whole, the build
// failed ("CPU sample has wrong number of arguments"), saying nowhere.
func TestConcatenatedTraces(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "go1.21-small.trace"))
	if err != nil {
		t.Fatal(err)
	}
	first := smallTrace(t)
	second := traceOf(t, workload)
	for _, c := range []struct {
		name          string
		first, second []byte
	}{
		{"go1.21", old, old},
		{"local", first, second},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := xread(c.first)
			if want.err != nil {
				t.Fatal(want.err)
			}
			data := append(bytes.Clone(c.first), c.second...)
			if x := xread(data); x.err == nil {
				t.Fatalf("x/exp/trace reads the two traces as one: %d events", x.events)
			}
			m, err := Build(bytes.NewReader(data), filepath.Join(t.TempDir(), "store"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			tr := m.Truncated
			t.Log(tr)
			if m.Events != want.events || tr == nil {
				t.Fatalf("%d events, %v; the first trace has %d", m.Events, tr, want.events)
			}
			if tr.EventsKept != want.events || tr.Generations != int(want.syncs-1) || tr.PartialEvents != 0 ||
				tr.BytesKept != int64(len(c.first)) || tr.BytesDropped != int64(len(c.second)) ||
				!strings.HasPrefix(tr.Framing, fmt.Sprintf("byte %d: a second trace starts here", len(c.first))) {
				t.Errorf("%+v; want the first trace's %d events and %d generations kept, its %d bytes", tr, want.events, want.syncs-1, len(c.first))
			}
		})
	}
}

// TestHeaderErrors checks what Build says of inputs that are not a
// trace, or whose header is cut.
func TestHeaderErrors(t *testing.T) {
	data := smallTrace(t)
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "the trace is empty"},
		{"5 bytes", data[:5], `header is cut: 5 bytes ("go 1."), a header has 16`},
		{"15 bytes", data[:15], "header is cut: 15 bytes"},
		{"text", []byte("hello, world, this is not a trace"), `not an execution trace: its first 16 bytes are "hello, world, th"`},
		{"go 1.99", []byte("go 1.99 trace\x00\x00\x00\x01\x02"), `"go 1.99 trace\x00\x00\x00": unknown or unsupported`},
		{"go 1.10", []byte("go 1.10 trace\x00\x00\x00\x01\x02"), `"go 1.10 trace\x00\x00\x00": unknown or unsupported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(bytes.NewReader(c.in), filepath.Join(t.TempDir(), "store"), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one that says %s", err, c.want)
			}
		})
	}
}

// TestPartialGeneration builds a store of a trace whose second
// generation is corrupt part way: x/exp/trace produces its first events,
// then fails. Build keeps them, as it keeps every event the reader
// produced, and the Truncation says so: one whole generation and the
// events of the second before the fault. It used to count the second
// generation among the whole ones. A trace whose first generation is so
// corrupt has no whole generation: Build fails, as for a first
// generation cut off (it used to keep the events before the fault and
// call them a generation).
func TestPartialGeneration(t *testing.T) {
	t.Run("second", func(t *testing.T) {
		bad, want := corruptPartWay(t, multiGenTrace(t), 1)
		m, err := Build(bytes.NewReader(bad), filepath.Join(t.TempDir(), "store"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		tr := m.Truncated
		t.Log(tr)
		if tr == nil || m.Events != want.events || tr.EventsKept != want.events || tr.Generations != 1 || tr.PartialEvents != want.afterSync {
			t.Errorf("%d events, %+v; want %d events kept, 1 whole generation and %d events of the second after its Sync", m.Events, tr, want.events, want.afterSync)
		}
	})
	t.Run("first", func(t *testing.T) {
		bad, _ := corruptPartWay(t, smallTrace(t), 0)
		_, err := Build(bytes.NewReader(bad), filepath.Join(t.TempDir(), "store"), Options{})
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "first generation is cut or unreadable") {
			t.Errorf("error %v, want one that says the first generation is unreadable", err)
		}
	})
}

// corruptPartWay returns data with a byte of an event batch of its
// generation k (from 0) changed so that x/exp/trace produces some of the
// generation's events and then fails, and what x/exp/trace reads of it.
func corruptPartWay(t *testing.T, data []byte, k int) ([]byte, xCounts) {
	batches := walkBatches(t, data)
	var gens []uint64
	for i, b := range batches {
		if i == 0 || b.gen != batches[i-1].gen {
			gens = append(gens, b.gen)
		}
	}
	if len(gens) < k+1 || (k > 0 && len(gens) < k+2) {
		t.Fatalf("%d generations, want %d or more", len(gens), k+2)
	}
	tries := 0
	for _, b := range batches {
		if b.gen != gens[k] || b.kind == evStacks || b.kind == evStrings || b.kind == evCPUSamples || b.kind == evFrequency || b.kind == evSync || b.size < 64 {
			continue
		}
		for off := b.end - 2; off > b.end-int64(b.size)/2 && tries < 400; off -= 7 {
			tries++
			d := bytes.Clone(data)
			d[off] = 0xff
			if x := xread(d); x.err != nil && x.syncs == uint64(k+1) && x.afterSync > 0 {
				t.Logf("byte %d of the batch [%d, %d) changed: x/exp/trace reads %d events, %d of generation %d, then fails: %v", off, b.start, b.end, x.events, x.afterSync, k+1, x.err)
				return d, x
			}
		}
	}
	t.Fatalf("no byte found in %d tries that makes x/exp/trace fail part way through generation %d", tries, k+1)
	return nil, xCounts{}
}

// FuzzUntilHeader reads data, after a header, through untilHeader in
// reads of the sizes sizes gives, and checks what it returns against a
// search of the whole: the bytes up to the header's next occurrence, and
// where that is.
func FuzzUntilHeader(f *testing.F) {
	h := []byte("go 1.21 trace\x00\x00\x00")
	f.Add([]byte("abc"), []byte{1, 2, 3})
	f.Add(append([]byte("xyz"), h...), []byte{5})
	f.Add(append(append([]byte("go 1.21 trace\x00\x00"), h...), h...), []byte{1, 15, 16, 17})
	f.Add(bytes.Repeat([]byte("go 1.21 trace\x00\x00"), 300), []byte{255, 0, 7})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		var at int64
		u := &untilHeader{r: bytes.NewReader(data), header: h, at: &at, off: 16}
		var got []byte
		for i := 0; ; i++ {
			n := 4096
			if len(sizes) > 0 {
				n = 1 + 300*int(sizes[i%len(sizes)]%7)
			}
			buf := make([]byte, n)
			k, err := u.Read(buf)
			got = append(got, buf[:k]...)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 && i > len(data)+10 {
				t.Fatal("no progress")
			}
		}
		want, wantAt := data, int64(0)
		if i := bytes.Index(data, h); i >= 0 {
			want, wantAt = data[:i], int64(16+i)
		}
		if !bytes.Equal(got, want) || at != wantAt {
			t.Errorf("read %d bytes, header at %d; want %d bytes, header at %d", len(got), at, len(want), wantAt)
		}
	})
}

// TestShortReaderError checks that x/exp/trace's errors are cut to their
// first line and maxReaderError bytes: "broken trace: failed to advance"
// carries a dump of the reader's state, a line per goroutine, which made
// Build's error, its warning and the manifest's truncated.error 800 KB
// for a trace of 30,000 goroutines with two bytes changed.
func TestShortReaderError(t *testing.T) {
	var dump strings.Builder
	dump.WriteString("broken trace: failed to advance: frontier:\n[gen=1]\n\n")
	for g := range 30000 {
		fmt.Fprintf(&dump, "G %d [status=Waiting seq=1 (gen=1)]\n", g)
	}
	base := errors.New(dump.String())
	long := errors.New(strings.Repeat("é", 2000))
	short := errors.New("found invalid event type: 255")
	for _, c := range []struct {
		err  error
		want string
	}{
		{short, "found invalid event type: 255"},
		{base, fmt.Sprintf("broken trace: failed to advance: frontier (x/exp/trace's message cut from %d bytes and %d lines)", dump.Len(), 30004)},
		{long, strings.Repeat("é", maxReaderError/2) + " (x/exp/trace's message cut from 4000 bytes and 1 lines)"},
	} {
		got := shortReaderError(c.err)
		if got.Error() != c.want || !errors.Is(got, c.err) {
			t.Errorf("%.40q: %q, want %q", c.err.Error(), got.Error(), c.want)
		}
	}
	if shortReaderError(nil) != nil {
		t.Error("nil became an error")
	}
}

// TestHostileBatchHeaders gives batches of a real trace headers that
// claim huge generations, threads, times and sizes, and cuts the trace at
// offsets through its batches: every build fails with an error or keeps
// what it can, and allocates at most 64 times the trace plus 16 MiB (the
// builder's and the reader's buffers).
func TestHostileBatchHeaders(t *testing.T) {
	data := smallTrace(t)
	batches := walkBatches(t, data)
	limit := uint64(64*len(data) + 16<<20)
	var most uint64
	defer func() { t.Logf("%d-byte trace: at most %d bytes allocated", len(data), most) }()
	try := func(name string, d []byte) {
		t.Helper()
		var err error
		dir := filepath.Join(t.TempDir(), "store")
		got := allocs.Bytes(func() { _, err = Build(bytes.NewReader(d), dir, Options{}) })
		most = max(most, got)
		if got > limit {
			t.Errorf("%s: %d bytes allocated for a %d-byte trace (%v)", name, got, len(d), err)
		}
		if err != nil && !strings.ContainsAny(err.Error(), "0123456789") {
			t.Errorf("%s: %v: no offset", name, err)
		}
	}
	for _, bi := range []int{0, len(batches) / 2, len(batches) - 1} {
		b := batches[bi]
		off := int(b.start) + 1
		if data[b.start] == evExperimentalBatch {
			off++
		}
		var hdr [4]uint64
		end := off
		for i := range hdr {
			v, n := binary.Uvarint(data[end:])
			hdr[i], end = v, end+n
		}
		for field, name := range []string{"generation", "thread", "time", "size"} {
			for _, v := range []uint64{1 << 16, 1<<16 + 1, 1 << 40, 1<<63 - 1, math.MaxUint64} {
				h := hdr
				h[field] = v
				var enc []byte
				for _, x := range h {
					enc = binary.AppendUvarint(enc, x)
				}
				d := append(append(append([]byte{}, data[:off]...), enc...), data[end:]...)
				try(fmt.Sprintf("batch %d's %s %d", bi, name, v), d)
			}
		}
	}
	for _, b := range batches[:min(len(batches), 8)] {
		for _, at := range []int64{b.start + 1, b.start + 3, (b.start + b.end) / 2, b.end - 1} {
			try(fmt.Sprintf("cut at %d", at), data[:at])
		}
	}
}

// TestCutAfterBatchType cuts traces one byte into a batch, after its
// type byte: x/exp/trace's error then wraps io.EOF ("error reading batch
// gen: EOF"), and a cut in a later generation read as the trace's end:
// the store kept the whole generations and said nothing of the cut (a
// flaky TestBuildLabelsCutTrace, whose cut at half the trace sometimes
// fell there). A cut in the first generation failed with "the trace has
// no events", not where it is cut.
func TestCutAfterBatchType(t *testing.T) {
	data := multiGenTrace(t)
	batches := walkBatches(t, data)
	var gen2 int64 = -1
	for i, b := range batches {
		if i > 0 && b.gen != batches[0].gen && gen2 < 0 {
			gen2 = b.start
		}
	}
	mid := batches[len(batches)/2].start
	first := batches[1].start
	for _, c := range []struct {
		name string
		at   int64
	}{
		{"a later generation's first batch", gen2},
		{"a batch in the middle", mid},
		{"the first generation's second batch", first},
	} {
		t.Run(c.name, func(t *testing.T) {
			cut := data[:c.at+1]
			want := xread(cut)
			if want.err == nil || !errors.Is(want.err, io.EOF) {
				t.Fatalf("x/exp/trace: %d events, %v; want an error that wraps io.EOF", want.events, want.err)
			}
			m, err := Build(bytes.NewReader(cut), filepath.Join(t.TempDir(), "store"), Options{})
			if want.syncs < 2 {
				if err == nil || !strings.Contains(err.Error(), "first generation is cut or unreadable at byte") {
					t.Errorf("cut at %d: %v; want the first generation's error, which says where", c.at, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Log(m.Truncated)
			if m.Truncated == nil || m.Events != want.events || m.Truncated.BytesKept > c.at || !strings.Contains(m.Truncated.Framing, fmt.Sprintf("byte %d:", c.at)) {
				t.Errorf("cut at %d: %d events (x/exp/trace reads %d), truncated %+v; want the cut said", c.at, m.Events, want.events, m.Truncated)
			}
		})
	}
}
