package linearpc

import (
	"math"

	"github.com/pctab/pctab/pcvalue"
)

// denseTable returns a table of length n whose value changes at every PC
// from lo to hi-1 (and holds otherwise), with values from val.
func denseTable(n, lo, hi uint32, val func(i uint32) int32) pcvalue.Table {
	t := pcvalue.Table{Len: n, Runs: runs(0, -1)}
	for pc := lo; pc < hi; pc++ {
		v := val(pc)
		if v == t.Runs[len(t.Runs)-1].Value {
			v++
		}
		if pc == 0 {
			t.Runs[0].Value = v
			continue
		}
		t.Runs = append(t.Runs, pcvalue.Run{PC: pc, Value: v})
	}
	return t
}

// chunk0Sized returns a two-chunk table whose chunk 0 encodes (in the spec
// layout) in exactly size bytes, 100 <= size <= 355, so that the first
// index entry is size.
func chunk0Sized(size int) pcvalue.Table {
	// n changes in chunk 0, k of them needing 2 bytes:
	// 1 + n + (n+4)/4 + 1 + (n-k) + 2k = 2 + 2n + (n+4)/4 + k.
	n := 40
	for 2+2*(n+1)+(n+5)/4 <= size {
		n++
	}
	k := size - (2 + 2*n + (n+4)/4)
	t := pcvalue.Table{Len: 300, Runs: runs(0, 0)}
	for i := 1; i <= n; i++ {
		v := int32(1 + i%2)
		if i > n-k {
			v = int32(1000 + i%2)
		}
		t.Runs = append(t.Runs, pcvalue.Run{PC: uint32(i), Value: v})
	}
	t.Runs = append(t.Runs, pcvalue.Run{PC: 256, Value: 7})
	return t
}

// specialTables returns the hand-shaped tables every property test runs.
func specialTables() map[string]pcvalue.Table {
	alt := func(a, b int32) func(uint32) int32 {
		return func(i uint32) int32 {
			if i%2 == 0 {
				return a
			}
			return b
		}
	}
	return map[string]pcvalue.Table{
		"one pc":        {Len: 1, Runs: runs(0, -1)},
		"-1 then 0":     {Len: 700, Runs: runs(0, -1, 255, 0, 256, 1, 257, -1, 511, 5, 512, 6)},
		"crossing runs": {Len: 2000, Runs: runs(0, 3, 200, 4, 900, 3, 1500, 4)},
		"255 changes":   denseTable(768, 257, 512, alt(1, 2)),
		"255 wide":      denseTable(512, 1, 256, func(i uint32) int32 { return int32(i) * 100000 }),
		"every pc":      denseTable(1024, 0, 1024, func(i uint32) int32 { return int32(i*7919) - 5000 }),
		"2-byte index":  denseTable(2560, 0, 2560, alt(3, 4)),
		"4-byte index":  denseTable(256*300, 0, 256*300, alt(math.MinInt32, math.MaxInt32)),
		"first 0xfd":    chunk0Sized(0xfd),
		"first 0xfe":    chunk0Sized(0xfe),
		"first 0xff":    chunk0Sized(0xff),
		"first 0x100":   chunk0Sized(0x100),
		"extremes":      {Len: 600, Runs: runs(0, math.MinInt32, 1, math.MaxInt32, 2, math.MinInt32, 300, math.MaxInt32, 301, 0)},
		"const chunks":  {Len: 256 * 9, Runs: runs(0, 1, 100, 2, 256, 1, 768, 2, 1024, 1, 1300, 2)},
		"empty runs":    {Len: 400, Runs: runs(0, 5, 0, 6, 10, 7, 10, 8, 20, 8, 300, 9, 400, 10)},
		"short last":    {Len: 257, Runs: runs(0, 1, 256, 2)},
		"big constant":  {Len: 1 << 20, Runs: runs(0, 100000)},
		// Inlined code's lines: clusters of nearby values far apart, which
		// cfps-offset stores as an offset palette.
		"line clusters": denseTable(600, 0, 600, clusters(100, 5000, 70000)),
		"wide clusters": denseTable(600, 0, 600, clusters(math.MinInt32, 0, math.MaxInt32-300)),
	}
}

// clusters returns values that visit bases in turn, each plus a small
// offset that changes with the PC.
func clusters(bases ...int32) func(uint32) int32 {
	return func(i uint32) int32 {
		return bases[int(i)%len(bases)] + int32(i*37%251)
	}
}

// runs builds runs from (pc, value) pairs.
func runs(pv ...int64) []pcvalue.Run {
	out := make([]pcvalue.Run, 0, len(pv)/2)
	for i := 0; i+1 < len(pv); i += 2 {
		out = append(out, pcvalue.Run{PC: uint32(pv[i]), Value: int32(pv[i+1])})
	}
	return out
}
