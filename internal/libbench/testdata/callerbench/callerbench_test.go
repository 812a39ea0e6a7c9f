// Package callerbench benchmarks caller information in libraries whose own
// benchmarks have no pair with and without it: log/slog with and without
// HandlerOptions.AddSource, and zerolog with and without Caller. libbench
// copies it into its work module (as package libbench.pctab/callerbench).
package callerbench

import (
	"io"
	"log/slog"
	"testing"
	"time"

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
