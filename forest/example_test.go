package forest_test

import (
	"fmt"

	"github.com/pctab/pctab/forest"
)

func ExampleForest_Query() {
	// The longest span of a range of spans, and which one it is.
	f := forest.New(forest.Longest, forest.NoSpan)
	for id, dur := range []int64{30, 10, 70, 20, 70, 5} {
		f.Append(forest.Span{Dur: dur, ID: uint64(id)})
	}
	fmt.Println(f.Query(0, 2), f.Query(1, 6), f.Query(3, 4))
	// Output: {30 0} {70 2} {20 3}
}

func ExampleBlocked() {
	// A count of events per range, one forest leaf per block of 4
	// events; the events at both ends of a range are read one by one.
	durs := []int64{5, 1, 4, 1, 5, 9, 2, 6, 5, 3}
	b := forest.NewBlocked(forest.New(forest.Sum[int64], 0), 4)
	for _, d := range durs {
		b.Append(d)
	}
	total := b.Query(1, 10, func(i int) int64 { return durs[i] })
	fmt.Println(total, b.Forest().Len())
	// Output: 36 2
}
