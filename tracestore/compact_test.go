package tracestore

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/allocs"
)

// FuzzSpanBlocks decodes arbitrary bytes as a block of spans.bin and as a
// chunk of spanattr.bin: no panic, allocations a small multiple of the
// input, and what decodes is in the one form the encoders write.
func FuzzSpanBlocks(f *testing.F) {
	spans := []Span{
		{Start: 100, Dur: 640, Kind: SpanRunning, Stack: 7},
		{Start: 740, Dur: 65, Kind: SpanWaiting, Name: 3, Stack: 7},
		{Start: 900, Dur: 0, Kind: SpanRunnable},
		{Start: 900, Dur: 1 << 40, Kind: SpanRunning, Stack: 7},
	}
	for _, q := range []int64{1, 64} {
		f.Add(appendBlock(nil, spans, q), uint8(len(spans)), uint8(bitsOf(q)))
	}
	var last [numSpanKinds]uint32
	var attrs []byte
	for _, s := range spans {
		attrs = appendAttr(attrs, s, &last)
	}
	f.Add(attrs, uint8(len(spans)), uint8(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(1), uint8(20))
	f.Fuzz(func(t *testing.T, b []byte, n, shift uint8) {
		q := int64(1) << (shift % 21)
		var dst []Span
		var err error
		got := allocs.Least(3, func() { dst, err = decodeBlock(nil, b, 5, int(n)%(BlockSpans+1), q) })
		// At most BlockSpans spans and an error, whatever the input.
		if got > 64*uint64(len(b))+16<<10 {
			t.Fatalf("decoding %d bytes allocated %d", len(b), got)
		}
		if err == nil && len(dst) > 0 {
			if again := appendBlock(nil, dst, q); !bytes.Equal(again, b) {
				t.Fatalf("decoded %+v from %x, which encode to %x", dst, b, again)
			}
			for _, s := range dst {
				if s.Start < 0 || s.Dur < 0 || s.End() > maxTime {
					t.Fatalf("span %+v out of range", s)
				}
			}
		}
		var back []byte
		got = allocs.Least(3, func() {
			back = nil
			var last [numSpanKinds]uint32
			err = decodeAttrs(b, int(n), func(_ int, kind SpanKind, name, stack uint32) {
				back = appendAttr(back, Span{Kind: kind, Name: name, Stack: stack}, &last)
			})
		})
		if err == nil && !bytes.Equal(back, b) {
			t.Fatalf("attributes %x encode back to %x", b, back)
		}
	})
}

func bitsOf(q int64) int {
	n := 0
	for q > 1 {
		q >>= 1
		n++
	}
	return n
}

// FuzzGatherSpans gives the builder's temporary span file arbitrary
// contents when it gathers the spans into lanes, in one group and in
// several (a small memory limit): an error or lanes, never a panic.
func FuzzGatherSpans(f *testing.F) {
	rec := func(lane uint32, s Span) []byte {
		b := binary.LittleEndian.AppendUint32(nil, lane)
		var sp [spanBytes]byte
		putSpan(sp[:], s)
		return append(b, sp[:]...)
	}
	var good []byte
	for i := range 6 {
		good = append(good, rec(uint32(i%3), Span{Start: int64(i) * 10, Dur: 5, Kind: SpanRunning})...)
	}
	f.Add(good, int64(0))
	f.Add(good, int64(spanBytes*2))
	f.Add(append(good[:len(good)-3:len(good)-3], 0xff), int64(1))
	f.Add(bytes.Repeat([]byte{0xff}, 6*(4+spanBytes)), int64(spanBytes))
	f.Fuzz(func(t *testing.T, data []byte, mem int64) {
		dir := t.TempDir()
		tmp, err := os.Create(filepath.Join(dir, "spans.tmp"))
		if err != nil {
			t.Fatal(err)
		}
		defer tmp.Close()
		tmp.Write(data)
		b := &builder{dir: dir, spanTmp: tmp, numSpans: 6, mem: mem}
		// Three lanes of two spans each, the limit in spans chosen by
		// the input (gatherSpans allows a group at least 1 MiB).
		counts := []int64{2, 2, 2}
		newID := []uint32{0, 1, 2}
		if mem > 0 && mem < 1<<20 {
			b.mem = 0
		}
		var got int
		err = gatherCounts(b, counts, newID, func(n int, l Lane, next func() (Span, error)) error {
			for range l.Spans {
				if _, err := next(); err != nil {
					return err
				}
				got++
			}
			return nil
		})
		if err == nil && got != 6 {
			t.Fatalf("%d spans gathered, no error", got)
		}
		if err != nil && !strings.Contains(err.Error(), "tracestore") {
			t.Fatalf("error without context: %v", err)
		}
	})
}

// TestGatherGroups builds a store of a real trace with a memory limit so
// small that the spans gather in groups of 50 and the lanes sort in runs
// of 25, merged from a file, and checks it against the store built in
// one group and one run: the same files.
func TestGatherGroups(t *testing.T) {
	data := smallTrace(t)
	one := filepath.Join(t.TempDir(), "one")
	if _, err := Build(bytes.NewReader(data), one, Options{}); err != nil {
		t.Fatal(err)
	}
	defer func(v int64) { minGroupBytes = v }(minGroupBytes)
	minGroupBytes = spanBytes
	many := t.TempDir()
	m, err := buildInto(bytes.NewReader(data), many, PageSize, Options{MemLimit: 4 * 50 * spanBytes})
	if err != nil {
		t.Fatal(err)
	}
	if m.Spans < 200 || m.Lanes < 50 {
		t.Fatalf("%d spans, %d lanes: too few for groups of 50 spans and runs of 25 lanes", m.Spans, m.Lanes)
	}
	ents, _ := os.ReadDir(one)
	for _, e := range ents {
		x, _ := os.ReadFile(filepath.Join(one, e.Name()))
		y, _ := os.ReadFile(filepath.Join(many, e.Name()))
		if !bytes.Equal(x, y) && e.Name() != fileManifest {
			t.Errorf("%s differs with groups of 50 spans", e.Name())
		}
	}
	if _, err := Open(many); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(bytes.NewReader(data), filepath.Join(t.TempDir(), "x"), Options{MemLimit: MinMemLimit - 1}); err == nil {
		t.Error("a memory limit below MinMemLimit: no error")
	}
}

// TestGatherMemory gathers 200,000 spans of 100 lanes under memory limits
// and counts the bytes allocated: within a limit's quarter (the group
// buffer) and the buffers of the files, whatever the spans take.
func TestGatherMemory(t *testing.T) {
	defer func(v int64) { minGroupBytes = v }(minGroupBytes)
	minGroupBytes = spanBytes
	const nlanes, per = 100, 2000
	dir := t.TempDir()
	// The span file, written anew for each limit: gathering in groups
	// truncates it once the groups hold its spans.
	var spanFile bytes.Buffer
	var rec [4 + spanBytes]byte
	for i := range per {
		for l := range nlanes {
			binary.LittleEndian.PutUint32(rec[:4], uint32(l))
			putSpan(rec[4:], Span{Start: int64(i) * 10, Dur: 5})
			spanFile.Write(rec[:])
		}
	}
	counts := make([]int64, nlanes)
	newID := make([]uint32, nlanes)
	for l := range counts {
		counts[l] = per
		newID[l] = uint32(l)
	}
	spansBytes := uint64(nlanes * per * spanBytes)
	for _, mem := range []int64{1 << 20, 4 << 20, 1 << 30} {
		tmp, err := os.Create(filepath.Join(dir, "spans.tmp"))
		if err != nil {
			t.Fatal(err)
		}
		defer tmp.Close()
		if _, err := tmp.Write(spanFile.Bytes()); err != nil {
			t.Fatal(err)
		}
		b := &builder{dir: dir, spanTmp: tmp, numSpans: nlanes * per, mem: mem}
		var n int
		got := allocs.Bytes(func() {
			err = gatherCounts(b, counts, newID, func(_ int, l Lane, next func() (Span, error)) error {
				for range l.Spans {
					if _, err := next(); err != nil {
						return err
					}
					n++
				}
				return nil
			})
		})
		if err != nil || n != nlanes*per {
			t.Fatalf("mem %d: %d spans, %v", mem, n, err)
		}
		// The group buffer, per group file a writer of 4 to 16 KiB
		// (an eighth of the limit shared) and its file, and three
		// 64 KiB readers (the span file's twice, the group files' one
		// at a time).
		groups := (spansBytes + uint64(mem/4) - 1) / uint64(mem/4)
		wbuf := min(max(uint64(mem/8)/groups, 4<<10), 16<<10)
		limit := min(uint64(mem/4), spansBytes) + groups*(wbuf+2<<10) + 3*ioBuffer + 256<<10
		t.Logf("mem %d: %d groups, %d bytes allocated for %d bytes of spans", mem, groups, got, spansBytes)
		if got > limit {
			t.Errorf("mem %d: gathering %d bytes of spans allocated %d bytes, more than %d", mem, spansBytes, got, limit)
		}
	}
}

// TestGatherNoLanes: a trace whose events make no span.
func TestGatherNoLanes(t *testing.T) {
	b := &builder{dir: t.TempDir()}
	tmp, err := os.CreateTemp(b.dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	b.spanTmp = tmp
	if err := gatherCounts(b, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestBlockRoundTrip encodes and decodes blocks with gaps, remainders and
// long durations in every time quantum's form.
func TestBlockRoundTrip(t *testing.T) {
	spans := []Span{
		{Start: 64, Dur: 64},
		{Start: 130, Dur: 0},       // a gap of 2
		{Start: 130, Dur: 1 << 40}, // none
		{Start: 1<<40 + 130 + 640, Dur: 63},
		{Start: 1<<40 + 130 + 640 + 63 + 1, Dur: 1},
	}
	for _, q := range []int64{1, 2, 64, MaxTimeQuantum} {
		b := appendBlock(nil, spans, q)
		got, err := decodeBlock(nil, b, spans[0].Start, len(spans), q)
		if err != nil {
			t.Fatalf("q %d: %v", q, err)
		}
		for i := range spans {
			if got[i].Start != spans[i].Start || got[i].Dur != spans[i].Dur {
				t.Errorf("q %d: span %d: %+v, want %+v", q, i, got[i], spans[i])
			}
		}
	}
}

// TestGetN reads every width at the end of a buffer and inside it, against
// putN.
func TestGetN(t *testing.T) {
	for n := 1; n <= 8; n++ {
		v := uint64(0x0102030405060708) >> (64 - 8*n)
		for _, pad := range []int{0, 7} {
			b := make([]byte, n+pad)
			for i := range b {
				b[i] = 0xee
			}
			putN(b, v, n)
			if got := getN(b, n); got != v {
				t.Errorf("getN(%x, %d) = %#x, want %#x", b, n, got, v)
			}
		}
	}
}

// TestExtraFiles: a manifest may list files Open does not know (a later
// writer's), which File reads checked; names that are not plain are
// refused.
func TestExtraFiles(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store")
	if _, err := Build(bytes.NewReader(smallTrace(t)), base, Options{}); err != nil {
		t.Fatal(err)
	}
	extra := []byte("coarse levels")
	if err := os.WriteFile(filepath.Join(base, "levels.bin"), extra, 0o666); err != nil {
		t.Fatal(err)
	}
	editManifest(t, base, func(m map[string]any) {
		m["files"] = append(m["files"].([]any), map[string]any{"name": "levels.bin", "bytes": len(extra), "crc32c": crc(extra), "optional": true})
	})
	s, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.File("levels.bin"); err != nil || !bytes.Equal(b, extra) {
		t.Errorf("File: %q, %v", b, err)
	}
	if _, err := s.File("missing.bin"); err == nil {
		t.Error("File of a file the manifest does not list: no error")
	}
	s.Close()
	os.WriteFile(filepath.Join(base, "levels.bin"), []byte("coarse levelz"), 0o666)
	if s, err = Open(base); err != nil {
		t.Fatalf("a changed extra file stops Open: %v", err)
	}
	if _, err := s.File("levels.bin"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("File of a changed file: %v", err)
	}
	s.Close()
	for _, name := range []string{"../x", "a/b", "", ".", "..", fileManifest, fileSpans} {
		dir := copyStore(t, base)
		editManifest(t, dir, func(m map[string]any) {
			m["files"] = append(m["files"].([]any), map[string]any{"name": name, "bytes": 0, "crc32c": 0})
		})
		if s, err := Open(dir); err == nil {
			s.Close()
			t.Errorf("a file named %q: Open succeeded", name)
		}
	}
}

// gatherCounts calls b.gatherSpans for lanes of the given span counts,
// in groups cut as writeLanes cuts them.
func gatherCounts(b *builder, counts []int64, newID []uint32, lane func(n int, l Lane, next func() (Span, error)) error) error {
	var groups []laneGroup
	var cb []byte
	for n, c := range counts {
		groups = addGroupLane(groups, n, c, max(b.mem/4, minGroupBytes))
		cb = binary.LittleEndian.AppendUint64(cb, uint64(c))
	}
	return b.gatherSpans(groups, len(counts), bytes.NewReader(cb), memLaneIDs(newID), lane)
}

// TestWideNames checks that a span's name keeps its 32 bits on its way
// through the builder's temporary files (putSpan, getSpan), spanattr.bin
// (appendAttr, decodeAttrs) and the readers' cache (kindChunk): a trace
// with more than 2^24 distinct strings (user logs, say) gives later
// regions and tasks names past 2^24, which lost their top 8 bits.
func TestWideNames(t *testing.T) {
	var spans []Span
	for k := range numSpanKinds {
		for _, name := range []uint32{0, 1, 1<<24 - 1, 1 << 24, 1<<24 + 5, 1<<31 + 7, math.MaxUint32} {
			for _, tm := range []int64{0, 1, maxTime - 1} {
				spans = append(spans, Span{Start: tm, Dur: maxTime - 1 - tm, Kind: k, Name: name, Stack: uint32(name) ^ 0x5a5a5a5a})
			}
		}
	}
	var rec [spanBytes]byte
	var attrs []byte
	var last [numSpanKinds]uint32
	kc := &kindChunk{idx: make([]byte, len(spans))}
	for j, s := range spans {
		putSpan(rec[:], s)
		if got := getSpan(rec[:]); got != s {
			t.Errorf("temporary span file: %+v back as %+v", s, got)
		}
		attrs = appendAttr(attrs, s, &last)
		kc.set(j, packKindName(s.Kind, s.Name))
	}
	kc.pack()
	err := decodeAttrs(attrs, len(spans), func(j int, kind SpanKind, name, stack uint32) {
		s := spans[j]
		if kind != s.Kind || name != s.Name || stack != s.Stack {
			t.Errorf("spanattr.bin: span %d %+v back as kind %d, name %d, stack %d", j, s, kind, name, stack)
		}
		if kn := kc.at(int64(j)); kn.kind() != s.Kind || kn.name() != s.Name {
			t.Errorf("kind chunk: span %d %+v back as kind %d, name %d", j, s, kn.kind(), kn.name())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
