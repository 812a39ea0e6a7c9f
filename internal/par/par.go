// Package par runs independent pieces of work on a fixed number of
// goroutines.
package par

import (
	"sync"
	"sync/atomic"
)

// For calls fn(w, i) for every i in [0, n) on workers goroutines (at least
// one); w is the goroutine's number in [0, workers), so fn can keep
// per-worker state without locks. Worker w takes i = w, w+workers, ...
// A worker stops at its first error; For returns the error of the
// lowest-numbered worker that failed.
func For(n, workers int, fn func(w, i int) error) error {
	workers = max(1, workers)
	return run(workers, func(w int) func() (int, bool) {
		i := w - workers
		return func() (int, bool) { i += workers; return i, i < n }
	}, fn)
}

// Dynamic is [For] with the items handed out in order as workers become
// free, rather than in fixed strides: for a few items of very different
// cost, put the costliest first. A worker that fails stops taking items;
// the others finish theirs. Dynamic returns the error of the
// lowest-numbered worker that failed.
func Dynamic(n, workers int, fn func(w, i int) error) error {
	workers = max(1, min(workers, n))
	var next atomic.Int64
	return run(workers, func(int) func() (int, bool) {
		return func() (int, bool) { i := int(next.Add(1) - 1); return i, i < n }
	}, fn)
}

// run runs fn on workers goroutines, worker w taking the items its
// iterator items(w) yields until it is exhausted or fn fails, and returns
// the error of the lowest-numbered worker that failed.
func run(workers int, items func(w int) func() (int, bool), fn func(w, i int) error) error {
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			next := items(w)
			for i, ok := next(); ok; i, ok = next() {
				if err := fn(w, i); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
