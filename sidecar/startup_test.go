package sidecar

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// initHeapBudget bounds what one of Sluice's own packages may allocate
// while it is initialised. What a package builds in init (compiled
// patterns, tables) is built on every start of every sidecar, one per
// agent session, and most of it stays on the heap while the sidecar is
// idle; build it on first use instead.
const initHeapBudget = 128 << 10

var initTraceLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, [0-9.]+ ms clock, ([0-9]+) bytes, ([0-9]+) allocs$`)

// TestSidecar_InitAllocationsWithinBudget runs the real binary with the
// runtime's init trace and holds every Sluice package under
// initHeapBudget.
func TestSidecar_InitAllocationsWithinBudget(t *testing.T) {
	cmd := exec.Command(sidecarBinary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice-sidecar version: %v\n%s", err, out)
	}
	traced, ours := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		m := initTraceLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		traced++
		if !strings.HasPrefix(m[1], "github.com/sluicehq/sluice/") {
			continue
		}
		ours++
		if n, _ := strconv.Atoi(m[2]); n > initHeapBudget {
			t.Errorf("%s allocates %d bytes (%s allocations) in init; the budget is %d", m[1], n, m[3], initHeapBudget)
		}
	}
	// The trace must have been read, or the check proves nothing: the
	// runtime and the sidecar's own package always report an init.
	if traced < 10 || ours == 0 {
		t.Fatalf("read %d init trace lines, %d of Sluice packages, from:\n%s", traced, ours, out)
	}
}
