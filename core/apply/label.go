package apply

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/proposal"
)

// maxLabelSubject bounds the part of a label quoted from an agent's text
// (a commit message's subject): a label is a line in a list, not the text.
const maxLabelSubject = 60

// proposalLabel names a restore point by what it preserves: the state
// before this operation by this agent ("before commit 'Add line' by
// claude-code").
func proposalLabel(p proposal.Proposal) string {
	s := "before " + describe(p.Op, p.Args)
	if p.Agent != "" {
		s += " by " + p.Agent
	}
	return s
}

// describe says what an operation does, in a few words from its
// arguments.
func describe(op proposal.Op, args proposal.Args) string {
	switch a := args.(type) {
	case *proposal.CommitArgs:
		subject, _, _ := strings.Cut(strings.TrimSpace(a.Message), "\n")
		s := "commit " + quote(subject)
		if a.Branch != "" {
			s += " on " + a.Branch
		}
		return s
	case *proposal.MergeArgs:
		return fmt.Sprintf("merge of %s into %s", a.Source, a.Target)
	case *proposal.RebaseArgs:
		return fmt.Sprintf("rebase of %s onto %s", a.Branch, a.Onto)
	case *proposal.ResetArgs:
		s := fmt.Sprintf("%s reset", a.Mode)
		if a.Branch != "" {
			s += " of " + a.Branch
		}
		return s + " to " + a.Target
	case *proposal.DiscardArgs:
		return "discarding changes in " + countOf(len(a.Paths), "path")
	case *proposal.PatchArgs:
		if a.Branch != "" {
			return "patch on " + a.Branch
		}
		return "patch"
	case *proposal.PlanArgs:
		parts := make([]string, 0, len(a.Steps))
		for _, st := range a.Steps {
			parts = append(parts, string(st.Op))
		}
		return "plan (" + strings.Join(parts, ", ") + ")"
	case *proposal.WorktreeArgs:
		return fmt.Sprintf("worktree %s for %s", a.Path, a.Branch)
	case *proposal.PushArgs:
		return fmt.Sprintf("push of %s to %s", a.Branch, a.Remote)
	case *proposal.BranchArgs:
		return "branch " + a.Name
	case *proposal.BranchDeleteArgs:
		return "deleting " + strings.Join(a.Branches, ", ")
	case *proposal.SubmodulePointerArgs:
		return fmt.Sprintf("submodule %s %s", a.Action, a.Path)
	}
	return string(op)
}

func quote(s string) string {
	if utf8.RuneCountInString(s) > maxLabelSubject {
		r := []rune(s)
		s = string(r[:maxLabelSubject-1]) + "…"
	}
	return "'" + s + "'"
}

func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
