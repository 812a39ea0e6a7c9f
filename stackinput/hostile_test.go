package stackinput

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/pctab/pctab/internal/allocs"
)

func gz(t testing.TB, data []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// costCeiling is what the tests allow an input of n bytes to allocate:
// three budgets (the decompressed bytes as they grow, the decoding, and
// the corpus built from it).
func costCeiling(n int) uint64 { return 3 * uint64(MaxCost(int64(n))) }

// TestHostilePprof reads small hostile profiles (issue 26, item 11: a 291
// KB gzip bomb cost 632 MB) and checks that each gives an error that wraps
// ErrTooLarge, allocating at most a small multiple of its size; real
// profiles still read.
func TestHostilePprof(t *testing.T) {
	rep := func(unit []byte, n int) []byte { return bytes.Repeat(unit, n/len(unit)) }
	real := seedProfile(t)
	tests := []struct {
		name   string
		data   []byte
		tooBig bool // must be refused as too large; others may be read or refused
	}{
		// Decoding a profile costs at most about 100 times its
		// uncompressed size, within the budget of 128 times; compressed,
		// the same profiles are over it.
		{"gzip bomb of zeros", gz(t, make([]byte, 64<<20)), true},
		{"gzip bomb of empty samples", gz(t, rep([]byte{0x12, 0}, 64<<20)), true},
		{"gzipped empty samples under the decompression limit", gz(t, rep([]byte{0x12, 0}, 8<<20)), true},
		{"gzipped samples with a label", gz(t, rep([]byte{0x12, 2, 0x1a, 0}, 8<<20)), true},
		{"gzipped locations with a line", gz(t, rep([]byte{0x22, 2, 0x22, 0}, 8<<20)), true},
		{"gzipped empty strings", gz(t, rep([]byte{0x32, 0}, 8<<20)), true},
		{"empty samples", rep([]byte{0x12, 0}, 1<<20), false},
		{"empty locations", rep([]byte{0x22, 0}, 1<<20), false},
		{"empty functions", rep([]byte{0x2a, 0}, 1<<20), false},
		{"empty mappings", rep([]byte{0x1a, 0}, 1<<20), false},
		{"samples with a label", rep([]byte{0x12, 2, 0x1a, 0}, 1<<20), false},
		{"locations with a line", rep([]byte{0x22, 2, 0x22, 0}, 1<<20), false},
		{"samples of unpacked location ids", rep([]byte{0x12, 2, 0x08, 0}, 1<<20), false},
		{"empty strings", rep([]byte{0x32, 0}, 1<<20), false},
		{"comments", rep([]byte{0x68, 0}, 1<<20), false},
		{"legacy heap profile", append([]byte("heap profile: 1: 1 [1: 1] @ heap/1\n"), rep([]byte("1: 1 [1: 1] @ 0x1\n"), 1<<20)...), false},
		{"legacy contention profile", append([]byte("--- contention:\ncycles/second=1\n"), rep([]byte("1 1 @ 0x1\n"), 1<<20)...), false},
		{"gzip inside gzip", gz(t, gz(t, real)), false},
		{"real profile", real, false},
		{"real profile, not compressed", mustGunzip(t, real), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			alloc := allocs.Least(3, func() { _, err = ReadPprof(bytes.NewReader(tc.data)) })
			if limit := costCeiling(len(tc.data)); alloc > limit {
				t.Errorf("reading %d bytes allocated %d bytes, more than the ceiling %d", len(tc.data), alloc, limit)
			}
			if tc.tooBig && !errors.Is(err, ErrTooLarge) {
				t.Errorf("error %v, want one that wraps ErrTooLarge", err)
			}
			if tc.name == "real profile" && err != nil || tc.name == "gzip inside gzip" && err == nil {
				t.Errorf("error %v", err)
			}
			t.Logf("%d bytes: %v (allocated %d bytes)", len(tc.data), err, alloc)
		})
	}
}

// seedProfile returns the real CPU profile FuzzReadPprof is seeded with
// (testdata/fuzz/FuzzReadPprof/in-process), gzipped as pprof writes it.
// Reading it, rather than profiling, keeps the tests independent of how
// many samples a loaded machine gives.
func seedProfile(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/fuzz/FuzzReadPprof/in-process")
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	lit = strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")")
	data, err := strconv.Unquote(lit)
	if err != nil || !isGzip([]byte(data)) {
		t.Fatalf("seed corpus file: %v", err)
	}
	return []byte(data)
}

func mustGunzip(t *testing.T, data []byte) []byte {
	out, err := gunzip(data, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPprofCostBound checks pprofCost against what the decoder really
// allocates, on the shapes of field that cost the most per byte: the
// estimate must not be below it.
func TestPprofCostBound(t *testing.T) {
	for _, unit := range [][]byte{
		{0x12, 0}, {0x22, 0}, {0x2a, 0}, {0x1a, 0}, {0x0a, 0}, {0x32, 0}, {0x68, 0},
		{0x12, 2, 0x1a, 0}, {0x22, 2, 0x22, 0}, {0x12, 2, 0x08, 0}, {0x12, 4, 0x0a, 2, 0, 0},
		{0x12, 6, 0x1a, 4, 0x08, 1, 0x10, 2},
	} {
		data := bytes.Repeat(unit, (256<<10)/len(unit))
		got := allocs.Least(3, func() { profile.ParseData(data) })
		est, _ := pprofCost(data, 1<<62)
		if uint64(est) < got {
			t.Errorf("% x repeated (%d bytes): estimate %d, the decoder allocated %d", unit, len(data), est, got)
		}
		t.Logf("% x: estimate %d, allocated %d", unit, est, got)
	}
	// A real profile's estimate.
	data := mustGunzip(t, seedProfile(t))
	got := allocs.Least(3, func() { profile.ParseData(data) })
	est, _ := pprofCost(data, 1<<62)
	if uint64(est) < got {
		t.Errorf("real profile: estimate %d, allocated %d", est, got)
	}
	t.Logf("real profile of %d bytes: estimate %d, allocated %d", len(data), est, got)
}

// TestPprofCostOf logs the estimate of the profile in $PCTAB_PPROF, to see
// how far a real profile is from its budget.
func TestPprofCostOf(t *testing.T) {
	path := os.Getenv("PCTAB_PPROF")
	if path == "" {
		t.Skip("PCTAB_PPROF names no profile")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data := b
	if isGzip(b) {
		data = mustGunzip(t, b)
	}
	est, _ := pprofCost(data, 1<<62)
	got := allocs.Least(3, func() { profile.ParseData(data) })
	t.Logf("%s: %d bytes, %d decompressed; estimate %d (%.1f times the input), allocated %d; budget %d", path, len(b), len(data), est, float64(est)/float64(len(b)), got, MaxCost(int64(len(b))))
}
