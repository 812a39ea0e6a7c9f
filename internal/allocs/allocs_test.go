package allocs

import "testing"

var sink []byte

func TestBytes(t *testing.T) {
	got := Bytes(func() { sink = make([]byte, 1<<20) })
	if got < 1<<20 || got > 1<<20+64<<10 {
		t.Errorf("Bytes of a 1 MiB allocation = %d", got)
	}
	if got := Bytes(func() {}); got > 16<<10 {
		t.Errorf("Bytes of nothing = %d", got)
	}
}
