package objdump

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	out := []byte(`TEXT main.main(SB) /tmp/x/main.go
  main.go:9		0x4a0c20		493b6610		CMPQ SP, 0x10(R14)
  main.go:10		0x4a0c2e		e8cdffffff		CALL main.f(SB)
  main.go:11		0x4a0c33		e8c8a4fcff		CALL runtime.duffcopy+0x3c0(SB)
  main.go:12		0x8049a10		e8fb2f0000		CALL 0x804ca10
  main.go:13		0x4a0c40		ffd2			CALL DX
  main.go:14		0x4a0c42		e800000000		CALL runtime.morestack.abi0(SB)
`)
	got, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Line = ""
	}
	want := []Call{
		{Addr: 0x4a0c2e, Len: 5, Target: "main.f", Operand: "main.f(SB)"},
		{Addr: 0x4a0c33, Len: 5, Target: "runtime.duffcopy", Operand: "runtime.duffcopy+0x3c0(SB)"},
		{Addr: 0x8049a10, Len: 5, TargetAddr: 0x804ca10, Operand: "0x804ca10"},
		{Addr: 0x4a0c40, Len: 2, Operand: "DX"},
		{Addr: 0x4a0c42, Len: 5, Target: "runtime.morestack.abi0", Operand: "runtime.morestack.abi0(SB)"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
	if r := got[0].Ret(); r != 0x4a0c33 {
		t.Errorf("Ret = %#x", r)
	}
}
