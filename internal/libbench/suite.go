// Package libbench is the real-library benchmark suite of pctab-toolchain
// (pctab-toolchain libbench): benchmarks of library code that asks the
// runtime for its callers on every call (logging with the caller's file and
// line, errors that capture stacks, testing's Helper), built with the stock
// toolchain and with the patched one in each runtime flavour
// (toolchain.Flavours), run round-robin and summarized with benchstat's
// statistics, and the libraries' own tests, whose output with the patched
// toolchain must equal stock Go's.
//
// The third-party modules are pinned in versions.txt and fetched through
// the module proxy into a work module outside the repository ([Prepare]).
package libbench

import (
	"github.com/pctab/pctab/internal/benchcmp"

	"bufio"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed versions.txt
var versionsTxt string

// A Module is a pinned third-party module.
type Module struct {
	Path    string // module path, e.g. "go.uber.org/zap"
	Version string // e.g. "v1.28.0"
}

// Versions returns the pinned modules of versions.txt, in its order.
func Versions() ([]Module, error) {
	return parseVersions(versionsTxt)
}

func parseVersions(text string) ([]Module, error) {
	var mods []Module
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("libbench: versions.txt:%d: want \"module version\", have %q", n, line)
		}
		if !strings.Contains(f[0], ".") || !strings.HasPrefix(f[1], "v") {
			return nil, fmt.Errorf("libbench: versions.txt:%d: %q is not a module path and version", n, line)
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("libbench: versions.txt:%d: %s pinned twice", n, f[0])
		}
		seen[f[0]] = true
		mods = append(mods, Module{f[0], f[1]})
	}
	return mods, sc.Err()
}

// A Library is one library of the suite: the test binaries to benchmark,
// the pairs of benchmarks with and without caller information, and the
// packages whose own tests are compared.
type Library struct {
	Name    string   // short name, the "library" configuration key of the results
	Module  string   // pinned module (versions.txt); "" for the standard library
	Hot     string   // the hot path that calls runtime.Callers or runtime.Caller
	Targets []Target // benchmarks
	Pairs   []Pair   // the price of caller information
	Tests   []string // packages whose tests Compare runs
	// TestSkip, if set, is the go test -skip pattern of tests that
	// Compare leaves out: tests whose output two stock runs do not
	// repeat (random IDs, goroutines racing) and that print no stack or
	// caller.
	TestSkip string
}

// A Target is one run of a package's test binary.
type Target struct {
	Package string   // import path whose tests are built (go test -c)
	Bench   string   // -test.bench
	Variant string   // label of Args, the "variant" configuration key; "" for none
	Args    []string // more test binary flags, e.g. slog's -nopc
	// InstrBench, if set, narrows Bench for Instructions, whose
	// cachegrind runs are slow.
	InstrBench string
}

// A Pair is a benchmark with caller information and the same without it.
// The price of the caller is the difference of their medians.
type Pair struct {
	Name    string
	With    benchcmp.Key
	Without benchcmp.Key
}

// HarnessPackage is the import path, in the work module, of
// testdata/callerbench: benchmarks of this repository's with and without
// the caller where a library's own benchmarks have no such pair.
const HarnessPackage = workModule + "/callerbench"

// Suite returns the libraries of the suite.
func Suite() []Library {
	k := func(name string) benchcmp.Key { return benchcmp.Key{Name: name} }
	slogPairs := []Pair{}
	for _, h := range []string{"fastText", "Text", "JSON"} {
		name := "Attrs/" + h + "_discard/5_args"
		slogPairs = append(slogPairs, Pair{"slog " + h + " 5 args: PC vs -nopc", k(name), benchcmp.Key{Variant: "nopc", Name: name}})
	}
	for _, h := range []string{"Text", "JSON"} {
		slogPairs = append(slogPairs, Pair{"slog " + h + ": AddSource on vs off", k("SlogSource/" + h + "/source"), k("SlogSource/" + h + "/nosource")})
	}
	const slogAttrs = "^BenchmarkAttrs$/^(fastText|Text|JSON)_discard$"
	const slog5 = slogAttrs + "/^5_args$"
	return []Library{
		{
			Name: "slog",
			Hot:  "slog.Logger.log and logAttrs: runtime.Callers(3, pcs[:1]) on every enabled record; Record.Source (AddSource): runtime.CallersFrames",
			Targets: []Target{
				{Package: "log/slog/internal/benchmarks", Bench: slogAttrs, InstrBench: slog5},
				{Package: "log/slog/internal/benchmarks", Bench: slogAttrs, Variant: "nopc", Args: []string{"-nopc"}, InstrBench: slog5},
				{Package: HarnessPackage, Bench: "^BenchmarkSlogSource$"},
			},
			Pairs: slogPairs,
			Tests: []string{"log/slog"},
		},
		{
			Name:    "testing",
			Hot:     "testing.common.Helper: runtime.Callers(2, pc[:1]) on every call",
			Targets: []Target{{Package: "testing", Bench: "^BenchmarkTBHelper$"}},
		},
		{
			Name:   "zap",
			Module: "go.uber.org/zap",
			Hot:    "zap.Logger.check with AddCaller or AddStacktrace: stacktrace.Capture (runtime.Callers, CallersFrames); zap.Stack: stacktrace.Take",
			Targets: []Target{
				{Package: "go.uber.org/zap", Bench: "^Benchmark(NoContext|AddCallerHook|AddCallerAndStacktrace|StackField)$"},
				{Package: "go.uber.org/zap/internal/stacktrace", Bench: "^BenchmarkTake$"},
			},
			Pairs: []Pair{
				{"zap: AddCaller vs none", k("AddCallerHook"), k("NoContext")},
				{"zap: AddCaller and stack trace vs none", k("AddCallerAndStacktrace"), k("NoContext")},
				{"zap: Stack field vs none", k("StackField"), k("NoContext")},
			},
			Tests: []string{"go.uber.org/zap", "go.uber.org/zap/internal/stacktrace"},
		},
		{
			Name:    "pkg/errors",
			Module:  "github.com/pkg/errors",
			Hot:     "errors.New, Wrap, WithStack: callers() (runtime.Callers(3, pcs[:32])); %+v: Frame.file/line (runtime.FuncForPC, FileLine)",
			Targets: []Target{{Package: "github.com/pkg/errors", Bench: "^Benchmark(Errors|StackFormatting)$"}},
			Pairs: []Pair{
				{"pkg/errors: New vs errors.New, 10 frames deep", k("Errors/pkg/errors-stack-10"), k("Errors/errors-stack-10")},
				{"pkg/errors: New vs errors.New, 100 frames deep", k("Errors/pkg/errors-stack-100"), k("Errors/errors-stack-100")},
				{"pkg/errors: New vs errors.New, 1000 frames deep", k("Errors/pkg/errors-stack-1000"), k("Errors/errors-stack-1000")},
			},
			Tests: []string{"github.com/pkg/errors"},
		},
		{
			Name:    "klog",
			Module:  "k8s.io/klog/v2",
			Hot:     "klog.loggingT.header: runtime.Caller(3+depth) for the file:line of every line's header",
			Targets: []Target{{Package: "k8s.io/klog/v2", Bench: "^BenchmarkHeader(WithDir)?$"}},
			Tests:   []string{"k8s.io/klog/v2"},
		},
		{
			Name:    "logrus",
			Module:  "github.com/sirupsen/logrus",
			Hot:     "logrus.Entry.log with ReportCaller: getCaller (runtime.Callers(minimumCallerDepth, pcs[:25]) and CallersFrames until the first frame outside logrus)",
			Targets: []Target{{Package: "github.com/sirupsen/logrus", Bench: "^BenchmarkEntry_ReportCaller_"}},
			Pairs: []Pair{
				{"logrus: ReportCaller on vs off", k("Entry_ReportCaller_WithCaller"), k("Entry_ReportCaller_NoCaller")},
				{"logrus: ReportCaller on vs off, 4 wrappers", k("Entry_ReportCaller_WithCaller_Depth4"), k("Entry_ReportCaller_NoCaller_Depth4")},
			},
			Tests: []string{"github.com/sirupsen/logrus"},
		},
		{
			Name:    "go-kit/log",
			Module:  "github.com/go-kit/log",
			Hot:     "log.Caller valuer (DefaultCaller): runtime.Caller(depth) on every Log call",
			Targets: []Target{{Package: "github.com/go-kit/log", Bench: "^Benchmark(OneWith|ValueBindingCaller)$"}},
			Pairs: []Pair{
				{"go-kit/log: caller valuer vs constant", k("ValueBindingCaller"), k("OneWith")},
			},
			Tests: []string{"github.com/go-kit/log"},
		},
		{
			Name:    "go-stack",
			Module:  "github.com/go-stack/stack",
			Hot:     "stack.Caller and stack.Trace: runtime.Callers and CallersFrames (log15's and go-kit's older caller source)",
			Targets: []Target{{Package: "github.com/go-stack/stack", Bench: "^Benchmark(Caller|Trace|Trace10|CallerAndVFmt|RuntimeCaller)$"}},
			Tests:   []string{"github.com/go-stack/stack"},
		},
		{
			Name:    "zerolog",
			Module:  "github.com/rs/zerolog",
			Hot:     "zerolog.Event.caller (Context.Caller hook): runtime.Caller(skip) on every event",
			Targets: []Target{{Package: HarnessPackage, Bench: "^BenchmarkZerologCaller$"}},
			Pairs: []Pair{
				{"zerolog: Caller vs none", k("ZerologCaller/caller"), k("ZerologCaller/nocaller")},
			},
			Tests: []string{"github.com/rs/zerolog"},
		},
		{
			Name:    "hclog",
			Module:  "github.com/hashicorp/go-hclog",
			Hot:     "hclog.intLogger.logPlain with IncludeLocation: runtime.Caller(callerOffset) for the file:line of every line",
			Targets: []Target{{Package: "github.com/hashicorp/go-hclog", Bench: "^BenchmarkLogger$"}, {Package: HarnessPackage, Bench: "^BenchmarkHclogLocation$"}},
			Pairs: []Pair{
				{"hclog: IncludeLocation on vs off", k("HclogLocation/location"), k("HclogLocation/nolocation")},
			},
			Tests: []string{"github.com/hashicorp/go-hclog"},
		},
		{
			Name:    "go-errors",
			Module:  "github.com/go-errors/errors",
			Hot:     "errors.New, Errorf, Wrap: runtime.Callers(2, stack[:50]); Error.Stack: each frame's function, file and line (runtime.FuncForPC, FileLine) and its source line",
			Targets: []Target{{Package: "github.com/go-errors/errors", Bench: "^BenchmarkStackFormat$"}, {Package: HarnessPackage, Bench: "^BenchmarkGoErrorsNew$"}},
			Pairs: []Pair{
				{"go-errors: New vs errors.New", k("GoErrorsNew/goerrors"), k("GoErrorsNew/std")},
			},
			Tests: []string{"github.com/go-errors/errors"},
		},
		{
			Name:    "sentry-go",
			Module:  "github.com/getsentry/sentry-go",
			Hot:     "sentry.NewStacktrace: runtime.Callers and CallersFrames over the whole stack; ExtractStacktrace: the stack a pkg/errors, pingcap/errors or go-errors error carries",
			Targets: []Target{{Package: "github.com/getsentry/sentry-go", Bench: "^Benchmark(NewStacktrace|ExtractStacktrace)$"}},
			Tests:   []string{"github.com/getsentry/sentry-go"},
			// Their log lines carry random event IDs, in the order
			// concurrent sends happen to take.
			TestSkip: "^TestHTTPTransport$|^TestHTTPTransport_FlushWithContext$",
		},
	}
}

// Select returns the libraries of suite named in names (all if names is
// empty), in the suite's order.
func Select(suite []Library, names []string) ([]Library, error) {
	if len(names) == 0 {
		return suite, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Library
	for _, l := range suite {
		if want[l.Name] {
			out = append(out, l)
			delete(want, l.Name)
		}
	}
	for n := range want {
		var all []string
		for _, l := range suite {
			all = append(all, l.Name)
		}
		return nil, fmt.Errorf("libbench: no library %q (have %s)", n, strings.Join(all, ", "))
	}
	return out, nil
}
