package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportSVG checks -svg: the table-kinds chart from the size report and,
// with -bench, the offset plot with one line per selected encoding.
func TestReportSVG(t *testing.T) {
	gofmt := gofmtBinary(t)
	dir := filepath.Join(t.TempDir(), "plots")
	cfg, err := parseReportFlags([]string{"-bench=pcs=offset=(0-512|512-1024)/enc=(varint|linear-compact-fast)$", "-benchtime=10x", "-count=2",
		"-variants=false", "-svg=" + dir, gofmt}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	smallSets(&cfg)
	var stdout, stderr bytes.Buffer
	if err := doReport(cfg, &stdout, &stderr); err != nil {
		t.Fatalf("doReport: %v\n%s", err, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "pcs=offset=0-512") || strings.Contains(out, "pcs=offset=1024-1536") || strings.Contains(out, "pcs=random") {
		t.Errorf("offset benchmarks not as selected:\n%s", out)
	}
	count := func(name, elem, attr string) (n int, vals []string) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(bytes.NewReader(data))
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v", name, err)
			}
			if e, ok := tok.(xml.StartElement); ok && e.Name.Local == elem {
				for _, a := range e.Attr {
					if a.Name.Local == attr {
						n++
						vals = append(vals, a.Value)
					}
				}
			}
		}
		return n, vals
	}
	if n, names := count("gofmt.lookup-offset.svg", "g", "data-name"); n != 2 || names[0] != "varint" || names[1] != "linear-compact-fast" {
		t.Errorf("offset plot series %q, want varint and linear-compact-fast", names)
	}
	if n, _ := count("gofmt.lookup-offset.svg", "circle", "cx"); n != 4 {
		t.Errorf("offset plot: %d points, want 2 encodings x 2 buckets", n)
	}
	if n, _ := count("gofmt.table-kinds.svg", "rect", "class"); n < 4 {
		t.Errorf("table-kinds chart: %d bars", n)
	}
	if _, err := parseReportFlags([]string{"-format=bench", "-svg=" + dir, gofmt}, &bytes.Buffer{}); err == nil {
		t.Error("-svg with -format=bench accepted")
	}
}
