package view

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pctab/pctab/tracestore"
)

// BenchmarkFirstFrame opens the store in $TRACESTORE_BENCH_STORE (or the
// recorded test store) and answers the page's first frame over the whole
// trace, each time on a newly opened store: "lanes" is what the page asks
// before its first tile (/api/meta, the first page of 64 lanes with spans,
// /api/active, and their records, /api/lanes), whose time and
// allocations grow with neither the lanes nor the spans; "tile" is the
// tile of 2,000 columns of those lanes, which grows with their spans.
func BenchmarkFirstFrame(b *testing.B) {
	dir := os.Getenv("TRACESTORE_BENCH_STORE")
	if dir == "" {
		dir = recordStore(b).Dir()
	}
	open := func(b *testing.B) (*tracestore.Store, Active) {
		s, err := tracestore.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		h := Handler(s)
		var act Active
		for _, q := range []string{"/api/meta", fmt.Sprintf("/api/active?t0=0&t1=%d&from=0&n=64", s.Manifest().Duration+1), "/api/lanes?from=0&n=256"} {
			w := serve(h, q)
			if w.Code != 200 {
				b.Fatalf("%s: %d %s", q, w.Code, w.Body.Bytes())
			}
			if strings.HasPrefix(q, "/api/active") {
				if err := json.Unmarshal(w.Body.Bytes(), &act); err != nil {
					b.Fatal(err)
				}
			}
		}
		return s, act
	}
	b.Run("lanes", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s, _ := open(b)
			s.Close()
		}
	})
	b.Run("tile", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			s, act := open(b)
			var f []string
			for _, l := range act.Lanes {
				f = append(f, strconv.Itoa(l))
			}
			q := fmt.Sprintf("/api/tile?t0=0&t1=%d&px=2000&lanes=%s", s.Manifest().Duration+1, strings.Join(f, ","))
			b.StartTimer()
			if w := serve(Handler(s), q); w.Code != 200 {
				b.Fatalf("%s: %d", q, w.Code)
			}
			s.Close()
		}
	})
}
