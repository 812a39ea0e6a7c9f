// Command pctab-stats reports how big and how fast Go's PC-value tables are,
// in Go's varint format and in the linear-index format of golang/go#61984.
//
// Usage:
//
//	pctab-stats [flags] [BINARY...]             size report (default: $(go env GOROOT)/bin/go)
//	pctab-stats report [flags] [BINARY...]      the same
//	pctab-stats verify [flags] BINARY...        check every codec at every PC of every table
//	pctab-stats stacks [flags] [BINARY]         traceback memory of real stacks
//	pctab-stats replay [flags] BINARY           replay real stacks through the runtime's lookups
//	pctab-stats labels [flags] BINARY           trampoline labels onto CPU samples (a labelled pprof profile)
//
// Run "pctab-stats help" for the commands and "pctab-stats help COMMAND"
// for one command's flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pctab/pctab/internal/cli"
)

func main() {
	program().Main()
}

// program returns the command's table of subcommands.
func program() *cli.Program {
	return &cli.Program{
		Name: "pctab-stats",
		Doc: "Pctab-stats reports how big and how fast Go's PC-value tables are, in Go's\n" +
			"varint format and in the linear-index format of golang/go#61984.",
		Commands: []*cli.Command{
			reportCommand,
			verifyCommand,
			stacksCommand,
			replayCommand,
			labelsCommand,
		},
		Default: "report",
		Operand: cli.IsFile,
	}
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return program().Run(context.Background(), args, stdout, stderr)
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
