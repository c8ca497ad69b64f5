package sidecar

import (
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestPropose_EveryOperationHasATool: each operation core/proposal
// defines can be proposed, by a tool named propose_<op>, in a propose
// toolset (propose, or propose_more for the ones a session needs now and
// then).
func TestPropose_EveryOperationHasATool(t *testing.T) {
	have := map[string]string{}
	for _, lt := range allTools(t) {
		have[lt.Tool.Name] = lt.Toolset
	}
	for _, op := range proposal.Ops() {
		name := "propose_" + string(op)
		if set, ok := have[name]; !ok || (set != "propose" && set != "propose_more") {
			t.Errorf("%s: no tool %s in a propose toolset (found in %q)", op, name, set)
		}
	}
}

// TestPropose_RowsNameTheirOperation: a propose row's tool is named for
// its operation, and every operation but a plan declares its input, so a
// row and the input it offers cannot drift apart.
func TestPropose_RowsNameTheirOperation(t *testing.T) {
	n := 0
	for _, row := range toolTable {
		if row.propose == nil {
			continue
		}
		n++
		if row.name != "propose_"+string(row.propose.op) || !row.propose.op.Valid() {
			t.Errorf("row %s proposes %q", row.name, row.propose.op)
		}
		if proposal.NewInput(row.propose.op) == nil && row.propose.op != proposal.OpPlan {
			t.Errorf("%s: core/proposal declares no input for it", row.propose.op)
		}
	}
	if n != len(proposal.Ops()) {
		t.Errorf("%d propose rows for %d operations", n, len(proposal.Ops()))
	}
}
