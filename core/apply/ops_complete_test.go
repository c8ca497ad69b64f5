package apply

import (
	"testing"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestOps_EveryOperationSealsAndExecutes: every operation the proposal
// package defines has a step here, and a seal in core/apply/seal (its
// op_<operation>.go file). A new operation that forgets either fails
// here, not on a card.
func TestOps_EveryOperationSealsAndExecutes(t *testing.T) {
	for _, op := range proposal.Ops() {
		args, err := proposal.DecodeArgs(op, []byte(`{}`))
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if op == proposal.OpPlan {
			args = &proposal.PlanArgs{Steps: []proposal.PlanStep{{Op: proposal.OpPatch, Args: &proposal.PatchArgs{}}}}
		}
		if !seal.Seals(args) {
			t.Errorf("%s has no seal in core/apply/seal (op_%s.go) saying what its card shows", op, op)
		}
		for _, st := range stepsOf(args) {
			if _, unknown := st.(unknownStep); unknown {
				t.Errorf("%s has no step in core/apply", op)
				continue
			}
		}
		if op.Phrase() == string(op) {
			t.Errorf("%s has no phrase for notifications", op)
		}
	}
}
