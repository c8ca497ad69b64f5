package sidecar

import (
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// TestPropose_EveryOperationHasATool: each operation core/proposal
// defines can be proposed, by a tool named propose_<op>, in the propose
// toolset.
func TestPropose_EveryOperationHasATool(t *testing.T) {
	have := map[string]string{}
	for _, lt := range allTools(t) {
		have[lt.Tool.Name] = lt.Toolset
	}
	for _, op := range proposal.Ops() {
		name := "propose_" + string(op)
		if set, ok := have[name]; !ok || set != "propose" {
			t.Errorf("%s: no tool %s in the propose toolset (found in %q)", op, name, set)
		}
	}
}
