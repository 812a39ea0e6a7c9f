package toolchain

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	var in strings.Builder
	in.WriteString("goos: linux\ngoarch: amd64\n")
	for round := range 6 {
		for _, fl := range []struct {
			name string
			ns   int
		}{{"stock", 100}, {"linear", 50}, {"linear-nocache", 200}, {"stock-align64", 200}} {
			in.WriteString("toolchain: " + fl.name + "\n")
			in.WriteString("BenchmarkX-2 \t1000\t" + itoa(fl.ns+round) + " ns/op\t8 B/op\n")
		}
	}
	var out bytes.Buffer
	if err := Summarize(strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if line == "" {
			continue
		}
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	want := []string{
		"benchmark flavour median ± ×stock paired ×stock [95%] p n",
		"X-2 stock 102.5ns 2% 6",
		"linear 52.5ns 5% 0.512 0.512 [0.500, 0.524] 0.002 6",
		"linear-nocache 202.5ns 1% 1.976 1.976 [1.952, 2.000] 0.002 6",
		"stock-align64 202.5ns 1% 1.976 1.976 [1.952, 2.000] 0.002 6",
		"# goals: every median ×stock <= 1.00 and every paired interval's upper bound <= 1.03",
		"linear 0 of 1 medians above 1.00; 0 of 1 upper bounds above 1.03 (highest 0.524: X-2)",
		// The 6th largest of the 36 ratios (50+i)/(100+j): 55/103.
		"two-sample intervals: 0 of 1 above 1.03 (highest 0.534: X-2)",
		"linear-nocache 1 of 1 medians above 1.00; 1 of 1 upper bounds above 1.03 (highest 2.000: X-2)",
		"1 of the 1 within the layout control stock-align64 (paired intervals overlap)",
		"two-sample intervals: 1 of 1 above 1.03 (highest 2.020: X-2)",
		"stock-align64 1 of 1 medians above 1.00; 1 of 1 upper bounds above 1.03 (highest 2.000: X-2)",
		"two-sample intervals: 1 of 1 above 1.03 (highest 2.020: X-2)",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary:\n%s\nwant rows:\n%s", got, strings.Join(want, "\n"))
	}
	if strings.Contains(got, "B/op") || strings.Contains(got, "linear-cf") {
		t.Errorf("summary shows a unit or flavour without results:\n%s", got)
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}
