package tracestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// testBatch is a batch of a trace's framing, as walkBatches finds it.
type testBatch struct {
	start, end int64
	gen, size  uint64
	kind       byte // the first event type of its data
}

// walkBatches walks the batch framing of a trace of Go 1.22 or later
// itself, apart from scanBatches: after the 16-byte header, each batch is
// its type byte (1; 49 with an experiment byte), its generation, M,
// timestamp and size (uvarints) and size bytes; 52 alone ends a
// generation (Go 1.26 and later).
func walkBatches(t *testing.T, data []byte) []testBatch {
	t.Helper()
	var out []testBatch
	for off := 16; off < len(data); {
		start := off
		typ := data[off]
		off++
		if typ == 52 {
			continue
		}
		if typ == 49 {
			off++
		}
		var hdr [4]uint64
		for i := range hdr {
			v, n := binary.Uvarint(data[off:])
			if n <= 0 {
				t.Fatalf("batch at %d: bad header", start)
			}
			hdr[i], off = v, off+n
		}
		b := testBatch{start: int64(start), end: int64(off) + int64(hdr[3]), gen: hdr[0], size: hdr[3]}
		if hdr[3] > 0 {
			b.kind = data[off]
		}
		out = append(out, b)
		off = int(b.end)
	}
	return out
}

// TestFirstGenerationFault is where an unreadable first generation's
// error says the fault is. It said how far the reader had read, which is
// past the fault by what the reader reads ahead (all of the generation,
// and a buffer more). Now it names the batch whose framing breaks, or,
// when the framing is whole and x/exp/trace does not say where, the
// generation's bytes. Each damaged trace is one x/exp/trace itself cannot
// read an event of.
func TestFirstGenerationFault(t *testing.T) {
	data := smallTrace(t)
	batches := walkBatches(t, data)
	if len(batches) < 4 || batches[len(batches)-1].gen != batches[0].gen {
		t.Fatalf("%d batches: want several, in one generation", len(batches))
	}
	mid := batches[len(batches)/2]
	var sync testBatch
	for _, b := range batches {
		if b.kind == evSync || b.kind == evFrequency {
			sync = b
		}
	}
	if sync.end == 0 {
		t.Fatal("no sync batch")
	}
	corrupt := bytes.Clone(data)
	corrupt[mid.start] = 0x7f
	noSync := append(bytes.Clone(data[:sync.start]), data[sync.end:]...)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut in the first batch's header", data[:19], "at byte 16: truncated batch header"},
		{"cut in a batch", data[:(mid.start+mid.end)/2], fmt.Sprintf("at byte %d: batch of %d bytes truncated", mid.start, mid.size)},
		{"not a batch", corrupt, fmt.Sprintf("at byte %d: event type 127 where a batch starts", mid.start)},
		{"no sync batch", noSync, fmt.Sprintf("in its bytes [16, %d) (generation %d), whose batch framing is whole", len(noSync), batches[0].gen)},
	} {
		t.Run(c.name, func(t *testing.T) {
			// x/exp/trace gives a Sync event before its error.
			if n, err := readable(t, c.data); err == nil || n > 1 {
				t.Fatalf("x/exp/trace reads %d events (%v): want a Sync at most, and an error", n, err)
			}
			_, err := Build(bytes.NewReader(c.data), filepath.Join(t.TempDir(), "store"), Options{})
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), "first generation is cut or unreadable "+c.want) {
				t.Errorf("error %v, want one that says %q", err, c.want)
			}
		})
	}
}

// TestEventReaderCut reads a trace of several generations whole, then
// again cut by its reader (Cut) at the first event of its third
// generation, as Build cuts a trace at an event it cannot take: the
// events before it are kept, two generations, and the Truncation says
// where the third generation starts, by the trace's own framing.
func TestEventReaderCut(t *testing.T) {
	data := multiGenTrace(t)
	var starts []int64
	batches := walkBatches(t, data)
	for i, b := range batches {
		if i == 0 || b.gen != batches[i-1].gen {
			starts = append(starts, b.start)
		}
	}
	if len(starts) < 3 {
		t.Fatalf("%d generations, want 3 or more", len(starts))
	}
	all, err := readable(t, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []bool{false, true} {
		er, err := NewEventReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for {
			_, err := er.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
			if cut && er.Generations() == 3 {
				er.Cut(errors.New("an event the reader cannot take"))
				n--
			}
		}
		tr := er.Truncated()
		t.Logf("cut %v: %d events, %d generations; %v", cut, er.Events(), er.Generations(), tr)
		if er.Events() != n || er.BytesRead() != int64(len(data)) {
			t.Errorf("cut %v: %d events, %d bytes read; want %d, %d", cut, er.Events(), er.BytesRead(), n, len(data))
		}
		switch {
		case !cut && (tr != nil || n != all || er.Generations() != len(starts)):
			t.Errorf("whole: %d events (x/exp/trace reads %d), %d generations (the framing has %d), %v", n, all, er.Generations(), len(starts), tr)
		case cut && (tr == nil || er.Generations() != 2 || tr.EventsKept != n || tr.Generations != 2 || tr.BytesKept != starts[2] || tr.BytesDropped != int64(len(data))-starts[2] || tr.Error != "an event the reader cannot take"):
			t.Errorf("cut: %d generations, %+v; want the third generation's start, %d", er.Generations(), tr, starts[2])
		}
		er.Close()
	}
}
