package linearpc

import (
	"math"
	"math/rand/v2"

	"github.com/pctab/pctab/pcvalue"
)

// genTable returns a random valid table: consecutive runs differ in value
// and have positive length. Shapes cover small and large values (up to 4
// bytes, negative), -1 at PC 0, long runs and dense changes.
func genTable(r *rand.Rand) pcvalue.Table {
	nruns := 1 + r.IntN(40)
	if r.IntN(10) == 0 {
		nruns = 1 + r.IntN(2000)
	}
	dense := r.IntN(4) == 0
	var t pcvalue.Table
	var pc uint32
	val := int32(-1)
	for i := range nruns {
		var v int32
		switch r.IntN(7) {
		case 0:
			v = -1
		case 1:
			v = int32(r.IntN(16)) - 8
		case 2:
			v = val + int32(r.IntN(200)) - 100
		case 3:
			v = int32(r.Uint32())
		case 4:
			v = int32(r.IntN(70000)) - 35000
		case 5:
			v = []int32{math.MinInt32, math.MaxInt32, -129, 128, -32769, 32768}[r.IntN(6)]
		default:
			v = val + 1
		}
		if i > 0 && v == val {
			v++
		}
		if i == 0 && r.IntN(3) == 0 {
			v = -1
		}
		val = v
		t.Runs = append(t.Runs, pcvalue.Run{PC: pc, Value: v})
		var l uint32
		switch k := r.IntN(4); {
		case k == 0 || dense:
			l = uint32(1 + r.IntN(3))
		case k == 1:
			l = uint32(1 + r.IntN(10))
		case k == 2:
			l = uint32(1 + r.IntN(300))
		default:
			l = uint32(1 + r.IntN(100000))
		}
		pc += l
	}
	t.Len = pc
	if r.IntN(4) == 0 {
		// End inside the last run rather than at its end.
		t.Len -= uint32(r.IntN(int(pc - t.Runs[len(t.Runs)-1].PC)))
	}
	return t
}

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
