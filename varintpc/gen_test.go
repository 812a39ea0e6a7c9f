package varintpc

import (
	"math/rand/v2"

	"github.com/pctab/pctab/pcvalue"
)

// genTable returns a random valid table whose consecutive runs differ in
// value and have positive length, as the linker writes them. The shapes
// cover small and large values (up to 4 bytes, negative), -1 at PC 0,
// long runs and dense changes.
func genTable(r *rand.Rand) pcvalue.Table {
	nruns := 1 + r.IntN(40)
	if r.IntN(10) == 0 {
		nruns = 1 + r.IntN(2000)
	}
	var t pcvalue.Table
	var pc uint32
	val := int32(-1)
	for i := range nruns {
		var v int32
		switch r.IntN(6) {
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
		switch r.IntN(4) {
		case 0:
			l = 1
		case 1:
			l = uint32(1 + r.IntN(10))
		case 2:
			l = uint32(1 + r.IntN(300))
		default:
			l = uint32(1 + r.IntN(100000))
		}
		pc += l
	}
	t.Len = pc
	return t
}
