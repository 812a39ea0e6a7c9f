package labelstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/trampoline"
)

// multiGenEnv names the file a child test process writes the workload's
// trace to (and its history to the file named so plus ".json").
const multiGenEnv = "LABELSTEST_MULTIGEN_OUT"

// MultiGenWorkload runs Workload in a child process, the test binary
// itself running the test named helper (which calls MultiGenHelper), with
// a new trace generation every 5 ms (GODEBUG=traceadvanceperiod): a trace
// of many generations with CPU samples in most, for tests of cut traces.
// It returns the trace and the child's trampoline history.
func MultiGenWorkload(t testing.TB, helper string) ([]byte, trampoline.History) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "multigen.trace")
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), multiGenEnv+"="+out, "GODEBUG=traceadvanceperiod=5000000")
	if b, err := cmd.CombinedOutput(); testenv.ExecRefused(err) {
		// A test binary for another architecture, run under an emulator
		// (go test -exec) that the kernel does not know of.
		t.Skipf("cannot run the test binary itself: %v", err)
	} else if err != nil {
		t.Fatalf("%s: %v\n%s", helper, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := os.ReadFile(out + ".json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := trampoline.ReadHistory(bytes.NewReader(hb))
	if err != nil {
		t.Fatal(err)
	}
	return data, h
}

// MultiGenHelper is the child's side of MultiGenWorkload: it runs
// Workload for 300 ms of CPU time and writes the trace and the history
// where MultiGenWorkload reads them. Run by a test of its own, it skips.
func MultiGenHelper(t *testing.T) {
	out := os.Getenv(multiGenEnv)
	if out == "" {
		t.Skip("the child's side of labelstest.MultiGenWorkload")
	}
	data, h := Workload(t, 300*time.Millisecond)
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".json", hb, 0o666); err != nil {
		t.Fatal(fmt.Errorf("writing the history: %w", err))
	}
}
