// Command pctab-trace stores a Go execution trace in a compact, indexed
// form (package tracestore) and queries it without re-reading the trace.
//
// Usage:
//
//	pctab-trace build [-pagesize N] [-mem SIZE] TRACE STORE   ingest TRACE into the directory STORE
//	pctab-trace query [-json] [-from T] [-to T] (-func F | -line FILE:LINE) STORE
//	                                              events whose stack passes through F (or FILE:LINE)
//	pctab-trace agg [-json] [-from T] [-to T] [-track KIND] STORE
//	                                              per-lane span counts, busy time and longest span
//	pctab-trace serve [-addr HOST:PORT] STORE     the zoomable timeline viewer (package tracestore/view)
//
// Times are nanoseconds since the trace's first event, or durations such as
// 1.5s. Run "pctab-trace help COMMAND" for a command's flags.
package main

import (
	"context"
	"io"

	"github.com/pctab/pctab/internal/cli"
)

func main() {
	program().Main()
}

// program returns the command's table of subcommands.
func program() *cli.Program {
	return &cli.Program{
		Name: "pctab-trace",
		Doc: "Pctab-trace stores a Go execution trace in a compact, indexed form (package\n" +
			"tracestore) and queries it without re-reading the trace. Times are\n" +
			"nanoseconds since the trace's first event, or durations such as 1.5s.",
		Commands: []*cli.Command{
			buildCommand,
			queryCommand,
			aggCommand,
			serveCommand,
		},
	}
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return program().Run(ctx, args, stdout, stderr)
}
