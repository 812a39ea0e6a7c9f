package tracestore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSpillEverything builds stores of recorded traces with a memory limit
// so small that everything the builder spills does (the function and line
// indexes in many runs, the lane records in sorted runs, the spans in
// groups) and with one so large that nothing does, and finds the same
// files byte for byte, the manifest included.
func TestSpillEverything(t *testing.T) {
	longLanes, err := os.ReadFile(filepath.Join("testdata", "long-lanes.trace"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"recorded", smallTrace(t)}, {"long-lanes.trace", longLanes}} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(mem int64) (string, buildStats) {
				dir := t.TempDir()
				var st buildStats
				if _, err := buildInto(bytes.NewReader(tc.data), dir, MinPageSize, Options{MemLimit: mem, stats: &st}); err != nil {
					t.Fatal(err)
				}
				return dir, st
			}
			large, ls := build(1 << 30)
			if ls.funcRuns+ls.lineRuns != 0 || ls.laneRuns != 1 || ls.spanGroups != 1 {
				t.Fatalf("spilled at 1 GiB: %+v", ls)
			}
			defer func(g, i int64) { minGroupBytes, minIndexBytes = g, i }(minGroupBytes, minIndexBytes)
			minGroupBytes, minIndexBytes = spanBytes, 1
			// An eighth of the limit for each index: some 20 keys; a
			// quarter for a group: 40 spans; an eighth for a run of lane
			// records: 20.
			tiny, ts := build(8 * 20 * laneRecBytes)
			if ts.funcRuns < 3 || ts.lineRuns < 3 || ts.laneRuns < 3 || ts.spanGroups < 3 {
				t.Fatalf("a tiny limit spilled too little: %+v", ts)
			}
			t.Logf("tiny limit: %+v", ts)
			ents, err := os.ReadDir(large)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadDir(tiny); len(got) != len(ents) {
				t.Errorf("%d files spilled, %d not", len(got), len(ents))
			}
			for _, e := range ents {
				x, _ := os.ReadFile(filepath.Join(large, e.Name()))
				y, err := os.ReadFile(filepath.Join(tiny, e.Name()))
				if err != nil || !bytes.Equal(x, y) {
					t.Errorf("%s differs when everything spills (%d bytes, %d not): %v", e.Name(), len(y), len(x), err)
				}
			}
			if _, err := Open(tiny); err != nil {
				t.Fatal(err)
			}
		})
	}
}
