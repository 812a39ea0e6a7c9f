package resolve_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/internal/allocs"
	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/trampoline"
	"github.com/pctab/pctab/trampoline/resolve"
)

// cpuBy returns the CPU time fn takes on its thread, and whether the
// platform measures it.
func cpuBy(fn func()) (time.Duration, bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, ok := cputime.Thread()
	fn()
	t1, _ := cputime.Thread()
	return t1 - t0, ok
}

// trampolineProfile is a CPU profile of n samples, each through trampoline
// 0, with no time range (so every binding of the history overlaps it).
func trampolineProfile(n int) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: resolve.Prefix + "0000"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Location:   []*profile.Location{loc}, Function: []*profile.Function{fn}}
	for range n {
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1}})
	}
	return p
}

// TestHostileHistory reads small histories with hostile trampoline counts
// (issue 26, item 10: 9e18 panicked in makeslice, 4e9 ran out of memory
// and 3e8 took 10 s, all from a 60-byte history) and resolves a profile
// with each one ReadHistory accepts: an error or a result, never a panic,
// and at most a small multiple of the input's size allocated.
func TestHostileHistory(t *testing.T) {
	p := trampolineProfile(10)
	for _, tc := range []struct {
		trampolines string
		wantErr     bool
	}{
		{"9000000000000000000", true},
		{"4000000000", true},
		{"300000000", true},
		{"10001", true},
		{"-1", true},
		{"-9000000000000000000", true},
		{"1e3", true}, // not an integer: the decoder refuses it
		{"0", false},
		{"1", false},
		{"10000", false},
	} {
		t.Run(tc.trampolines, func(t *testing.T) {
			in := fmt.Sprintf(`{"schema_version":1,"trampolines":%s,"bindings":[]}`, tc.trampolines)
			var err error
			alloc := allocs.Bytes(func() {
				var h trampoline.History
				h, err = trampoline.ReadHistory(strings.NewReader(in))
				if err == nil {
					_, _, err = resolve.Profile(p, &resolve.Trampolines{}, h)
				}
			})
			if limit := 64*uint64(len(in)) + 1<<20; alloc > limit {
				t.Errorf("a %d-byte history allocated %d bytes, more than the ceiling %d", len(in), alloc, limit)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr && tc.trampolines != "1e3" && !errors.Is(err, trampoline.ErrBadHistory) {
				t.Errorf("error %v does not wrap ErrBadHistory", err)
			}
			t.Logf("%d bytes: %v (allocated %d bytes)", len(in), err, alloc)
		})
	}
}

// TestHostileHistoryAPI resolves with histories built in code, which
// ReadHistory did not check: a huge trampoline count sizes nothing, and
// bindings outside it are ignored.
func TestHostileHistoryAPI(t *testing.T) {
	p := trampolineProfile(10)
	for _, n := range []int{math.MaxInt/2 + 1, math.MaxInt, math.MinInt, 300000000} {
		h := trampoline.History{SchemaVersion: 1, Trampolines: n, Bindings: []trampoline.Binding{
			{Trampoline: 0, Key: "q", Value: "a"}, {Trampoline: math.MaxInt>>23 + 1, Key: "q", Value: "b"}, {Trampoline: -5}}}
		var st resolve.Stats
		var err error
		alloc := allocs.Bytes(func() { _, st, err = resolve.Profile(p, &resolve.Trampolines{}, h) })
		if err != nil {
			t.Fatalf("trampolines %d: %v", n, err)
		}
		if alloc > 1<<20 {
			t.Errorf("trampolines %d: allocated %d bytes", n, alloc)
		}
		if want := int64(10 * int(min(max(n, 0), 1))); st.Labelled != want {
			t.Errorf("trampolines %d: %+v, want %d labelled", n, st, want)
		}
	}
}

// TestManyBindings resolves a profile whose samples all pass through a
// trampoline that the history binds many times: the cost must grow with
// samples plus bindings, not with their product.
func TestManyBindings(t *testing.T) {
	const n = 40000
	var hb bytes.Buffer
	hb.WriteString(`{"schema_version":1,"trampolines":1,"bindings":[`)
	for i := range n {
		if i > 0 {
			hb.WriteByte(',')
		}
		fmt.Fprintf(&hb, `{"trampoline":0,"key":"q","value":"v","start_mono_ns":%d,"end_mono_ns":%d,"start_unix_ns":%d,"end_unix_ns":%d}`, 2*i+1, 2*i+2, 2*i+1, 2*i+2)
	}
	hb.WriteString(`]}`)
	h, err := trampoline.ReadHistory(&hb)
	if err != nil {
		t.Fatal(err)
	}
	p := trampolineProfile(n)
	var st resolve.Stats
	cpu, ok := cpuBy(func() { _, st, err = resolve.Profile(p, &resolve.Trampolines{}, h) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Unattributed != n {
		t.Errorf("%+v: want all %d samples unattributed (the trampoline is bound %d times)", st, n, n)
	}
	// Linear work is a few milliseconds; the product, 1.6e9 binding
	// checks, takes seconds.
	if ok && cpu > time.Second {
		t.Errorf("resolving %d samples against %d bindings took %v of CPU time", n, n, cpu)
	}
	t.Logf("%d samples, %d bindings: %v CPU", n, n, cpu)
}

// FuzzHistory reads arbitrary bytes as a history and resolves a small
// profile with it: an error or a result, never a panic, and bounded
// allocation.
func FuzzHistory(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"trampolines":2,"bindings":[{"trampoline":1,"key":"q","value":"a","start_mono_ns":5,"end_mono_ns":0,"start_unix_ns":7,"end_unix_ns":0}]}`))
	f.Add([]byte(`{"schema_version":1,"trampolines":9000000000000000000,"bindings":[]}`))
	f.Add([]byte(`{"schema_version":1,"trampolines":1,"bindings":[{"trampoline":0},{"trampoline":0,"start_unix_ns":-9223372036854775808}]}`))
	p := trampolineProfile(4)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := trampoline.ReadHistory(bytes.NewReader(data))
		if err != nil {
			return
		}
		if h.Trampolines > trampoline.MaxTrampolines {
			t.Fatalf("history of %d trampolines accepted", h.Trampolines)
		}
		if _, _, err := resolve.Profile(p, &resolve.Trampolines{}, h); err != nil {
			t.Fatalf("resolving with an accepted history: %v", err)
		}
	})
}
