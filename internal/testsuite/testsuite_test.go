package testsuite

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
	}{
		{"pass, fail and skip",
			`{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestX"}
{"Action":"fail","Package":"a","Test":"TestX"}
{"Action":"fail","Package":"a","Elapsed":1}
{"Action":"pass","Package":"b","Test":"TestY"}
{"Action":"pass","Package":"b","Elapsed":1}
{"Action":"skip","Package":"c","Elapsed":0}
`, map[string]string{"a": Fail, "b": Pass, "c": Skip}},
		{"a test's outcome is not the package's",
			`{"Action":"skip","Package":"a","Test":"TestX"}
{"Action":"pass","Package":"a"}
`, map[string]string{"a": Pass}},
		{"build failure",
			`{"ImportPath":"d [d.test]","Action":"build-output","Output":"x"}
{"ImportPath":"d [d.test]","Action":"build-fail"}
{"Action":"start","Package":"d"}
{"Action":"output","Package":"d","Output":"FAIL\td [build failed]\n"}
{"Action":"fail","Package":"d","Elapsed":0,"FailedBuild":"d [d.test]"}
`, map[string]string{"d": Fail}},
		{"build failure without the package's own event",
			`{"ImportPath":"e","Action":"build-fail"}
`, map[string]string{"e": Fail}},
		{"a rerun's outcome wins",
			`{"Action":"fail","Package":"a"}
{"Action":"pass","Package":"a"}
`, map[string]string{"a": Pass}},
		{"noise and a truncated last line",
			`panic: something
{"Action":"pass","Package":"a"}
{"Action":"pass","Pack`, map[string]string{"a": Pass}},
	} {
		got, err := Outcomes(strings.NewReader(tc.in))
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: Outcomes = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestCaseOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
	}{
		{"tests, not packages",
			`{"Action":"pass","Package":"a","Test":"TestX"}
{"Action":"skip","Package":"a","Test":"TestX/sub"}
{"Action":"pass","Package":"a"}
`, map[string]string{"a TestX": Pass, "a TestX/sub": Skip}},
		{"pointers in names",
			`{"Action":"pass","Package":"errors","Test":"TestAs/7:As(err,_0x2db37fe88070)"}
{"Action":"pass","Package":"errors","Test":"TestAsValidation/*string(0xC000012345)"}
`, map[string]string{"errors TestAs/7:As(err,_0x…)": Pass, "errors TestAsValidation/*string(0x…)": Pass}},
		{"coinciding names: a failure wins",
			`{"Action":"fail","Package":"a","Test":"T/0x1"}
{"Action":"pass","Package":"a","Test":"T/0x2"}
{"Action":"skip","Package":"a","Test":"T/0x3"}
`, map[string]string{"a T/0x…": Fail}},
		{"a rerun's outcome wins",
			`{"Action":"fail","Package":"a","Test":"T/0x1"}
{"Action":"pass","Package":"a","Test":"T/0x1"}
`, map[string]string{"a T/0x…": Pass}},
	} {
		got, err := CaseOutcomes(strings.NewReader(tc.in))
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: CaseOutcomes = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(JSONFile(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stock", `{"Action":"pass","Package":"a","Test":"TestA"}
{"Action":"skip","Package":"a","Test":"TestB"}
{"Action":"pass","Package":"a"}
{"Action":"pass","Package":"b"}
{"Action":"fail","Package":"c"}
{"Action":"skip","Package":"d"}
{"Action":"pass","Package":"x"}
`)
	write("patched", `{"Action":"pass","Package":"a","Test":"TestA"}
{"Action":"pass","Package":"a","Test":"TestB"}
{"Action":"pass","Package":"a","Test":"TestC"}
{"Action":"pass","Package":"a"}
{"Action":"fail","Package":"b"}
{"Action":"fail","Package":"c"}
{"Action":"skip","Package":"d"}
`)
	tab, err := Load(dir, []string{"stock", "patched"}, []string{"a", "b", "c", "d", "e"})
	if err != nil {
		t.Fatal(err)
	}
	if d := tab.Differences(); len(d) != 1 || d[0] != "b" {
		t.Errorf("Differences = %q, want [b] (x and e are not finished in both)", d)
	}
	all, common := tab.Totals(1)
	if want := (Totals{Pass: 1, Fail: 2, Skip: 1, Missing: 2}); all != want {
		t.Errorf("patched totals %+v, want %+v", all, want)
	}
	if want := (Totals{Pass: 1, Fail: 2, Skip: 1}); common != want {
		t.Errorf("patched totals over the packages both finished: %+v, want %+v", common, want)
	}
	if d := tab.TestDifferences(); len(d) != 2 || d[0] != "a TestB" || d[1] != "a TestC" {
		t.Errorf("TestDifferences = %q, want [a TestB, a TestC]", d)
	}
	var out bytes.Buffer
	if err := tab.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(1 of the 4 that every run has finished; 6 in the suite)", "\nb        pass     fail", "failing in every run (1): c\n", "a TestB  stock=skip  patched=pass\n", "a TestC  stock=-  patched=pass\n", "\nstock "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestExecute runs a module's tests as two runs with the local go command,
// the second with an environment variable that fails one test, and checks
// the outcomes, the difference, and that a second Execute resumes: it
// runs only what the first left undone.
func TestExecute(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":           "module m\n\ngo 1.24\n",
		"ok/ok_test.go":    "package ok\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"env/env_test.go":  "package env\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestEnv(t *testing.T) {\n\tif os.Getenv(\"TESTSUITE_FAIL\") != \"\" {\n\t\tt.Fatal(\"told to fail\")\n\t}\n}\n",
		"notest/x.go":      "package notest\n",
		"broken/b_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { undefined() }\n",
	}
	for name, s := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	runs := []Run{
		{Name: "a", Go: goCmd, Env: env, Dir: mod},
		{Name: "b", Go: goCmd, Env: append(slices.Clip(env), "TESTSUITE_FAIL=1"), Dir: mod},
	}
	dir := t.TempDir()
	pkgs := []string{"m/ok", "m/env", "m/notest", "m/broken"}
	o := Options{Dir: dir, Packages: pkgs, Runs: runs, Batch: 3, TestArgs: []string{"-count=1", "-vet=off"}}
	if err := Execute(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(dir, []string{"a", "b"}, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"m/ok": {Pass, Pass}, "m/env": {Pass, Fail}, "m/notest": {Skip, Skip}, "m/broken": {Fail, Fail}}
	for p, w := range want {
		if g := tab.Outcome[p]; len(g) != 2 || g[0] != w[0] || g[1] != w[1] {
			t.Errorf("%s: outcomes %q, want %q", p, g, w)
		}
	}
	if d := tab.Differences(); len(d) != 1 || d[0] != "m/env" {
		t.Errorf("Differences = %q, want [m/env]", d)
	}
	// Resume: nothing left to run. Then drop run b's last batch (m/broken)
	// and resume again: only that package runs.
	log, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
	if err := Execute(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if log2, _ := os.ReadFile(filepath.Join(dir, "runs.log")); !bytes.Equal(log, log2) {
		t.Errorf("a finished suite ran again:\n%s", log2[len(log):])
	}
	bj, err := os.ReadFile(JSONFile(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(bj), "\n") {
		if !strings.Contains(line, "broken") {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(JSONFile(dir, "b"), []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Execute(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	log3, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
	if added := string(log3[len(log):]); strings.Count(added, "\n") != 1 || !strings.Contains(added, " b ") || !strings.Contains(added, "1 run") {
		t.Errorf("resuming ran %q, want run b's one unfinished package", added)
	}
	if tab, err = Load(dir, []string{"a", "b"}, pkgs); err != nil || tab.Outcome["m/broken"][1] != Fail {
		t.Errorf("after resuming, m/broken in run b: %v (%v)", tab.Outcome["m/broken"], err)
	}
}

// TestExecuteStopped stops Execute while a test runs: the batch counts for
// nothing (the run's JSON file does not get it), so it runs again later.
func TestExecuteStopped(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	mod := t.TempDir()
	for name, s := range map[string]string{
		"go.mod":            "module m\n\ngo 1.24\n",
		"slow/slow_test.go": "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { time.Sleep(time.Minute) }\n",
	} {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	o := Options{Dir: dir, Packages: []string{"m/slow"}, Runs: []Run{{Name: "a", Go: goCmd, Env: env, Dir: mod}}, TestArgs: []string{"-count=1", "-vet=off"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Stop once TestSlow runs.
		for ctx.Err() == nil {
			b, _ := os.ReadFile(filepath.Join(dir, "a.partial.json"))
			if bytes.Contains(b, []byte(`"Action":"run","Package":"m/slow","Test":"TestSlow"`)) {
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if err := Execute(ctx, o); err == nil {
		t.Fatal("Execute stopped: no error")
	}
	if b, err := os.ReadFile(JSONFile(dir, "a")); err == nil && len(b) > 0 {
		t.Errorf("the stopped batch went into the run's JSON:\n%s", b)
	}
}
