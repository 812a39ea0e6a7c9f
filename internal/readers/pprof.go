package readers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pctab/pctab/toolchain"
)

// PprofPackage is the package whose benchmark CheckPprof profiles, and
// PprofBench the benchmark.
const (
	PprofPackage = "compress/flate"
	PprofBench   = "^BenchmarkEncode$/Digits"
)

// PprofFunc is the function whose instructions CheckPprof disassembles.
const PprofFunc = "findMatch"

// CheckPprof checks go tool pprof on a CPU profile of a patched program:
// PprofPackage's test binary built by the patched toolchain without DWARF
// (-ldflags=-w, so that pprof must read the pclntab), run for a CPU
// profile, and by the twin, at the same addresses. The truth is the stock
// toolchain's pprof reading the twin with that profile; the released
// reader is the stock pprof reading the patched binary, the patched one
// the patched toolchain's pprof (its debug/gosym patched). Each runs
// -symbolize=force -lines -traces (every sample symbolized again from the
// binary) and -disasm PprofFunc (the source line of every instruction).
// The binaries and the profile go to dir.
func CheckPprof(ctx context.Context, tc *toolchain.Toolchain, dir string) (*Result, error) {
	r := &Result{Reader: "go tool pprof", Version: tc.Version, Format: "default", Check: "-symbolize=force -traces; -disasm " + PprofFunc}
	patchedBin, twinBin := filepath.Join(dir, "flate.patched"), filepath.Join(dir, "flate.twin")
	for _, b := range []struct {
		out  string
		twin bool
	}{{patchedBin, false}, {twinBin, true}} {
		cmd := exec.CommandContext(ctx, tc.GoCommand(b.twin), "test", "-c", "-ldflags=-w", "-o", b.out, PprofPackage)
		cmd.Env = tc.Env(b.twin)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("readers: go test -c %s: %w\n%s", PprofPackage, err, out)
		}
	}
	profile := filepath.Join(dir, "cpu.pprof")
	cmd := exec.CommandContext(ctx, patchedBin, "-test.run=^$", "-test.bench="+PprofBench, "-test.benchtime=3x", "-test.cpuprofile="+profile)
	cmd.Dir = filepath.Join(tc.GOROOT, "src", filepath.FromSlash(PprofPackage)) // its testdata
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("readers: %s: %w\n%s", patchedBin, err, out)
	}
	stockGo := tc.StockGoCommand()
	pprof := func(goCmd string, env []string, bin string) (traces, disasm string, err error) {
		var outs [2]string
		for i, args := range [][]string{
			{"tool", "pprof", "-symbolize=force", "-lines", "-traces", bin, profile},
			{"tool", "pprof", "-disasm=" + PprofFunc, bin, profile},
		} {
			var out, stderr bytes.Buffer
			c := exec.CommandContext(ctx, goCmd, args...)
			c.Env = env
			c.Stdout, c.Stderr = &out, &stderr
			if err := c.Run(); err != nil {
				return "", "", fmt.Errorf("readers: %s %s: %w\n%s", goCmd, strings.Join(args, " "), err, stderr.Bytes())
			}
			// Drop the "File:" header, which names the binary, and
			// name the twin's GOROOT as the patched one.
			s := strings.ReplaceAll(out.String(), tc.TwinGOROOT, tc.GOROOT)
			s = regexp.MustCompile(`(?m)^File: .*\n`).ReplaceAllString(s, "")
			outs[i] = s
		}
		return outs[0], outs[1], nil
	}
	stockEnv := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	wantT, wantD, err := pprof(stockGo, stockEnv, twinBin)
	if err != nil {
		return nil, err
	}
	badT, badD, err := pprof(stockGo, stockEnv, patchedBin)
	if err != nil {
		return nil, err
	}
	gotT, gotD, err := pprof(tc.GoCommand(false), tc.Env(false), patchedBin)
	if err != nil {
		return nil, err
	}
	describe := func(traces, disasm string) string {
		same := "the same traces"
		if traces != wantT {
			same = "other traces"
		}
		return fmt.Sprintf("%s; %d of %d instructions with a line", same, sourceLines(disasm), instructions(disasm))
	}
	r.Released, r.Patched = describe(badT, badD), describe(gotT, gotD)
	r.Broken = badT != wantT || badD != wantD
	r.OK = gotT == wantT && gotD == wantD && instructions(wantD) > 0 && sourceLines(wantD) > 0
	if !r.OK {
		r.Patched += "; want " + describe(wantT, wantD)
	}
	return r, nil
}

var (
	instrRE = regexp.MustCompile(`(?m)^\s+\S+\s+\S+\s+[0-9a-f]+: `)
	srcRE   = regexp.MustCompile(`(?m)^\s+\S+\s+\S+\s+[0-9a-f]+: .*;.*\.go:\d+`)
)

// instructions counts the instruction lines of pprof -disasm's output,
// sourceLines those with a source line.
func instructions(disasm string) int { return len(instrRE.FindAllString(disasm, -1)) }

func sourceLines(disasm string) int { return len(srcRE.FindAllString(disasm, -1)) }
