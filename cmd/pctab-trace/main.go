// Command pctab-trace stores a Go execution trace in a compact, indexed
// form (package tracestore) and queries it without re-reading the trace.
//
// Usage:
//
//	pctab-trace build [-page-size N] TRACE STORE   ingest TRACE into the directory STORE
//	pctab-trace query [-json] [-from T] [-to T] (-func F | -line FILE:LINE) STORE
//	                                               events whose stack passes through F (or FILE:LINE)
//	pctab-trace agg [-json] [-from T] [-to T] [-track KIND] STORE
//	                                               per-lane span counts, busy time and longest span
//	pctab-trace serve [-addr HOST:PORT] STORE     the zoomable timeline viewer (package tracestore/view)
//
// Times are nanoseconds since the trace's first event, or durations such as
// 1.5s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "pctab-trace:", err)
		}
		os.Exit(2)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: pctab-trace build [-page-size N] TRACE STORE\n"+
		"       pctab-trace query [-json] [-from T] [-to T] (-func F | -line FILE:LINE) STORE\n"+
		"       pctab-trace agg [-json] [-from T] [-to T] [-track KIND] STORE\n"+
		"       pctab-trace serve [-addr HOST:PORT] STORE\n")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errors.New("no subcommand")
	}
	switch args[0] {
	case "build":
		return runBuild(args[1:], stdout, stderr)
	case "query":
		return runQuery(args[1:], stdout, stderr)
	case "agg":
		return runAgg(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return nil
	}
	usage(stderr)
	return fmt.Errorf("unknown subcommand %q", args[0])
}
