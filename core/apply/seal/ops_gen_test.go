package seal

import (
	"os/exec"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestOps_Seals_Current: ops_gen.go gives every seal that an
// op_<operation>.go file declares to its operation's arguments (go
// generate writes it).
func TestOps_Seals_Current(t *testing.T) {
	out, err := exec.Command("go", "run", "../../../build/opsgen", "-check", "seal").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestOps_EveryOperationSeals: every operation the proposal package
// defines has a seal here, in its op_<operation>.go file, that says what
// its card shows; a plan's steps are each sealed by theirs.
func TestOps_EveryOperationSeals(t *testing.T) {
	for _, op := range proposal.Ops() {
		args, err := proposal.DecodeArgs(op, []byte(`{}`))
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if op == proposal.OpPlan {
			args = &proposal.PlanArgs{Steps: []proposal.PlanStep{{Op: proposal.OpPatch, Args: &proposal.PatchArgs{}}}}
		}
		if !Seals(args) {
			t.Errorf("%s has no seal: write core/apply/seal/op_%s.go with its seal type, then go generate", op, op)
		}
	}
}
