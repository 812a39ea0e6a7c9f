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

func ExampleStream() {
	// A forest's values written as they are made, into a file say; here a
	// slice, rewritten in place where a node's tree completes.
	var file []int64
	s := forest.NewStream(forest.Sum[int64], func(i int, v int64) error {
		for len(file) <= i {
			file = append(file, 0)
		}
		file[i] = v
		return nil
	})
	for _, v := range []int64{1, 2, 3, 4, 5} {
		s.Append(v)
	}
	f, _ := forest.FromValues(file, forest.Sum[int64], 0)
	fmt.Println(file, f.Query(1, 5))
	// Output: [1 3 2 10 3 7 4 10 5 5] 14
}
