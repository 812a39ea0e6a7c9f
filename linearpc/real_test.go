package linearpc

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// realTab is a distinct table of a real binary, decoded.
type realTab struct {
	off uint32 // pctab offset
	raw []byte // varint encoding, terminator included
	t   pcvalue.Table
}

var real struct {
	sync.Once
	f    *objscan.File
	tabs []realTab
	err  error
}

// realTables opens and decodes the local go binary once, or skips.
func realTables(tb testing.TB) (*objscan.File, []realTab) {
	tb.Helper()
	real.Do(func() {
		path := testbuild.GoBinary()
		if _, real.err = os.Stat(path); real.err != nil {
			return
		}
		real.f, real.err = objscan.Open(path)
		if real.err != nil {
			return
		}
		for _, tab := range real.f.Tabs {
			t, _, err := varintpc.Decode(tab.Data)
			if err != nil {
				real.err = err
				return
			}
			real.tabs = append(real.tabs, realTab{tab.Offset, tab.Data, t})
		}
	})
	if real.err != nil {
		tb.Skipf("no real go binary: %v", real.err)
	}
	return real.f, real.tabs
}

// The reference sizes for the go command of Go 1.26.8 linux/amd64.
const (
	refFileSize    = 15434687
	refVarintBytes = 1823043
	refLinearBytes = 2243978
)

// TestRealSizes measures every variant on the local go binary and, when it
// is the reference binary, checks the reference totals exactly.
func TestRealSizes(t *testing.T) {
	f, tabs := realTables(t)
	varint := 0
	for _, rt := range tabs {
		varint += len(rt.raw)
	}
	ref := f.FileSize == refFileSize && f.GoVersion == "go1.26.8" && f.GOOS == "linux" && f.GOARCH == "amd64"
	t.Logf("%s %s/%s, %d bytes, %d distinct tables, varint bytes %d", f.GoVersion, f.GOOS, f.GOARCH, f.FileSize, len(tabs), varint)
	if ref && varint != refVarintBytes {
		t.Errorf("varint bytes = %d, want %d", varint, refVarintBytes)
	}
	for _, v := range Variants() {
		s := NewSet(v)
		h := sha256.New()
		for _, rt := range tabs {
			fmt.Fprintf(h, "%d,", s.Add(rt.t))
		}
		h.Write(s.Bytes())
		sum := fmt.Sprintf("%x", h.Sum(nil))
		t.Logf("%-12s %9d bytes (%+.2f%% of varint, %+.3f%% of the file), %d distinct, sha256 %s", v.Name, s.Size(),
			100*float64(s.Size()-varint)/float64(varint), 100*float64(s.Size()-varint)/float64(f.FileSize), s.Len(), sum)
		if ref && v.IsSpec() && s.Size() != refLinearBytes {
			t.Errorf("spec linear bytes = %d, want %d", s.Size(), refLinearBytes)
		}
		if want := refSetSums[v.Name]; ref && sum != want {
			t.Errorf("%s: set offsets and bytes hash to %s, want %s", v.Name, sum, want)
		}
	}
}

// refSetSums are the SHA-256 sums of the offsets Set.Add returns for every
// table of the reference binary, in order, each followed by a comma,
// followed by the set's bytes: they pin the sets byte for byte across
// changes to the encoders (the pooled one above all).
var refSetSums = map[string]string{
	"spec":             "bde8b9bdca611fc8d60178c18b1f6be21c08774b76c5a1d75f0caa9db3389992",
	"spec-128":         "8d378520b0f46b10ed9b297bac79116b0b63ee57645f7bcf97c05e5131de754e",
	"spec-512":         "d8cd6ba4ef285bd1b1fae2e8100df0394210733e3255489f4abd559442740ca4",
	"spec-pool":        "93b974c3616c52bd2387e7313d00a64584d8b619341f2ec81c3d16caa7c9fb06",
	"compact":          "3ff1b071efc5c38dd634bb6508791183f98e14f6f3cf36b4cc45101df6f20bd8",
	"compact-fast":     "dbe4a809856e734e8857a963171deba47689bceb862ba9896f0e8ac2f2aacd8c",
	"cf-palette":       "278a1312cef68560916fd9163786a05acd2f168bf5961c3b44dfa4d79aeb0ba9",
	"cf-palette-short": "01f30e83ac1e1022dacef02f666e9a79729c41a740a2cc7bb521048237eaf072",
	"cfps-offset":      "c74d5aeacde102cfc338c7506e3fbbfab263aebae5d27c5bfd3a558f8da57454",
}

// TestRealLookup checks the variants against the varint tables of the local
// go binary: the spec and compact formats at every PC of every table, the
// others at every 5th PC, and all of them at a sample under -short. It also
// checks that the spec encoding of every table decodes to the table.
func TestRealLookup(t *testing.T) {
	_, tabs := realTables(t)
	served := map[string]int{} // lookups the variant's leaf lookup served
	for _, v := range Variants() {
		// Every PC for the spec and compact formats; to keep the test
		// fast, every 5th PC for the other variants (still every table
		// and every chunk), and a sample under -short.
		step := uint32(1)
		if !v.IsSpec() && !v.compact() {
			step = 5
		}
		if !testenv.Full() {
			step = 61
		}
		s := NewSet(v)
		offs := make([]uint32, len(tabs))
		for i, rt := range tabs {
			offs[i] = s.Add(rt.t)
		}
		var tried [3]int // lookups served by TryLookup, TryLookupBranchy and TryLookupPalette
		looked := 0
		for i, rt := range tabs {
			enc := v.Encode(rt.t)
			run := 0
			for pc := uint32(i) % step; pc < rt.t.Len; pc += step {
				for run+1 < len(rt.t.Runs) && rt.t.Runs[run+1].PC <= pc {
					run++
				}
				want := rt.t.Runs[run].Value
				if got := s.Lookup(offs[i], rt.t.Len, pc); got != want {
					t.Fatalf("%s: table %#x pc %d: Set.Lookup = %d, want %d", v.Name, rt.off, pc, got, want)
				}
				if got := s.LookupBranchy(offs[i], rt.t.Len, pc); got != want {
					t.Fatalf("%s: table %#x pc %d: Set.LookupBranchy = %d, want %d", v.Name, rt.off, pc, got, want)
				}
				if got, ok := s.TryLookup(offs[i], rt.t.Len, pc); ok && got != want {
					t.Fatalf("%s: table %#x pc %d: Set.TryLookup = %d, want %d", v.Name, rt.off, pc, got, want)
				} else if ok {
					tried[0]++
				}
				if got, ok := s.TryLookupPalette(offs[i], rt.t.Len, pc); ok && got != want {
					t.Fatalf("%s: table %#x pc %d: Set.TryLookupPalette = %d, want %d", v.Name, rt.off, pc, got, want)
				} else if ok {
					tried[2]++
				}
				if got, ok := s.TryLookupBranchy(offs[i], rt.t.Len, pc); ok && got != want {
					t.Fatalf("%s: table %#x pc %d: Set.TryLookupBranchy = %d, want %d", v.Name, rt.off, pc, got, want)
				} else if ok {
					tried[1]++
				}
				looked++
				if got := v.Lookup(enc, rt.t.Len, pc); got != want {
					t.Fatalf("%s: table %#x pc %d: Lookup = %d, want %d", v.Name, rt.off, pc, got, want)
				}
			}
			if v.IsSpec() {
				dec, err := Decode(enc, rt.t.Len)
				if err != nil {
					t.Fatalf("table %#x: Decode: %v", rt.off, err)
				}
				want := Canonical(rt.t)
				if len(dec.Runs) != len(want.Runs) {
					t.Fatalf("table %#x: Decode gives %d runs, want %d", rt.off, len(dec.Runs), len(want.Runs))
				}
				for k := range dec.Runs {
					if dec.Runs[k] != want.Runs[k] {
						t.Fatalf("table %#x: run %d = %v, want %v", rt.off, k, dec.Runs[k], want.Runs[k])
					}
				}
			}
		}
		// The leaf lookups must serve most lookups of the variants they
		// cover (86% of every PC of every table of the go command: all
		// but long tables, 4-byte indexes and chunks with many changes),
		// and none of the others.
		t.Logf("%s: of %d lookups, TryLookup served %d, TryLookupBranchy %d, TryLookupPalette %d", v.Name, looked, tried[0], tried[1], tried[2])
		for k, name := range []string{"TryLookup", "TryLookupBranchy", "TryLookupPalette"} {
			covers := v.IsSpec() && k < 2 || k == 0 && v.kind == kindCompactFast || k == 2 && v.kind == kindCompactPalette
			if covers && tried[k] < looked*8/10 || !covers && tried[k] != 0 {
				t.Errorf("%s: %s served %d of %d lookups", v.Name, name, tried[k], looked)
			}
			if covers {
				served[v.Name] = tried[k]
			}
		}
	}
	// The palette variants' leaf lookup reads the index forms
	// compact-fast's does (the 2-byte one included): it may leave only
	// a few more lookups (chunks with more changes) to Set.Lookup.
	for _, name := range []string{"cf-palette", "cf-palette-short"} {
		if cf := served["compact-fast"]; served[name] < cf*98/100 {
			t.Errorf("%s: TryLookupPalette served %d lookups, compact-fast's TryLookup %d", name, served[name], cf)
		}
	}
}

// TestRealRareShare measures on the local go binary the share of lookups
// that take a rare form's branch (a short table or a palette chunk), each
// distinct table weighted alike and its PCs uniformly, with the size, for
// cf-palette-short and for cfps-offset with its rule (see cpRare) at other
// prices too (-v prints them), and checks that cfps-offset's rule keeps
// fewer than half of cf-palette-short's there.
func TestRealRareShare(t *testing.T) {
	f, tabs := realTables(t)
	varint := 0
	for _, rt := range tabs {
		varint += len(rt.raw)
	}
	cp, co := variantByName(t, "cf-palette-short"), variantByName(t, "cfps-offset")
	at := func(rare uint8) Variant { v := co; v.rare = rare; return v }
	share := map[string]float64{}
	for _, tc := range []struct {
		name string
		v    Variant
	}{{"cf-palette-short", cp}, {"cfps-offset", co}, {"cfps-offset, any saving", at(0)}, {"cfps-offset, 4 bytes a lookup", at(4)}, {"cfps-offset, 8 bytes a lookup", at(8)}, {"cfps-offset, 12 bytes a lookup", at(12)}} {
		if testing.Short() && tc.v.rare != 0 && tc.v.rare != cpRare {
			continue
		}
		s := NewSet(tc.v)
		offs := make([]uint32, len(tabs))
		for i, rt := range tabs {
			offs[i] = s.Add(rt.t)
		}
		d := s.Bytes()
		var sum float64
		for i, rt := range tabs {
			rare := 0
			for pc := range rt.t.Len {
				if rarePath(d, offs[i], rt.t.Len, pc) {
					rare++
				}
			}
			sum += float64(rare) / float64(rt.t.Len)
		}
		share[tc.name] = sum / float64(len(tabs))
		t.Logf("%s %-31s %4.1f%% of lookups on a rare form's path; %d bytes, %+.3f%% of the file", f.GoVersion, tc.name+":", 100*share[tc.name], s.Size(), 100*float64(s.Size()-varint)/float64(f.FileSize))
	}
	if share["cfps-offset"] > share["cf-palette-short"]/2 {
		t.Errorf("cfps-offset takes %.1f%% of lookups to a rare form, more than half of cf-palette-short's %.1f%%", 100*share["cfps-offset"], 100*share["cf-palette-short"])
	}
}

// rarePath reports whether the lookup of pc in the palette-variant table at
// d[off:] takes a short table's or a palette chunk's code.
func rarePath(d []byte, off, textLen, pc uint32) bool {
	if textLen > ChunkUnits && d[off] == cpShort {
		return true
	}
	return d[chunkOffset(d, int(off), textLen, pc)]&3 == 3
}
