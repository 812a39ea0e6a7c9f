package linearpc

import (
	"bytes"
	"hash/maphash"
	"testing"

	"github.com/pctab/pctab/pcvalue"
)

// TestDigests checks that an Encoder's digests and encodings match the
// standalone encodings of every variant, and that one Encoder reused
// across tables of every shape carries nothing from one to the next.
func TestDigests(t *testing.T) {
	tabs := []pcvalue.Table{
		{},
		{Runs: []pcvalue.Run{{PC: 0, Value: 5}}, Len: 1},
		{Runs: []pcvalue.Run{{PC: 0, Value: -1}, {PC: 3, Value: 200}, {PC: 3, Value: 7}, {PC: 700, Value: 7}, {PC: 900, Value: 70000}}, Len: 1500},
		{Runs: []pcvalue.Run{{PC: 0, Value: 1}, {PC: 256, Value: 2}, {PC: 512, Value: 1}, {PC: 768, Value: 2}, {PC: 1024, Value: 1}}, Len: 1300},
		{Runs: []pcvalue.Run{{PC: 0, Value: 1}, {PC: 256, Value: 2}, {PC: 512, Value: 1}, {PC: 768, Value: 2}, {PC: 1024, Value: 1}}, Len: 1030},
	}
	for i := 0; i < 300; i++ {
		tabs[2].Runs = append(tabs[2].Runs, pcvalue.Run{PC: 1000 + uint32(i), Value: int32(i % 7)})
	}
	tabs[2].Len = 1400
	seed := maphash.MakeSeed()
	vs := Variants()
	var x Encoder
	out := make([]Digest, len(vs))
	for round := range 2 {
		for ti, tab := range tabs {
			x.Digests(tab, vs, seed, out)
			for k, v := range vs {
				want := v.Encode(tab)
				if got := x.AppendEncode(nil, tab, v); !bytes.Equal(got, want) {
					t.Errorf("round %d, table %d, %s: Encoder.AppendEncode differs from Variant.Encode", round, ti, v.Name)
				}
				if wd := (Digest{uint32(len(want)), maphash.Bytes(seed, want)}); out[k] != wd {
					t.Errorf("round %d, table %d, %s: digest %+v, want %+v", round, ti, v.Name, out[k], wd)
				}
			}
		}
	}
}

// TestEncoderEqual checks Encoder.Equal against comparing encodings, on
// every pair of tables that share runs but differ in length (so in chunk
// count for some variants and not others), in zero-length and trailing
// runs, or in values.
func TestEncoderEqual(t *testing.T) {
	runs := []pcvalue.Run{{PC: 0, Value: 3}, {PC: 100, Value: 4}, {PC: 300, Value: 3}}
	var tabs []pcvalue.Table
	for _, l := range []uint32{0, 1, 100, 101, 128, 129, 256, 257, 300, 301, 384, 512, 513, 1000} {
		tabs = append(tabs,
			pcvalue.Table{Runs: runs, Len: l},
			pcvalue.Table{Runs: runs[:1], Len: l},
			pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 3}, {PC: 100, Value: 3}, {PC: 100, Value: 4}, {PC: 300, Value: 3}}, Len: l},
			pcvalue.Table{Runs: []pcvalue.Run{{PC: 0, Value: 3}, {PC: 100, Value: 5}, {PC: 300, Value: 3}}, Len: l},
		)
	}
	var x Encoder
	for _, v := range Variants() {
		for i, a := range tabs {
			for j, b := range tabs {
				want := bytes.Equal(v.Encode(a), v.Encode(b))
				if got := x.Equal(a, b, v); got != want {
					t.Errorf("%s: tables %d (len %d) and %d (len %d): Equal = %v, want %v", v.Name, i, a.Len, j, b.Len, got, want)
				}
			}
		}
	}
}
