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

func TestLeast(t *testing.T) {
	calls := 0
	// The first call allocates 4 MiB more, as a goroutine running
	// alongside might: Least reports the calls that did not.
	got := Least(3, func() {
		calls++
		if calls == 1 {
			sink = make([]byte, 4<<20)
		}
		sink = make([]byte, 1<<20)
	})
	if calls != 3 {
		t.Errorf("Least(3, fn) called fn %d times", calls)
	}
	if got < 1<<20 || got > 1<<20+64<<10 {
		t.Errorf("Least of a 1 MiB allocation = %d", got)
	}
	calls = 0
	if Least(0, func() { calls++ }); calls != 1 {
		t.Errorf("Least(0, fn) called fn %d times", calls)
	}
}
