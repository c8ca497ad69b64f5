package gateway

import (
	"testing"
	"time"
)

// TestRunBackstop_CoversTheSlowestRuntime: the client waits past a run's
// timeout for at least what a Kubernetes run may take around its program
// (core/workspace/kube: a minute to create its objects, a start of up
// to five minutes, the kill's 20 s grace and 5 s stream settle, and 90 s for
// removal), with five minutes left for the copies of the tree in and
// out.
func TestRunBackstop_CoversTheSlowestRuntime(t *testing.T) {
	phases := time.Minute + 5*time.Minute + 20*time.Second + 5*time.Second + 90*time.Second
	if runBackstop < phases+5*time.Minute {
		t.Fatalf("the client gives up %v after a run's timeout; the slowest runtime's phases around it take up to %v, plus the copies", runBackstop, phases)
	}
}
