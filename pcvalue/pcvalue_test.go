package pcvalue

import "testing"

func TestLookup(t *testing.T) {
	tab := Table{Runs: []Run{{0, -1}, {4, 7}, {4, 9}, {10, -3}}, Len: 16}
	for _, tc := range []struct {
		pc   uint32
		want int32
		ok   bool
	}{
		{0, -1, true}, {3, -1, true},
		{4, 9, true}, // the empty run at 4 is overridden by the next one
		{9, 9, true}, {10, -3, true}, {15, -3, true},
		{16, -1, false}, {1 << 31, -1, false},
	} {
		if v, ok := tab.Lookup(tc.pc); v != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%d) = %d, %v; want %d, %v", tc.pc, v, ok, tc.want, tc.ok)
		}
	}
	var empty Table
	if v, ok := empty.Lookup(0); v != -1 || ok {
		t.Errorf("empty table: Lookup(0) = %d, %v", v, ok)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		tab  Table
		ok   bool
	}{
		{"empty", Table{}, true},
		{"one run", Table{Runs: []Run{{0, 5}}, Len: 1}, true},
		{"empty run kept", Table{Runs: []Run{{0, 5}, {3, 6}, {3, 7}}, Len: 4}, true},
		{"first run not at 0", Table{Runs: []Run{{1, 5}}, Len: 4}, false},
		{"decreasing", Table{Runs: []Run{{0, 5}, {3, 6}, {2, 7}}, Len: 4}, false},
		{"past the end", Table{Runs: []Run{{0, 5}, {5, 6}}, Len: 4}, false},
	} {
		if err := tc.tab.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
