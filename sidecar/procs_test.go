package sidecar

import (
	"runtime"
	"testing"
)

// A stdio sidecar runs on at most servingProcs processors unless the
// person set GOMAXPROCS; the runtime's own default (one per core) is what
// it caps, checked against the real runtime: this machine's cores cannot
// show it, so the test raises the setting first, as a larger machine
// would start with.
func TestCapProcs_DefaultCappedPersonsKept(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(16)
	capProcs()
	if got := runtime.GOMAXPROCS(0); got != servingProcs {
		t.Errorf("runtime default 16, no GOMAXPROCS: running on %d processors, want %d", got, servingProcs)
	}

	runtime.GOMAXPROCS(1)
	capProcs()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("one processor: running on %d, want 1 (the cap never raises)", got)
	}

	t.Setenv("GOMAXPROCS", "16")
	runtime.GOMAXPROCS(16)
	capProcs()
	if got := runtime.GOMAXPROCS(0); got != 16 {
		t.Errorf("GOMAXPROCS=16 set by the person: running on %d, want 16", got)
	}
}

func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		env           string
		current, want int
	}{
		{"", 16, servingProcs},
		{"", 3, servingProcs},
		{"", servingProcs, servingProcs},
		{"", 1, 1},
		{"8", 8, 8},
		{"1", 1, 1},
	} {
		if got := procsFor(c.env, c.current); got != c.want {
			t.Errorf("procsFor(%q, %d) = %d, want %d", c.env, c.current, got, c.want)
		}
	}
}
