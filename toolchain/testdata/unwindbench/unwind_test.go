// Package unwindbench benchmarks the calls of libraries that ask for their
// caller on every call, each on the same call sites every time, as a
// logger does: runtime.Callers of one PC four frames up (slog's), of 32
// PCs through a recursion (pkg/errors'), of two PCs through inlined calls,
// runtime.Caller (klog's, go-kit's, zerolog's) and CallersFrames over a
// whole stack (logrus', zap's). pctab-toolchain instr counts their
// instructions (docs/toolchain-runtime.md).
package unwindbench

import (
	"runtime"
	"testing"
)

var sinkFile string
var sinkLine int

//go:noinline
func slogLike(pcs []uintptr) int { return runtime.Callers(3, pcs) }

//go:noinline
func a1(pcs []uintptr) int { return slogLike(pcs) }

//go:noinline
func a2(pcs []uintptr) int { return a1(pcs) }

//go:noinline
func a3(pcs []uintptr) int { return a2(pcs) }

func BenchmarkCallers1(b *testing.B) {
	var pcs [1]uintptr
	for i := 0; i < b.N; i++ {
		a3(pcs[:])
	}
}

//go:noinline
func deep(n int, pcs []uintptr) int {
	if n == 0 {
		return runtime.Callers(1, pcs)
	}
	return deep(n-1, pcs)
}

func BenchmarkCallers32(b *testing.B) {
	var pcs [32]uintptr
	for i := 0; i < b.N; i++ {
		deep(10, pcs[:])
	}
}

//go:noinline
func caller() (string, int) {
	_, file, line, _ := runtime.Caller(2)
	return file, line
}

//go:noinline
func c1() (string, int) { return caller() }

func BenchmarkCaller(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sinkFile, sinkLine = c1()
	}
}

//go:noinline
func framesLike() int {
	var pcs [25]uintptr
	n := runtime.Callers(2, pcs[:])
	fr := runtime.CallersFrames(pcs[:n])
	k := 0
	for {
		f, more := fr.Next()
		k += f.Line
		if !more || k > 1000000 {
			break
		}
	}
	return k
}

//go:noinline
func f1() int { return framesLike() }

//go:noinline
func f2() int { return f1() }

func BenchmarkFrames(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sinkLine = f2()
	}
}

func inl1(pcs []uintptr) int { return runtime.Callers(2, pcs) }
func inl2(pcs []uintptr) int { return inl1(pcs) }

//go:noinline
func inlTop(pcs []uintptr) int { return inl2(pcs) }

func BenchmarkCallersInlined(b *testing.B) {
	var pcs [2]uintptr
	for i := 0; i < b.N; i++ {
		inlTop(pcs[:])
	}
}
