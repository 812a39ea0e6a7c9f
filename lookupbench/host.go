package lookupbench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strings"
)

// Host describes the machine that timed the lookups.
type Host struct {
	GOOS       string `json:"goos"`   // of the timing process
	GOARCH     string `json:"goarch"` // of the timing process
	CPU        string `json:"cpu,omitempty"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// Emulated is set when the process's GOARCH differs from the family of
	// the CPU /proc/cpuinfo describes, as when a GOARCH=arm64 build runs
	// under qemu-aarch64 on an x86 machine: the timings are then those of
	// the emulator's translated code.
	Emulated bool   `json:"emulated"`
	Note     string `json:"note,omitempty"`
}

// CurrentHost describes the running process and its machine.
func CurrentHost() Host {
	h := Host{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return h
	}
	name, family := parseCPUInfo(info)
	h.CPU = name
	if want := archFamily(runtime.GOARCH); family != "" && want != "" && family != want {
		h.Emulated = true
		h.Note = "GOARCH=" + runtime.GOARCH + " process on a CPU of the " + family + " family: timings are emulated (qemu user mode)"
	}
	return h
}

// parseCPUInfo returns the CPU model name and the architecture family that
// a Linux /proc/cpuinfo describes, "" when unknown. Under qemu user mode the
// file is the host's.
func parseCPUInfo(info []byte) (name, family string) {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "cpu model":
			if name == "" {
				name = v
			}
		case "vendor_id":
			if strings.Contains(v, "S390") {
				family = "s390"
			} else if family == "" {
				family = "x86"
			}
		case "CPU implementer":
			family = "arm"
		case "isa":
			if strings.HasPrefix(v, "rv") {
				family = "riscv"
			}
		case "cpu":
			if strings.Contains(v, "POWER") {
				family = "ppc"
				if name == "" {
					name = v
				}
			}
		}
	}
	return name, family
}

// archFamily maps a GOARCH to the family parseCPUInfo reports.
func archFamily(goarch string) string {
	switch goarch {
	case "amd64", "386":
		return "x86"
	case "arm64", "arm":
		return "arm"
	case "s390x":
		return "s390"
	case "riscv64":
		return "riscv"
	case "ppc64", "ppc64le":
		return "ppc"
	}
	return ""
}
