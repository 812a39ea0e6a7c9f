package linearpc

import (
	"bytes"
	"hash/maphash"
	"slices"

	"github.com/pctab/pctab/pcvalue"
)

// An Encoder encodes tables in any variant, reusing its scratch space
// across calls, so that encoding many tables allocates next to nothing
// (the package-level [AppendEncode] and [Variant.AppendEncode] start from
// scratch each time). The zero Encoder is ready to use; an Encoder must
// not be used by several goroutines at once.
type Encoder struct {
	e         encoder
	chs, chs2 []change
	buf, buf2 []byte
}

// AppendEncode appends the standalone encoding of t in variant v to dst,
// exactly as [Variant.AppendEncode] does.
func (x *Encoder) AppendEncode(dst []byte, t pcvalue.Table, v Variant) []byte {
	return x.e.appendTable(dst, t, v, nil)
}

// A Digest stands for one standalone encoding: its length and a hash of
// its bytes. Equal encodings have equal digests under the same seed;
// unequal encodings almost always differ, so a caller that needs exact
// equality confirms equal digests by comparing the encodings.
type Digest struct {
	Len  uint32
	Hash uint64
}

// Digests sets out[k] to the digest of the standalone encoding of t in
// variant vs[k], hashed with maphash under seed. t is put in canonical
// form once for all the variants. out must be at least as long as vs.
//
// The size of a [Set] of a variant that does not pool chunks is the sum of
// the lengths of its distinct standalone encodings, so digests size such
// a set without storing it.
func (x *Encoder) Digests(t pcvalue.Table, vs []Variant, seed maphash.Seed, out []Digest) {
	if t.Len == 0 {
		h := maphash.Bytes(seed, nil)
		for k := range vs {
			out[k] = Digest{Hash: h}
		}
		return
	}
	x.chs = changes(x.chs[:0], t)
	for k, v := range vs {
		x.buf = x.e.appendChanges(x.buf[:0], x.chs, t.Len, v, nil)
		out[k] = Digest{Len: uint32(len(x.buf)), Hash: maphash.Bytes(seed, x.buf)}
	}
}

// Equal reports whether a and b have the same standalone encoding in
// variant v, as bytes.Equal(v.Encode(a), v.Encode(b)) would. An encoding
// depends only on the table's canonical form and its number of chunks, so
// tables that agree on both are equal without being encoded; the others
// are encoded and compared.
func (x *Encoder) Equal(a, b pcvalue.Table, v Variant) bool {
	if a.Len == 0 || b.Len == 0 {
		return a.Len == b.Len // an empty table encodes to nothing, others to something
	}
	x.chs = changes(x.chs[:0], a)
	x.chs2 = changes(x.chs2[:0], b)
	if v.chunks(a.Len) == v.chunks(b.Len) && slices.Equal(x.chs, x.chs2) {
		return true
	}
	x.buf = x.e.appendChanges(x.buf[:0], x.chs, a.Len, v, nil)
	x.buf2 = x.e.appendChanges(x.buf2[:0], x.chs2, b.Len, v, nil)
	return bytes.Equal(x.buf, x.buf2)
}
