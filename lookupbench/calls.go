package lookupbench

import (
	"fmt"

	"github.com/pctab/pctab/internal/callsites"
	"github.com/pctab/pctab/internal/par"
	"github.com/pctab/pctab/objscan"
)

// findCalls disassembles every function (internal/callsites) and keeps the
// return address of every call, direct or not, as an offset from its
// function's entry. Without a disassembler for the architecture or without
// readable code it records why and returns nil: the return-address samples
// then fall back to random PCs.
func (b *Bench) findCalls() error {
	dec := callsites.For(b.f.GOARCH)
	if dec == nil {
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
		c := objscan.CodeAt(secs, fn.Entry, end)
		if c == nil {
			return nil
		}
		calls, _ := dec.Calls(nil, c, 0) // at 0: return addresses are offsets
		if len(calls) > 0 {
			ras := make([]uint32, len(calls))
			for j, call := range calls {
				ras[j] = uint32(call.Ret)
			}
			b.calls[i] = ras
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
	b.disasm = dec.Name()
	return nil
}
