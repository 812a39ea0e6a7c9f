package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/cli/clitest"
	"github.com/pctab/pctab/internal/jsonschema"
	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/labels"
	"github.com/pctab/pctab/tracestore/labels/labelstest"
	"github.com/pctab/pctab/tracestore/view"
)

//go:noinline
func hot(d time.Duration) {
	for t := time.Now(); time.Since(t) < d; {
	}
}

// traceFile records a small trace of goroutines that block on a channel.
func traceFile(t *testing.T) string {
	t.Helper()
	if trace.IsEnabled() {
		t.Skip("tracing is already enabled")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ch := make(chan int)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hot(100 * time.Microsecond)
			if i%2 == 0 {
				<-ch
			} else {
				ch <- i
			}
		}()
	}
	wg.Wait()
	trace.Stop()
	path := filepath.Join(t.TempDir(), "t.trace")
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCmd(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("pctab-trace %s: exit %d\n%s", strings.Join(args, " "), code, stderr.Bytes())
	}
	return stdout.String()
}

var jsonOutputs = []struct {
	name    string
	typ     reflect.Type
	version int
}{
	{"query", reflect.TypeFor[queryResult](), querySchemaVersion},
	{"agg", reflect.TypeFor[aggResult](), aggSchemaVersion},
	{"manifest", reflect.TypeFor[tracestore.Manifest](), tracestore.SchemaVersion},
	{"view-meta", reflect.TypeFor[view.Meta](), view.SchemaVersion},
	{"view-span", reflect.TypeFor[view.SpanInfo](), view.SchemaVersion},
	{"view-func", reflect.TypeFor[view.FuncCounts](), view.SchemaVersion},
	{"view-active", reflect.TypeFor[view.Active](), view.SchemaVersion},
	{"view-lanes", reflect.TypeFor[view.LanePage](), view.SchemaVersion},
	{"query-label", reflect.TypeFor[labelResult](), labelSchemaVersion},
	{"view-label", reflect.TypeFor[view.LabelCounts](), view.SchemaVersion},
}

// TestJSONSchemas fails when a field of a JSON output (the -json outputs,
// the store's manifest.json and the viewer's API) is added, removed or
// renamed without its schema_version changing, or is not snake_case.
// PCTAB_UPDATE_GOLDEN=1 rewrites testdata/*.fields.
func TestJSONSchemas(t *testing.T) {
	for _, o := range jsonOutputs {
		t.Run(o.name, func(t *testing.T) {
			jsonschema.Golden(t, filepath.Join("testdata", o.name+".fields"), jsonschema.Of(o.typ, o.version))
		})
	}
}

func schemaOf(name string) jsonschema.Schema {
	for _, o := range jsonOutputs {
		if o.name == name {
			return jsonschema.Of(o.typ, o.version)
		}
	}
	panic(name)
}

// TestCommands builds a store and runs every subcommand but serve on it,
// checking the outputs against the store's own queries.
func TestCommands(t *testing.T) {
	tr := traceFile(t)
	store := filepath.Join(t.TempDir(), "store")
	out := runCmd(t, "build", "-pagesize", "4096", tr, store)
	if !strings.Contains(out, "events") || !strings.Contains(out, "events.log") {
		t.Errorf("build printed:\n%s", out)
	}
	man, err := os.ReadFile(filepath.Join(store, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonschema.CheckValue(man, schemaOf("manifest")); err != nil {
		t.Errorf("manifest.json: %v", err)
	}
	s, err := tracestore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const fn = "github.com/pctab/pctab/cmd/pctab-trace.traceFile.func1"
	var want uint64
	d := s.Manifest().Duration
	if _, err := s.EventsThrough(fn, 0, d+1, func(*tracestore.Event) bool { want++; return true }); err != nil {
		t.Fatal(err)
	}
	if want == 0 {
		t.Fatalf("no events through %s", fn)
	}
	js := runCmd(t, "query", "-json", "-func", fn, store)
	if err := jsonschema.CheckValue([]byte(js), schemaOf("query")); err != nil {
		t.Errorf("query -json: %v", err)
	}
	var q queryResult
	if err := json.Unmarshal([]byte(js), &q); err != nil {
		t.Fatal(err)
	}
	if q.Stats.Matched != want {
		t.Errorf("query -json: %d events, the store says %d", q.Stats.Matched, want)
	}
	if out := runCmd(t, "query", "-func", fn, "-from", "0", "-to", "1h", store); !strings.Contains(out, "events through "+fn) {
		t.Errorf("query printed:\n%s", out)
	}
	js = runCmd(t, "agg", "-json", store)
	if err := jsonschema.CheckValue([]byte(js), schemaOf("agg")); err != nil {
		t.Errorf("agg -json: %v", err)
	}
	var a aggResult
	json.Unmarshal([]byte(js), &a)
	if len(a.Lanes) == 0 {
		t.Fatal("agg: no lanes")
	}
	for _, la := range a.Lanes {
		if la.Spans <= 0 || la.Busy < 0 || la.Busy > d+1 {
			t.Errorf("agg lane %+v", la)
		}
	}
	if out := runCmd(t, "agg", "-track", "goroutine", store); !strings.Contains(out, "busiest") {
		t.Errorf("agg printed:\n%s", out)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	clitest.Run(t, program(), []clitest.Case{
		{Name: "query without -func", Args: []string{"query", store}, Code: cli.ExitUsage, Stderr: []string{"-func", "usage: pctab-trace query"}, NoStdout: true},
		{Name: "query bad -line", Args: []string{"query", "-line", "x.go", store}, Code: cli.ExitUsage, Stderr: []string{"not FILE:LINE"}, NoStdout: true},
		{Name: "build without STORE", Args: []string{"build", tr}, Code: cli.ExitUsage, Stderr: []string{"want TRACE STORE"}, NoStdout: true},
		{Name: "agg bad -from", Args: []string{"agg", "-from", "x", store}, Code: cli.ExitUsage, Stderr: []string{"neither nanoseconds nor a duration"}, NoStdout: true},
		{Name: "old -page-size", Args: []string{"build", "-page-size", "4096", tr, missing}, Code: cli.ExitUsage, Stderr: []string{"not defined: -page-size"}, NoStdout: true},
		{Name: "agg of a missing store", Args: []string{"agg", missing}, Code: cli.ExitFailure, Stderr: []string{"pctab-trace: "}, NoStdout: true},
		{Name: "build from a missing trace", Args: []string{"build", missing, missing + ".store"}, Code: cli.ExitFailure, Stderr: []string{"no such file"}, NoStdout: true},
		{Name: "build from a file that is no trace", Args: []string{"build", store + "/manifest.json", missing + ".store"}, Code: cli.ExitFailure,
			Stderr: []string{"pctab-trace: building " + missing + ".store from " + store + "/manifest.json: "}, NoStdout: true},
		{Name: "build -pagesize not a power of two", Args: []string{"build", "-pagesize", "3000", tr, missing + ".store"}, Code: cli.ExitUsage, Stderr: []string{"-pagesize=3000: want a power of two from 1024"}, NoStdout: true},
		{Name: "build -mem too small", Args: []string{"build", "-mem", "1MiB", tr, missing + ".store"}, Code: cli.ExitUsage, Stderr: []string{"-mem=1MiB: want at least 4MiB"}, NoStdout: true},
		{Name: "build -mem 0", Args: []string{"build", "-mem", "0", tr, missing + ".store"}, Code: cli.ExitUsage, Stderr: []string{"-mem=0: want at least 4MiB"}, NoStdout: true},
		{Name: "agg unknown -track", Args: []string{"agg", "-track", "goroutines", store}, Code: cli.ExitUsage, Stderr: []string{`-track "goroutines": want one of goroutine, proc, thread, global`}, NoStdout: true},
		{Name: "agg -track thread", Args: []string{"agg", "-track", "thread", store}, Stdout: []string{"lanes with spans"}, NoStderr: true},
		{Name: "agg negative -from", Args: []string{"agg", "-from", "-5", store}, Code: cli.ExitUsage, Stderr: []string{"before the trace's start"}, NoStdout: true},
		{Name: "query negative -to", Args: []string{"query", "-func", fn, "-to=-1s", store}, Code: cli.ExitUsage, Stderr: []string{"before the trace's start"}, NoStdout: true},
		{Name: "agg flag after the store", Args: []string{"agg", store, "-json"}, Code: cli.ExitUsage, Stderr: []string{"flag -json after the argument"}, NoStdout: true},
	})
	if !strings.HasPrefix(js, "{\n\t\"schema_version\": ") {
		t.Errorf("agg -json is not indented with tabs:\n%.60s", js)
	}
	for _, a := range []string{"-build", "-json"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{a, store}, &stdout, &stderr); code != cli.ExitUsage || !strings.Contains(stderr.String(), "flag provided but not defined: "+a) {
			t.Errorf("pctab-trace %s STORE: exit %d, stderr %q", a, code, stderr.String())
		}
	}
}

// TestCommandLine checks the command-line convention (package cli): -h and
// help on stdout with exit 0, usage errors on stderr with exit 2.
func TestCommandLine(t *testing.T) {
	p := program()
	clitest.FlagNames(t, p)
	clitest.Run(t, p, append(clitest.Convention(p), []clitest.Case{
		{Name: "no arguments", Args: nil, Code: cli.ExitUsage, Stderr: []string{"The commands are:"}, NoStdout: true},
		{Name: "help lists the commands", Args: []string{"help"}, Stdout: []string{"build", "query", "agg", "serve"}, NoStderr: true},
		{Name: "help query", Args: []string{"help", "query"}, Stdout: []string{"-func", "-line", "-from"}, NoStderr: true},
		{Name: "serve without STORE", Args: []string{"serve"}, Code: cli.ExitUsage, Stderr: []string{"want STORE"}, NoStdout: true},
		{Name: "query bad -line, no store", Args: []string{"query", "-line", "x.go:y", "no-such-store"}, Code: cli.ExitUsage, Stderr: []string{"not FILE:LINE"}, NoStdout: true},
		// An empty or reversed time range is a usage error, found before
		// the store is opened.
		{Name: "query reversed range", Args: []string{"query", "-from", "5", "-to", "3", "-func", "main.main", "no-such-store"}, Code: cli.ExitUsage, Stderr: []string{"-from 5 -to 3", "reversed"}, NoStdout: true},
		{Name: "query empty range", Args: []string{"query", "-from", "1s", "-to", "1000ms", "-func", "main.main", "no-such-store"}, Code: cli.ExitUsage, Stderr: []string{"-from 1000000000 -to 1000000000", "empty"}, NoStdout: true},
		{Name: "query -label reversed range", Args: []string{"query", "-from", "5", "-to", "3", "-label", "k=v", "no-such-store"}, Code: cli.ExitUsage, Stderr: []string{"-from 5 -to 3"}, NoStdout: true},
		{Name: "query -to 0", Args: []string{"query", "-to", "0", "-func", "main.main", "no-such-store"}, Code: cli.ExitUsage, Stderr: []string{"-from 0 -to 0", "empty"}, NoStdout: true},
		{Name: "agg reversed range", Args: []string{"agg", "-from", "5", "-to", "3", "no-such-store"}, Code: cli.ExitUsage, Stderr: []string{"-from 5 -to 3", "reversed"}, NoStdout: true},
	}...))
}

// TestLabelCommands builds a store of the labelled workload with -labels
// and checks query -label against the index it wrote.
func TestLabelCommands(t *testing.T) {
	data, h := labelstest.Workload(t, 1500*time.Millisecond)
	dir := t.TempDir()
	tr, hist, store := filepath.Join(dir, "w.trace"), filepath.Join(dir, "h.json"), filepath.Join(dir, "store")
	var hb bytes.Buffer
	if err := json.NewEncoder(&hb).Encode(h); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr, data, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, hb.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	out := runCmd(t, "build", "-labels", hist, tr, store)
	if !strings.Contains(out, "labels.idx:") || !strings.Contains(out, "labelled") {
		t.Errorf("build -labels printed:\n%s", out)
	}
	x, err := openLabels(store)
	if err != nil || x == nil {
		t.Fatalf("labels.idx: %v", err)
	}
	// The manifest lists the index, checked, as an optional file.
	if st, err := tracestore.Open(store); err != nil {
		t.Fatal(err)
	} else {
		if _, err := st.File(labels.FileName); err != nil {
			t.Errorf("the manifest does not list %s: %v", labels.FileName, err)
		}
		st.Close()
	}
	q3 := labels.Label{Key: "query", Value: "q3"}
	js := runCmd(t, "query", "-json", "-label", "query=q3", store)
	if err := jsonschema.CheckValue([]byte(js), schemaOf("query-label")); err != nil {
		t.Errorf("query -label -json: %v", err)
	}
	var r labelResult
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	all := x.Samples(q3, -1<<63, 1<<63-1)
	if r.Samples != len(all) || r.LabelSamples != len(all) || len(all) == 0 || len(r.Funcs) == 0 {
		t.Errorf("query -label: %d samples (%d in all), the index %d", r.Samples, r.LabelSamples, len(all))
	}
	mid := all[len(all)/2].Time
	js = runCmd(t, "query", "-json", "-label", "query=q3", "-from", "0", "-to", strconv.FormatInt(mid, 10), store)
	json.Unmarshal([]byte(js), &r)
	if r.Samples != len(x.Samples(q3, 0, mid)) {
		t.Errorf("query -label -to %d: %d samples, the index %d", mid, r.Samples, len(x.Samples(q3, 0, mid)))
	}
	if out := runCmd(t, "query", "-label", "query=q3", store); !strings.Contains(out, "query=q3:") || !strings.Contains(out, "flat%") {
		t.Errorf("query -label printed:\n%s", out)
	}
	if !strings.HasPrefix(js, "{\n\t\"schema_version\": ") {
		t.Errorf("query -label -json is not indented with tabs:\n%.60s", js)
	}
	// Without -to, the range ends at the trace's end, as query's does.
	st, err := tracestore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	end := st.Manifest().Duration + 1
	st.Close()
	if out := runCmd(t, "query", "-label", "query=q3", store); !strings.Contains(out, fmt.Sprintf("samples in [0, %d)", end)) {
		t.Errorf("query -label's range does not end at the trace's end, %d:\n%s", end, out)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"query", "-label", "query", store}, &stdout, &stderr); code == 0 {
		t.Errorf("query -label without '=': exit 0")
	}
	// A history that does not read is refused before the store is built.
	bad, badStore := filepath.Join(dir, "bad.json"), filepath.Join(dir, "bad-store")
	if err := os.WriteFile(bad, []byte("not JSON"), 0o666); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"build", "-labels", bad, tr, badStore}, &stdout, &stderr); code != cli.ExitFailure || !strings.Contains(stderr.String(), "-labels "+bad+": ") {
		t.Errorf("build -labels BAD: exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(badStore); !os.IsNotExist(err) {
		t.Errorf("build -labels BAD left a store: %v", err)
	}
}

// TestDocs checks docs/pctab-trace.md against the commands' flags: each
// flag is documented, and each command line the docs show names only
// defined flags.
func TestDocs(t *testing.T) {
	page := []string{"docs/pctab-trace.md"}
	clitest.Docs(t, program(), clitest.DocConfig{Root: "../..", Pages: map[string][]string{
		"build": page, "query": page, "agg": page, "serve": page,
	}})
}
