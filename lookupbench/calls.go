package lookupbench

import (
	"encoding/binary"
	"fmt"

	"github.com/pctab/pctab/internal/par"
	"github.com/pctab/pctab/objscan"
	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// returnAddresser finds the return addresses in one function's code, as
// offsets from its entry, in ascending order.
type returnAddresser func(code []byte) []uint32

// disassembler returns the return-address finder for goarch and its name,
// or nil if there is none.
func disassembler(goarch string) (returnAddresser, string) {
	switch goarch {
	case "amd64":
		return func(c []byte) []uint32 { return x86Calls(c, 64) }, "x86asm"
	case "386":
		return func(c []byte) []uint32 { return x86Calls(c, 32) }, "x86asm"
	case "arm64":
		return arm64Calls, "arm64asm"
	}
	return nil, ""
}

// x86Calls decodes c instruction by instruction and returns the offset
// after every CALL. Bytes that do not decode are skipped one at a time, as
// Go's objdump does.
func x86Calls(c []byte, mode int) []uint32 {
	var ras []uint32
	for off := 0; off < len(c); {
		inst, err := x86asm.Decode(c[off:], mode)
		if err != nil || inst.Len == 0 {
			off++
			continue
		}
		off += inst.Len
		if inst.Op == x86asm.CALL {
			ras = append(ras, uint32(off))
		}
	}
	return ras
}

// BL and BLR encodings: only words that match one of them can be calls, so
// only those are handed to the disassembler.
const (
	arm64BLMask, arm64BL   = 0xfc000000, 0x94000000
	arm64BLRMask, arm64BLR = 0xfffffc1f, 0xd63f0000
)

// arm64Calls returns the offset after every BL and BLR in c (4-byte,
// little-endian instructions). Each candidate word is confirmed by arm64asm.
func arm64Calls(c []byte) []uint32 {
	var ras []uint32
	for off := 0; off+4 <= len(c); off += 4 {
		w := binary.LittleEndian.Uint32(c[off:])
		if w&arm64BLMask != arm64BL && w&arm64BLRMask != arm64BLR {
			continue
		}
		inst, err := arm64asm.Decode(c[off : off+4])
		if err == nil && (inst.Op == arm64asm.BL || inst.Op == arm64asm.BLR) {
			ras = append(ras, uint32(off+4))
		}
	}
	return ras
}

// findCalls disassembles every function. Without a disassembler for the
// architecture or without readable code it records why and returns nil:
// the return-address samples then fall back to random PCs.
func (b *Bench) findCalls() error {
	find, name := disassembler(b.f.GOARCH)
	if find == nil {
		b.noCalls = fmt.Sprintf("no disassembler for GOARCH=%s", b.f.GOARCH)
		return nil
	}
	secs, err := b.f.Code()
	if err != nil {
		b.noCalls = fmt.Sprintf("reading code: %v", err)
		return nil
	}
	funcs := b.f.Funcs
	b.calls = make([][]uint32, len(funcs))
	par.For(len(funcs), b.opt.Workers, func(_, i int) error {
		fn := &funcs[i]
		end := max(fn.End, fn.Entry+fn.Size)
		if c := objscan.CodeAt(secs, fn.Entry, end); c != nil {
			b.calls[i] = find(c)
		}
		return nil
	})
	for _, c := range b.calls {
		b.numCalls += len(c)
	}
	if b.numCalls == 0 {
		b.calls = nil
		b.noCalls = "disassembly found no call instructions"
		return nil
	}
	b.disasm = name
	return nil
}
