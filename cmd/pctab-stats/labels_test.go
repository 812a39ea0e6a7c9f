package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pctab/pctab/internal/cputime"
	"github.com/pctab/pctab/trampoline"
)

//go:noinline
func labelsSpin(n int) int {
	x := 0
	for i := range n {
		x += i * i % 7
	}
	return x
}

// TestLabels profiles labelled work in this test process, then runs
// pctab-stats labels on the profile and this binary: every sample of the
// work must carry its label, and go tool pprof's -tagfocus must find it.
func TestLabels(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, err := trampoline.New("query", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	b, err := trampoline.New("query", "beta")
	if err != nil {
		t.Fatal(err)
	}
	var pbuf bytes.Buffer
	if err := pprof.StartCPUProfile(&pbuf); err != nil {
		t.Fatal(err)
	}
	c0, _ := cputime.Process()
	for c := c0; c-c0 < 300*time.Millisecond; c, _ = cputime.Process() {
		a.Do(func() { labelsSpin(100000) })
		b.Do(func() { labelsSpin(300000) })
	}
	pprof.StopCPUProfile()
	a.Close()
	b.Close()
	pp, hp, out := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "history.json"), filepath.Join(dir, "labelled.pprof")
	if err := os.WriteFile(pp, pbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	hf, err := os.Create(hp)
	if err != nil {
		t.Fatal(err)
	}
	if err := trampoline.WriteHistory(hf); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"labels", "-json", "-history", hp, "-pprof", pp, "-o", out, exe}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res struct {
		SchemaVersion int   `json:"schema_version"`
		Trampolines   int   `json:"trampolines"`
		Samples       int64 `json:"samples"`
		Through       int64 `json:"through"`
		Labelled      int64 `json:"labelled"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	checkJSONValue(t, "labels", stdout.Bytes())
	if res.SchemaVersion != labelsSchemaVersion || res.Trampolines != trampoline.N || res.Through == 0 || res.Labelled != res.Through {
		t.Fatalf("result %+v", res)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, s := range p.Sample {
		for _, v := range s.Label["query"] {
			seen[v] += s.Value[0]
		}
	}
	if seen["alpha"] == 0 || seen["beta"] == 0 || seen["beta"] < seen["alpha"] {
		t.Errorf("samples per label %v: want both, beta (3x the work) above alpha", seen)
	}
	// go tool pprof -tagfocus selects the labelled samples.
	cmd := exec.Command("go", "tool", "pprof", "-top", "-tagfocus=query=beta", out)
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, o)
	}
	if !strings.Contains(string(o), "labelsSpin") {
		t.Errorf("-tagfocus=query=beta shows no labelsSpin:\n%s", o)
	}
}
