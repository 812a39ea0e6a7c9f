// Package runtimeshim re-implements, outside the runtime, the PC-value
// lookups the Go runtime makes when it unwinds, symbolizes and scans stacks,
// so that they can be run over real stacks with any encoding of the tables:
// Go's varint format with or without the runtime's per-M pcvalue cache, the
// linear-index format of golang/go#61984, and each of its variants.
//
// # Correspondence with the runtime
//
// The code follows runtime/symtab.go, runtime/symtabinl.go,
// runtime/traceback.go and runtime/stkframe.go of Go 1.26, and keeps their
// names so that the two can be read side by side:
//
//	runtime                          runtimeshim
//	moduledata                       Module (one per binary, shared by encodings)
//	findfunc, findfuncbucket         Shim.findfunc over Module.findfunctab, rebuilt
//	                                 from the functab as cmd/link's findfunctab does
//	funcInfo, _func                  funcInfo, _func (table fields are per encoding)
//	pcvalue, pcvalueCache            Shim.pcvalue: varint walk (runtime's step), varint
//	                                 walk behind varintpc.Cache, or linearpc.Set.Lookup
//	funcspdelta, funcline1, funcfile Shim.funcspdelta, Shim.funcline1, Shim.funcfile
//	pcdatavalue, pcdatavalue1        Shim.pcdatavalue, Shim.pcdatavalue1
//	funcdata                         funcdata (offset from go:func.*, 0 for none)
//	newInlineUnwinder, next, srcFunc Shim.newInlineUnwinder, inlineUnwinder.next, .srcFunc
//	CallersFrames, Frames.Next       Shim.CallersFrames, Frames.Next
//	tracebackPCs, traceback2,        Shim.Replay with the workloads Callers, Symbolize
//	scanframeworker/getStackMap      and GCScan
//
// Function and file names are kept as NUL-terminated strings in a
// funcnametab and a filetab, reached through name offsets and a cutab,
// so that producing a name costs what gostringnocopy costs the runtime.
// The tables' offsets differ from the binary's, since only the names are
// kept, but a name offset of 0 still reads as "" (the runtime's
// moduledata.funcName does that, and the linker gives offset 0 to the
// first function of the functab).
//
// # Encodings
//
// [Encodings] lists the encodings a [Shim] can use. Each Shim has its own
// copy of the function records whose table fields hold that encoding's
// references, as a linker writing that encoding would; the lookups dispatch
// on the encoding with one switch in pcvalue, so that no interface call sits
// in the hot loop. The varint encodings walk the binary's own pctab bytes.
//
// # Workloads
//
// [Shim.Replay] runs one of four workloads over a list of physical stacks,
// each frame given by its return PC:
//
//   - Unwind: findfunc and a pcsp lookup (funcspdelta at the return PC) per
//     frame, what the unwinder pays per physical frame.
//   - Callers: Unwind plus inline expansion at the call PC, with wrapper
//     elision, writing one PC per logical frame, like runtime.Callers
//     (tracebackPCs).
//   - Symbolize: Callers plus the name and funcline1 (pcfile and pcln) of
//     every logical frame, plus the PCDATA_ArgLiveIndex lookup that printArgs
//     makes for a physical frame whose function has FUNCDATA_ArgInfo, like a
//     traceback that prints every frame.
//   - GCScan: Unwind plus the PCDATA_StackMapIndex lookup at continpc-1 and
//     the stack map funcdata references, as getStackMap does during GC stack
//     scanning.
//
// What the replay leaves out: the register and stack reads of the unwinder
// (no stack memory exists here; the SP delta is looked up and discarded),
// printing, the cgo hooks, and the acquirem/releasem and re-entrancy
// counter around the runtime's cache probe, which the runtime pays on
// every pcvalue call with a table and the model does not (this favors
// varint+cache slightly).
//
// # Stacks
//
// Stacks come from execution traces and CPU profiles of real programs
// ([Shim.StacksFromCorpus]) or from the static call graph of binaries that
// cannot run here (package runtimeshim/synth). A trace's stacks are
// replayed in two orders: every event's stack in time order, each on the
// simulated M of the thread that recorded it (so the per-M caches see the
// repetition of a real event stream), and each distinct stack once on one M
// ([DistinctStacks]). A profile's samples are replayed once each.
//
// [Shim.CheckTrace] and [Shim.CheckPprof] check that symbolizing a trace's
// or a profile's PCs through a Shim reproduces, frame by frame, the
// function, file and line (and the PC) the runtime recorded, inlined frames
// included; [Shim.CheckGosym] checks physical frames against debug/gosym.
//
// # Real workloads
//
// The tests and the numbers reported for this package use these workloads,
// all built with the local toolchain:
//
//   - the compress/flate tests: go test -c -o flate.test compress/flate,
//     then, in $GOROOT/src/compress/flate, ./flate.test -test.run=.
//     -test.short -test.trace=flate.trace -test.cpuprofile=flate.pprof
//     (TestStdTrace does this for linux/amd64 and, under qemu-aarch64, for
//     linux/arm64, and caches the files);
//   - the go command: go list -debug-runtime-trace=golist.trace -deps
//     -test -json std, which traces the go binary itself;
//   - the compiler, a gopls-sized binary (20,265 functions): go build -o
//     /dev/null -gcflags='net/http=-traceprofile=compile.trace
//     -cpuprofile=compile.pprof' net/http.
//
// "pctab-stats replay -trace FILE BINARY" (or -pprof) checks every frame
// and then times every workload with every encoding.
package runtimeshim
