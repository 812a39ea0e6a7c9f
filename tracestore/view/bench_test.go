package view

import (
	"fmt"
	"os"
	"testing"

	"github.com/pctab/pctab/tracestore"
)

// BenchmarkLaneList opens the store in $TRACESTORE_BENCH_STORE (or the
// recorded test store) and answers what the page asks before its first
// tile: /api/meta, the first page of 64 lanes with spans in the whole
// trace (/api/active) and their records (/api/lanes). Its time and
// allocations grow with neither the lanes nor the spans.
func BenchmarkLaneList(b *testing.B) {
	dir := os.Getenv("TRACESTORE_BENCH_STORE")
	if dir == "" {
		dir = recordStore(b).Dir()
	}
	b.ReportAllocs()
	for range b.N {
		s, err := tracestore.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		h := Handler(s)
		d := s.Manifest().Duration
		for _, q := range []string{"/api/meta", fmt.Sprintf("/api/active?t0=0&t1=%d&from=0&n=64", d+1), "/api/lanes?from=0&n=256"} {
			if w := serve(h, q); w.Code != 200 {
				b.Fatalf("%s: %d %s", q, w.Code, w.Body.Bytes())
			}
		}
		s.Close()
	}
}
