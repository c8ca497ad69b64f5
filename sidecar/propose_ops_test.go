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
