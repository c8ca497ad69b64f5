package apply

import (
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestOps_EveryOperationSealsAndExecutes: every operation the proposal
// package defines has a step here, and every step says how it seals its
// outcome. A new operation that forgets either fails here, not on a card.
func TestOps_EveryOperationSealsAndExecutes(t *testing.T) {
	for _, op := range proposal.Ops() {
		args, err := proposal.DecodeArgs(op, []byte(`{}`))
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if op == proposal.OpPlan {
			args = &proposal.PlanArgs{Steps: []proposal.PlanStep{{Op: proposal.OpPatch, Args: &proposal.PatchArgs{}}}}
		}
		for _, st := range stepsOf(args) {
			if _, unknown := st.(unknownStep); unknown {
				t.Errorf("%s has no step in core/apply", op)
				continue
			}
			if _, ok := st.(sealer); !ok {
				t.Errorf("%s (%T) does not say how its outcome is sealed", op, st)
			}
		}
		if op.Phrase() == string(op) {
			t.Errorf("%s has no phrase for notifications", op)
		}
	}
}
