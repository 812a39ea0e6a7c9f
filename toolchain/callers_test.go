package toolchain

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCallersOutput builds testdata/callers, which prints what
// runtime.Callers, CallersFrames, Caller and FuncForPC say about its own
// stacks (inlined calls, wrappers, generics, a sigpanic, every skip, full
// buffers, goroutines on several threads, each case several times so
// that per-PC caches answer), with the stock toolchain and in every
// patched flavour, and the default in a random function layout, and
// checks that every one prints what stock does.
// Where cgo is on, it does the same with testdata/callerscgo, whose stacks
// cross C frames (Go called back from C called from Go).
func TestCallersOutput(t *testing.T) {
	tc := testToolchain(t)
	progs := []string{"callers"}
	if out, err := exec.Command(tc.StockGoCommand(), "env", "CGO_ENABLED").Output(); err == nil && string(bytes.TrimSpace(out)) == "1" {
		progs = append(progs, "callerscgo")
	} else {
		t.Logf("cgo is off (%v): testdata/callerscgo not run", err)
	}
	for _, prog := range progs {
		t.Run(prog, func(t *testing.T) {
			var want []byte
			// The default flavour also in a random function layout, as
			// libbench -layouts builds it.
			for _, fl := range append(Flavours(), Flavour{Name: "default-randlayout", Layout: 1}) {
				got := runCallers(t, tc, prog, fl, "", nil)
				if fl.Baseline() {
					want = got
					if least := map[string]int{"callers": 1 << 20, "callerscgo": 16 << 10}[prog]; len(want) < least {
						t.Fatalf("stock printed %d bytes, want at least %d", len(want), least)
					}
					continue
				}
				compareCallers(t, fl.Name, got, want)
			}
		})
	}
}

// TestCallersOutputEmulated is TestCallersOutput for linux/arm64 and
// big-endian linux/s390x under qemu-user, machines whose calls save the
// return address in a link register, for the default flavour and the one
// without the walk of cached frames on the goroutine's stack.
func TestCallersOutputEmulated(t *testing.T) {
	tc := testToolchain(t)
	for _, em := range emulators(t) {
		arch, qemu := em.arch, em.qemu
		t.Run(arch, func(t *testing.T) {
			want := runCallers(t, tc, "callers", Flavour{Name: "stock", Stock: true}, arch, []string{qemu})
			for _, fl := range []Flavour{{Name: "default"}, {Name: "nofastcallers", Tags: []string{NoFastCallersTag}}} {
				compareCallers(t, fl.Name, runCallers(t, tc, "callers", fl, arch, []string{qemu}), want)
			}
		})
	}
}

// runCallers builds testdata/PROG in flavour fl, for goarch if it is not
// "", and returns what it prints, run under the emulator exec if that is
// not empty.
func runCallers(t *testing.T, tc *Toolchain, prog string, fl Flavour, goarch string, exec_ []string) []byte {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", prog))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%s-%s", prog, fl.Name, goarch))
	var env []string
	if goarch != "" {
		env = []string{"GOARCH=" + goarch, "CGO_ENABLED=0"}
	}
	if err := tc.GoBuild(context.Background(), BuildOptions{Dir: dir, Package: ".", Out: out, Stock: fl.Stock, Flags: fl.BuildFlags(), Env: env}); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), exec_...), out)
	got, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", fl.Name, goarch, err)
	}
	return got
}

// compareCallers reports the first line where got, what flavour name
// printed, differs from want, stock's.
func compareCallers(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range min(len(gl), len(wl)) {
		if !bytes.Equal(gl[i], wl[i]) {
			t.Errorf("%s: line %d is %q, stock's %q", name, i+1, gl[i], wl[i])
			break
		}
	}
	t.Errorf("%s: %d lines, stock %d; the output differs", name, len(gl), len(wl))
}

// TestCallersFastInstructions counts the instructions of
// testdata/unwindbench's calls (Callers of 1 PC four frames up, of 32 PCs
// through a recursion, through inlined calls, and Caller) under
// cachegrind, in the default flavour, in nofastcallers and with stock
// Go, and requires the default's walk of cached frames to take effect:
// at most half of nofastcallers' instructions and a quarter of stock's on
// each (measured 2026-12-06: 0.20-0.35× and 0.09-0.14×).
func TestCallersFastInstructions(t *testing.T) {
	tc := testToolchain(t)
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("no valgrind:", err)
	}
	dir, err := filepath.Abs("testdata/unwindbench")
	if err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	o := InstrOptions{Dir: dir, Package: ".", Bench: "^Benchmark(Callers1|Callers32|CallersInlined|Caller)$",
		Work: t.TempDir(), Target: 2 * time.Millisecond, Flavours: []string{"default", "nofastcallers"}}
	if err := tc.Instructions(context.Background(), o, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.Bytes())
	}
	counts := parseInstructions(t, out.String())
	for _, b := range []string{"Callers1", "Callers32", "CallersInlined", "Caller"} {
		stock, def, nofast := counts["stock"][b], counts["default"][b], counts["nofastcallers"][b]
		if stock == 0 || def == 0 || nofast == 0 {
			t.Errorf("%s: counts stock %d, default %d, nofastcallers %d\n%s", b, stock, def, nofast, out.Bytes())
			continue
		}
		t.Logf("%s: stock %d, default %d (%.3f×), nofastcallers %d", b, stock, def, float64(def)/float64(stock), nofast)
		if 2*def > nofast || 4*def > stock {
			t.Errorf("%s: default %d instructions/op, nofastcallers %d, stock %d: the walk of cached frames does not take effect", b, def, nofast, stock)
		}
	}
}

// parseInstructions reads Instructions' output: per flavour ("toolchain:
// NAME" lines), each benchmark's instructions per operation, by its name
// without "Benchmark".
func parseInstructions(t *testing.T, s string) map[string]map[string]int64 {
	t.Helper()
	counts := map[string]map[string]int64{}
	flavour := ""
	for _, line := range strings.Split(s, "\n") {
		if name, ok := strings.CutPrefix(line, "toolchain: "); ok {
			flavour = name
			counts[flavour] = map[string]int64{}
			continue
		}
		f := strings.Fields(line)
		if len(f) == 4 && strings.HasPrefix(f[0], "Benchmark") && f[3] == "instructions/op" && flavour != "" {
			v, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			counts[flavour][strings.TrimPrefix(f[0], "Benchmark")] = v
		}
	}
	return counts
}
