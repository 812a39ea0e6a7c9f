package libbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/benchcmp"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/toolchain"
)

// setup builds (or finds cached) the patched toolchain and prepares a work
// module for libs in a temporary directory.
func setup(t *testing.T, libs ...string) Options {
	testenv.SkipUnlessLong(t, "builds the patched toolchain and downloads modules through the module proxy")
	ctx := context.Background()
	cache, err := toolchain.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := toolchain.Build(ctx, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Select(Suite(), libs)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	var log bytes.Buffer
	if err := Prepare(ctx, tc, work, sel, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.Bytes())
	}
	return Options{Toolchain: tc, Flavours: toolchain.Flavours(), Libraries: sel, WorkDir: work, BinDir: t.TempDir(), Count: 1, BenchTime: "10ms"}
}

// TestRunOneLibrary runs the suite on one small library, go-kit/log, one round in
// every flavour, whole and interleaved, and checks the shape of its results
// and summary.
func TestRunOneLibrary(t *testing.T) {
	o := setup(t, "go-kit/log")
	for _, interleave := range []bool{false, true} {
		o.Interleave = interleave
		t.Run(fmt.Sprintf("interleave=%v", interleave), func(t *testing.T) { testRun1(t, o) })
	}
}

func testRun1(t *testing.T, o Options) {
	var out, log bytes.Buffer
	if err := Run(context.Background(), o, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.Bytes())
	}
	res, err := ReadResults(bytes.NewReader(out.Bytes()), "sec/op")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Groups[0] != "go-kit/log" {
		t.Fatalf("libraries %q, want go-kit/log:\n%s", res.Groups, out.Bytes())
	}
	if len(res.Flavours) != len(o.Flavours) || res.Flavours[0] != "stock" {
		t.Errorf("flavours %q, want every one of toolchain.Flavours, stock first", res.Flavours)
	}
	for _, name := range []string{"OneWith", "ValueBindingCaller"} {
		for _, fl := range o.Flavours {
			if v := res.Values["go-kit/log"][benchcmp.Key{Name: name}][fl.Name]; len(v) != 1 || !(v[0] > 0) {
				t.Errorf("%s %s: times %v, want one positive", name, fl.Name, v)
			}
		}
	}
	if len(res.Keys["go-kit/log"]) != 2 {
		t.Errorf("benchmarks %v, want OneWith and ValueBindingCaller", res.Keys["go-kit/log"])
	}
	var sum bytes.Buffer
	if err := Summarize(bytes.NewReader(out.Bytes()), &sum, Suite()); err != nil {
		t.Fatal(err)
	}
	s := sum.String()
	for _, fl := range o.Flavours {
		if n := strings.Count(s, "\n"+fl.Name+" ") + strings.Count(s, " "+fl.Name+" "); n < 3 {
			t.Errorf("summary mentions flavour %s %d times, want its rows in the benchmark and price tables:\n%s", fl.Name, n, s)
		}
	}
	for _, want := range []string{"# go-kit/log\n", "\ngo-kit/log      2 ", "go-kit/log: caller valuer vs constant"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if t.Failed() {
		t.Logf("results:\n%s\nsummary:\n%s", out.Bytes(), s)
	}
}

// TestRunLayouts runs go-kit/log's OneWith benchmark (Only) stock and in
// the default flavour in two random function layouts, two rounds: each
// round's results must carry its layout, and the summary must pool them.
func TestRunLayouts(t *testing.T) {
	o := setup(t, "go-kit/log")
	o.Flavours, o.Count, o.Layouts, o.Interleave = toolchain.Flavours()[:2], 2, 2, true
	o.Only = regexp.MustCompile("^BenchmarkOneWith$")
	var out, log bytes.Buffer
	if err := Run(context.Background(), o, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.Bytes())
	}
	for _, fl := range o.Flavours {
		for _, layout := range []string{"1", "2"} {
			want := "toolchain: " + fl.Name + "\npkg: github.com/go-kit/log\nlayout: " + layout + "\n"
			if n := strings.Count(out.String(), want); n != 1 {
				t.Errorf("%d blocks of %q, want one:\n%s", n, want, out.Bytes())
			}
		}
	}
	res, err := ReadResults(bytes.NewReader(out.Bytes()), "sec/op")
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range o.Flavours {
		if v := res.Values["go-kit/log"][benchcmp.Key{Name: "OneWith"}][fl.Name]; len(v) != 2 {
			t.Errorf("OneWith %s: %d times, want one per layout", fl.Name, len(v))
		}
	}
	if strings.Contains(out.String(), "ValueBindingCaller") {
		t.Errorf("ran ValueBindingCaller, which Only leaves out:\n%s", out.Bytes())
	}
	o.Only = regexp.MustCompile("NoSuchBenchmark")
	if err := Run(context.Background(), o, io.Discard, io.Discard); err == nil {
		t.Errorf("Run with Only matching nothing succeeded")
	}
}

// TestTestsMatchStock runs pkg/errors' tests, whose expectations of stack
// output are older than Go 1.26 and fail on stock Go too, stock and in
// every patched flavour: the output, failures and stacks included, must be
// the same.
func TestTestsMatchStock(t *testing.T) {
	o := setup(t, "pkg/errors")
	var out, log bytes.Buffer
	err := Compare(context.Background(), o, &out, &log)
	if errors.Is(err, ErrOutputDiffers) {
		t.Fatalf("%v:\n%s", err, out.Bytes())
	} else if err != nil {
		t.Fatalf("%v\n%s", err, log.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(o.Flavours)-1 {
		t.Fatalf("%d lines, want one per patched flavour:\n%s", len(lines), out.Bytes())
	}
	for _, l := range lines {
		if !strings.Contains(l, "identical to stock") || !strings.Contains(l, "exit status 1)") {
			t.Errorf("%q: want identical output and the failure of stock Go (exit status 1)", l)
		}
	}
	// The compared output holds the failing tests' stacks: frames of the
	// tests and of the standard library, with their files and lines.
	stock, err := testRun(context.Background(), o, o.Flavours[0], "github.com/pkg/errors", "", []string{o.Toolchain.StockRoot}, &log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### TestFormatNew: fail\n", "github.com/pkg/errors.TestFormatNew\\n\\t", "format_test.go:26", "$GOROOT/src/testing/testing.go:"} {
		if !strings.Contains(stock.Output, want) {
			t.Errorf("stock output lacks %q:\n%s", want, stock.Output)
		}
	}
}
