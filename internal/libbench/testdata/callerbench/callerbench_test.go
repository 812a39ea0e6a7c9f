// Package callerbench benchmarks caller information in libraries whose own
// benchmarks have no pair with and without it: log/slog with and without
// HandlerOptions.AddSource, zerolog with and without Caller, go-hclog with
// and without IncludeLocation, and go-errors' New against the standard
// library's. libbench
// copies it into its work module (as package libbench.pctab/callerbench).
package callerbench

import (
	stderrors "errors"
	"io"
	"log/slog"
	"testing"
	"time"

	goerrors "github.com/go-errors/errors"
	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// BenchmarkSlogSource logs five attributes, as slog's internal/benchmarks
// do, to the Text and JSON handlers with and without AddSource. slog
// captures the caller's PC (runtime.Callers) in both; AddSource adds the
// frame's function, file and line (runtime.CallersFrames) to the output.
func BenchmarkSlogSource(b *testing.B) {
	for _, h := range []struct {
		name string
		new  func(io.Writer, *slog.HandlerOptions) slog.Handler
	}{
		{"Text", func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }},
		{"JSON", func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }},
	} {
		for _, src := range []bool{false, true} {
			name := h.name + "/nosource"
			if src {
				name = h.name + "/source"
			}
			b.Run(name, func(b *testing.B) {
				logger := slog.New(h.new(io.Discard, &slog.HandlerOptions{AddSource: src}))
				b.ReportAllocs()
				for b.Loop() {
					logger.LogAttrs(nil, slog.LevelInfo, "a typical log message",
						slog.String("string", "some string"),
						slog.Int("status", 200),
						slog.Duration("duration", 23*time.Millisecond),
						slog.Bool("ok", true),
						slog.Int("count", 123456),
					)
				}
			})
		}
	}
}

// BenchmarkZerologCaller logs one field with zerolog, with and without the
// Caller hook (Event.caller calls runtime.Caller on every event).
func BenchmarkZerologCaller(b *testing.B) {
	for _, caller := range []bool{false, true} {
		name := "nocaller"
		if caller {
			name = "caller"
		}
		b.Run(name, func(b *testing.B) {
			ctx := zerolog.New(io.Discard).With()
			if caller {
				ctx = ctx.Caller()
			}
			logger := ctx.Logger()
			b.ReportAllocs()
			for b.Loop() {
				logger.Info().Str("string", "some string").Int("status", 200).Msg("a typical log message")
			}
		})
	}
}

// BenchmarkHclogLocation logs five pairs with go-hclog, with and without
// IncludeLocation (intLogger.logPlain calls runtime.Caller on every line
// and prints the caller's file and line).
func BenchmarkHclogLocation(b *testing.B) {
	for _, loc := range []bool{false, true} {
		name := "nolocation"
		if loc {
			name = "location"
		}
		b.Run(name, func(b *testing.B) {
			logger := hclog.New(&hclog.LoggerOptions{Name: "bench", Output: io.Discard, IncludeLocation: loc})
			b.ReportAllocs()
			for b.Loop() {
				logger.Info("a typical log message", "string", "some string", "status", 200,
					"duration", 23*time.Millisecond, "ok", true, "count", 123456)
			}
		})
	}
}

// sinkErr keeps the errors BenchmarkGoErrorsNew makes from being optimized
// away.
var sinkErr error

// BenchmarkGoErrorsNew makes an error with go-errors' New, which captures
// up to 50 PCs of its caller's stack (runtime.Callers), and with the
// standard library's errors.New, which captures none.
func BenchmarkGoErrorsNew(b *testing.B) {
	b.Run("goerrors", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkErr = goerrors.New("a typical error")
		}
	})
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkErr = stderrors.New("a typical error")
		}
	})
}
