package callsites

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pctab/pctab/internal/objdump"
	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
)

func TestX86(t *testing.T) {
	for _, tc := range []struct {
		name   string
		goarch string
		code   []byte
		want   []Call
		bad    int
	}{
		{"call rel32", "amd64", []byte{0x90, 0xe8, 1, 0, 0, 0, 0xc3}, []Call{{Ret: 0x1006, Direct: true, Target: 0x1007}}, 0},
		{"call backwards", "amd64", []byte{0xe8, 0xfb, 0xff, 0xff, 0xff}, []Call{{Ret: 0x1005, Direct: true, Target: 0x1000}}, 0},
		{"call indirect", "amd64", []byte{0xff, 0xd0, 0xff, 0x14, 0x24}, []Call{{Ret: 0x1002}, {Ret: 0x1005}}, 0},           // CALL AX; CALL (SP)
		{"not a call", "amd64", []byte{0x48, 0x8b, 0x44, 0x24, 0x08, 0xcc, 0xcc}, nil, 0},                                   // MOVQ 8(SP), AX; INT3
		{"bad byte", "amd64", []byte{0x0f, 0x0b, 0xe8, 0, 0, 0, 0}, []Call{{Ret: 0x1007, Direct: true, Target: 0x1007}}, 0}, // UD2, CALL
		{"undecodable", "amd64", []byte{0x06, 0xe8, 0, 0, 0, 0}, []Call{{Ret: 0x1006, Direct: true, Target: 0x1006}}, 1},    // PUSH ES is not in 64-bit mode
		{"386", "386", []byte{0xe8, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xd0}, []Call{{Ret: 0x1005, Direct: true, Target: 0x1000}, {Ret: 0x1007}}, 0},
		{"truncated", "amd64", []byte{0xe8, 0, 0}, nil, 0}, // x86asm reads E8 as a lone prefix, 00 00 as ADD
	} {
		got, bad := For(tc.goarch).Calls(nil, tc.code, 0x1000)
		if !slices.Equal(got, tc.want) || bad != tc.bad {
			t.Errorf("%s: got %+v, %d undecoded; want %+v, %d", tc.name, got, bad, tc.want, tc.bad)
		}
	}
}

func TestARM64(t *testing.T) {
	le := func(ws ...uint32) []byte {
		var b []byte
		for _, w := range ws {
			b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
		}
		return b
	}
	for _, tc := range []struct {
		name string
		code []byte
		want []Call
	}{
		{"bl", le(0xd503201f, 0x97ffffff), []Call{{Ret: 0x1008, Direct: true, Target: 0x1000}}}, // NOP; BL -4
		{"bl forward", le(0x94000002), []Call{{Ret: 0x1004, Direct: true, Target: 0x1008}}},
		{"blr", le(0xd63f0020, 0xd65f03c0), []Call{{Ret: 0x1004}}}, // BLR X1; RET
		{"b is not a call", le(0x17ffffff), nil},                   // B
		{"br is not a call", le(0xd61f0020), nil},                  // BR X1
		{"trailing bytes", append(le(0x94000001), 0x94), []Call{{Ret: 0x1004, Direct: true, Target: 0x1004}}},
	} {
		got, bad := For("arm64").Calls(nil, tc.code, 0x1000)
		if !slices.Equal(got, tc.want) || bad != 0 {
			t.Errorf("%s: got %+v, %d undecoded; want %+v", tc.name, got, bad, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	for goarch, name := range map[string]string{"amd64": "x86asm", "386": "x86asm", "arm64": "arm64asm", "riscv64": "", "s390x": ""} {
		d := For(goarch)
		if (d == nil) != (name == "") || d != nil && d.Name() != name {
			t.Errorf("For(%s) = %v, want %q", goarch, d, name)
		}
	}
}

// TestMatchesObjdump checks the calls found in every function of real
// binaries against Go's own disassembler: the same return addresses, and
// for direct calls the function objdump names as the callee holds the
// target.
func TestMatchesObjdump(t *testing.T) {
	for _, goarch := range []string{"amd64", "386", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			bin := testbuild.Build(t, testbuild.Config{Archive: "features", GOOS: "linux", GOARCH: goarch})
			f, err := objscan.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			secs, err := f.Code()
			if err != nil {
				t.Fatal(err)
			}
			entries := make([]uint64, len(f.Funcs))
			for i := range f.Funcs {
				entries[i] = f.Funcs[i].Entry
			}
			funcAt := func(pc uint64) int { return sort.Search(len(entries), func(i int) bool { return entries[i] > pc }) - 1 }
			inFunc := func(pc uint64) bool {
				i := funcAt(pc)
				return i >= 0 && pc < max(f.Funcs[i].End, f.Funcs[i].Entry+f.Funcs[i].Size)
			}

			d := For(goarch)
			got := map[uint64]Call{}
			for i := range f.Funcs {
				fn := &f.Funcs[i]
				calls, _ := d.Calls(nil, objscan.CodeAt(secs, fn.Entry, max(fn.End, fn.Entry+fn.Size)), fn.Entry)
				for _, c := range calls {
					got[c.Ret] = c
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			calls, err := objdump.Calls(ctx, testbuild.GoBinary(), bin)
			if err != nil {
				t.Fatal(err)
			}
			want, direct := 0, 0
			for _, oc := range calls {
				if !inFunc(oc.Addr) {
					continue
				}
				want++
				c, ok := got[oc.Ret()]
				if !ok {
					t.Errorf("objdump: %s; not found", oc.Line)
					continue
				}
				delete(got, oc.Ret())
				if oc.Target == "" {
					continue
				}
				// A named callee, possibly with an offset: a direct call.
				// objdump names assembly functions with their ABI, the
				// pclntab does not.
				name := strings.TrimSuffix(oc.Target, ".abi0")
				direct++
				if !c.Direct {
					t.Errorf("objdump: %s; found an indirect call", oc.Line)
				} else if i := funcAt(c.Target); i < 0 || f.Funcs[i].Name != name {
					t.Errorf("objdump: %s; target %#x is not in %s", oc.Line, c.Target, name)
				}
			}
			for ret := range got {
				t.Errorf("call with return address %#x: objdump shows none", ret)
			}
			if want < 1000 || direct < want/2 {
				t.Fatalf("objdump shows %d calls, %d direct: too few to check", want, direct)
			}
			t.Logf("%d calls (%d direct) agree with objdump", want, direct)
		})
	}
}

// FuzzCalls feeds arbitrary code to every decoder: it must not panic,
// must return calls in order inside the code, and must not read past it.
func FuzzCalls(f *testing.F) {
	f.Add([]byte{0xe8, 0, 0, 0, 0}, uint64(0x1000))
	f.Add([]byte{0x00, 0x00, 0x00, 0x94}, uint64(0x1000))
	f.Add([]byte{0xff, 0xd0, 0x20, 0x00, 0x3f, 0xd6}, uint64(0xfffffffffffffff0))
	f.Fuzz(func(t *testing.T, code []byte, pc uint64) {
		for _, goarch := range []string{"amd64", "386", "arm64"} {
			calls, bad := For(goarch).Calls(nil, slices.Clip(code), pc)
			if bad < 0 || bad > len(code) {
				t.Fatalf("%s: %d undecoded of %d bytes", goarch, bad, len(code))
			}
			prev := uint64(0)
			for _, c := range calls {
				off := c.Ret - pc
				if off == 0 || off > uint64(len(code)) || off <= prev {
					t.Fatalf("%s: return address %#x outside the code or out of order", goarch, c.Ret)
				}
				prev = off
			}
		}
	})
}
