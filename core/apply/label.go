package apply

import "github.com/sluicehq/sluice/core/proposal"

// proposalLabel names a restore point by what it preserves: the state
// before this operation by this agent ("before commit 'Add line' by
// claude-code").
func proposalLabel(p proposal.Proposal) string {
	s := "before " + p.Args.Describe()
	if p.Agent != "" {
		s += " by " + p.Agent
	}
	return s
}
