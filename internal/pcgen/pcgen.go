// Package pcgen generates random PC-value tables for the codecs' property
// tests.
package pcgen

import (
	"math"
	"math/rand/v2"

	"github.com/pctab/pctab/pcvalue"
)

// Table returns a random valid table: consecutive runs differ in value
// and have positive length. Shapes cover small and large values (up to 4
// bytes, negative), -1 at PC 0, long runs and dense changes.
func Table(r *rand.Rand) pcvalue.Table {
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
