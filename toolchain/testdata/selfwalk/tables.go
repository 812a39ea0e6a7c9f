package main

import "unsafe"

// The runtime's own table lookups, which FuncForPC does not reach: the
// stack-pointer delta and the PCDATA tables. Building this program needs
// -ldflags=-checklinkname=0 (runtime.funcspdelta and runtime.pcdatavalue
// are internal).

// funcInfo mirrors runtime.funcInfo: a *_func and its *moduledata.
type funcInfo struct {
	f     unsafe.Pointer
	datap unsafe.Pointer
}

//go:linkname findfunc runtime.findfunc
func findfunc(pc uintptr) funcInfo

//go:linkname funcspdelta runtime.funcspdelta
func funcspdelta(f funcInfo, targetpc uintptr) int32

//go:linkname pcdatavalue runtime.pcdatavalue
func pcdatavalue(f funcInfo, table uint32, targetpc uintptr) int32

// numPCData is how many PCDATA tables the program prints per PC
// (abi.PCDATA_UnsafePoint, StackMapIndex, InlTreeIndex, ArgLiveIndex).
const numPCData = 4

// tableValues returns the pcsp value and the first numPCData PCDATA values
// of the function holding pc, as the runtime decodes them.
func tableValues(pc uintptr) (sp int32, pcdata [numPCData]int32) {
	f := findfunc(pc)
	if f.f == nil {
		return -1, [numPCData]int32{-1, -1, -1, -1}
	}
	sp = funcspdelta(f, pc)
	for i := range pcdata {
		pcdata[i] = pcdatavalue(f, uint32(i), pc)
	}
	return sp, pcdata
}
