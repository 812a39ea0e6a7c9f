// Package callsites finds the call instructions in a function's machine
// code with golang.org/x/arch: x86asm for amd64 and 386, arm64asm for
// arm64. It is pctab's one disassembler: lookupbench samples return
// addresses from it, and runtimeshim/synth builds its static call graph
// from it. objscan.File.Code reads the code it decodes.
package callsites

import (
	"encoding/binary"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// A Call is one call instruction.
type Call struct {
	// Ret is the return address: the PC of the byte after the
	// instruction.
	Ret uint64
	// Direct reports a PC-relative call (CALL rel on x86, BL on arm64),
	// whose callee is known; Target is its address. Calls through a
	// register or memory (CALL AX, CALL (SP), BLR) are not direct and
	// have Target 0.
	Direct bool
	Target uint64
}

// A Decoder finds the calls in the code of one architecture.
type Decoder struct {
	name  string
	calls func(dst []Call, code []byte, pc uint64) ([]Call, int)
}

// For returns the decoder for goarch ("amd64", "386" or "arm64"), or nil
// if there is none.
func For(goarch string) *Decoder {
	switch goarch {
	case "amd64":
		return &Decoder{"x86asm", func(dst []Call, c []byte, pc uint64) ([]Call, int) { return x86Calls(dst, c, pc, 64) }}
	case "386":
		return &Decoder{"x86asm", func(dst []Call, c []byte, pc uint64) ([]Call, int) { return x86Calls(dst, c, pc, 32) }}
	case "arm64":
		return &Decoder{"arm64asm", arm64Calls}
	}
	return nil
}

// Name names the disassembler: "x86asm" or "arm64asm".
func (d *Decoder) Name() string { return d.name }

// Calls appends to dst the calls in code, which starts at address pc, in
// order, and returns them with the number of bytes (x86) or candidate
// words (arm64) that did not decode and were skipped. It always makes
// progress and never reads past code.
func (d *Decoder) Calls(dst []Call, code []byte, pc uint64) (calls []Call, undecoded int) {
	return d.calls(dst, code, pc)
}

// x86Calls decodes c instruction by instruction. Bytes that do not decode
// are skipped one at a time, as Go's objdump does.
func x86Calls(dst []Call, c []byte, pc uint64, mode int) ([]Call, int) {
	bad := 0
	for off := 0; off < len(c); {
		inst, err := x86asm.Decode(c[off:], mode)
		if err != nil || inst.Len == 0 {
			off++
			bad++
			continue
		}
		off += inst.Len
		if inst.Op != x86asm.CALL {
			continue
		}
		call := Call{Ret: pc + uint64(off)}
		if rel, ok := inst.Args[0].(x86asm.Rel); ok {
			call.Direct, call.Target = true, call.Ret+uint64(int64(rel))
			if mode == 32 {
				call.Target &= 1<<32 - 1
			}
		}
		dst = append(dst, call)
	}
	return dst, bad
}

// BL and BLR encodings: only words that match one of them can be calls, so
// only those are handed to the disassembler (arm64 instructions are fixed
// width, so skipping the others loses no alignment).
const (
	arm64BLMask, arm64BL   = 0xfc000000, 0x94000000
	arm64BLRMask, arm64BLR = 0xfffffc1f, 0xd63f0000
)

// arm64Calls finds every BL and BLR in c (4-byte little-endian
// instructions; trailing bytes are ignored). Each candidate word is
// confirmed by arm64asm.
func arm64Calls(dst []Call, c []byte, pc uint64) ([]Call, int) {
	bad := 0
	for off := 0; off+4 <= len(c); off += 4 {
		w := binary.LittleEndian.Uint32(c[off:])
		if w&arm64BLMask != arm64BL && w&arm64BLRMask != arm64BLR {
			continue
		}
		inst, err := arm64asm.Decode(c[off : off+4])
		if err != nil {
			bad++
			continue
		}
		call := Call{Ret: pc + uint64(off) + 4}
		switch inst.Op {
		case arm64asm.BL:
			if rel, ok := inst.Args[0].(arm64asm.PCRel); ok {
				call.Direct, call.Target = true, pc+uint64(off)+uint64(int64(rel))
			}
		case arm64asm.BLR:
		default:
			continue
		}
		dst = append(dst, call)
	}
	return dst, bad
}
