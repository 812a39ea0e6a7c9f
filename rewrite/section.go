package rewrite

import (
	"fmt"

	"github.com/pctab/pctab/objscan"
)

// buildSection returns the contents of the append-mode section
// (objscan.LinearSection; the format is documented in objscan's linear.go):
// a header, every function's length, the index from (varint table offset,
// function length) to linear offset, and the linear tables.
func buildSection(f *objscan.File, lt *linearTables) ([]byte, error) {
	o := f.ByteOrder
	nfunc := uint64(len(f.Funcs))
	lenOff := uint64(objscan.LinearSectionHdrSize)
	idxOff := lenOff + 4*nfunc
	dataOff := idxOff + 12*uint64(len(lt.index))
	total := dataOff + uint64(len(lt.data))
	if total > 1<<32-1 {
		return nil, fmt.Errorf("linear section of %d bytes is too large for its 32-bit offsets", total)
	}
	b := make([]byte, objscan.LinearSectionHdrSize, total)
	copy(b, objscan.LinearSectionMagic)
	o.PutUint32(b[8:], objscan.LinearSectionVersion)
	b[12] = byte(f.PCQuantum)
	b[13] = byte(f.PtrSize)
	copy(b[16:16+objscan.LinearVariantLen], lt.name())
	o.PutUint32(b[32:], uint32(nfunc))
	o.PutUint32(b[36:], uint32(len(lt.index)))
	o.PutUint32(b[40:], uint32(lenOff))
	o.PutUint32(b[44:], uint32(idxOff))
	o.PutUint32(b[48:], uint32(dataOff))
	o.PutUint32(b[52:], uint32(len(lt.data)))
	o.PutUint64(b[56:], f.PclntabAddr)
	o.PutUint64(b[64:], uint64(len(f.Pclntab())))
	for _, n := range lt.funcLen {
		b = appendU32(b, o, n)
	}
	for _, e := range lt.index {
		b = appendU32(b, o, e.key.varintOff)
		b = appendU32(b, o, e.key.len)
		b = appendU32(b, o, e.linear)
	}
	b = append(b, lt.data...)
	return b, nil
}
