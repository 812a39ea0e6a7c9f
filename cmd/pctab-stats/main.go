// Command pctab-stats reports how big and how fast Go's PC-value tables are,
// in Go's varint format and in the linear-index format of golang/go#61984.
//
// Usage:
//
//	pctab-stats [flags] [BINARY...]      size report (default: $(go env GOROOT)/bin/go)
//	pctab-stats verify BINARY...         check every codec at every PC of every table
//	pctab-stats stacks [flags] [BINARY]  traceback memory of real stacks
//	pctab-stats replay [flags] BINARY    replay real stacks through the runtime's lookups
//	pctab-stats labels [flags] BINARY    trampoline labels onto CPU samples (a labelled pprof profile)
//
// Run "pctab-stats -h" or "pctab-stats verify -h" for the flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var err error
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			err = runVerify(args[1:], stdout, stderr)
		case "stacks":
			err = runStacks(args[1:], stdout, stderr)
		case "replay":
			err = runReplay(args[1:], stdout, stderr)
		case "labels":
			err = runLabels(args[1:], stdout, stderr)
		default:
			err = runReport(args, stdout, stderr)
		}
	} else {
		err = runReport(args, stdout, stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "pctab-stats: %v\n", err)
		return 1
	}
	return 0
}

// defaultBinary returns the local toolchain's go binary.
func defaultBinary() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("no binary given and `go env GOROOT` failed: %w", err)
	}
	root := strings.TrimSpace(string(out))
	exe := "go"
	if filepath.Separator == '\\' {
		exe = "go.exe"
	}
	return filepath.Join(root, "bin", exe), nil
}

func binariesOrDefault(paths []string) ([]string, error) {
	if len(paths) > 0 {
		return paths, nil
	}
	p, err := defaultBinary()
	if err != nil {
		return nil, err
	}
	return []string{p}, nil
}
