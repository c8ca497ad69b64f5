package sidecar

import (
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/proposal"
)

// This file is the sidecar's inventory: every tool it can serve, the
// toolset that brings it and what it may do, then how each toolset
// registers its tools. The server registers from it, sluice_capabilities
// and toolset_enable count and name tools from it, and core/connect's
// pre-allow lists are generated from it (TestPreAllowLists_Generated).
// TestToolTable_IsWhatEachToolsetServes holds what each toolset registers
// to its rows, so a tool cannot be served without being listed here.

// toolKind is what a tool may do, which decides what a client is told to
// pre-allow.
type toolKind uint8

const (
	// readKind tools change nothing. They are pre-allowed when the git
	// toolset is on (sluice_capabilities always).
	readKind toolKind = iota + 1
	// proposeKind tools propose a change, or read or withdraw a proposal:
	// nothing reaches a repository without the person's approval in
	// Sluice. They are pre-allowed when the propose toolset is on.
	proposeKind
	// askKind tools are never pre-allowed, so the client asks each time:
	// the workspace tools (they create, change and run things in a
	// workspace, and reading one goes with that) and toolset_enable.
	askKind
)

// toolRow is one tool of the inventory. An empty toolset means the tool
// is always served.
type toolRow struct {
	name    string
	toolset string
	kind    toolKind
	// propose is a propose_<op> tool: its operation, title, description
	// and whether it is destructive. Its input is the operation's own (see
	// propose_input.go), so it needs nothing else here or in the toolset's
	// registration.
	propose *proposeTool
}

// toolTable lists every tool. Within each kind the order is the order in
// which clients' files list the pre-allowed tools.
var toolTable = []toolRow{
	{"repo_brief", "git", readKind, nil},
	{"repo_scope", "git", readKind, nil},
	{"repo_status", "git", readKind, nil},
	{"repo_refs", "git", readKind, nil},
	{"repo_branch_stack", "git", readKind, nil},
	{"repo_history", "git", readKind, nil},
	{"repo_reflog", "git", readKind, nil},
	{"repo_conflict_preflight", "git", readKind, nil},
	{"conflict_read", "git", readKind, nil},
	{"commit_details", "git", readKind, nil},
	{"worktree_changes", "git", readKind, nil},
	{"worktree_list", "git", readKind, nil},
	{"submodule_status", "git", readKind, nil},
	{"diff_text", "git", readKind, nil},
	{"diff_semantic", "git", readKind, nil},
	{"fleet_radar", "fleet", readKind, nil},
	{"fleet_digest", "fleet", readKind, nil},
	{"agents_presence", "git", readKind, nil},
	{"safety_timeline", "safety", readKind, nil},
	{"safety_event", "safety", readKind, nil},
	{"restore_points", "safety", readKind, nil},
	{"restore_point_details", "safety", readKind, nil},
	{"sluice_capabilities", "", readKind, nil},

	{"propose_merge", "propose", proposeKind, &proposeTool{proposal.OpMerge, "Propose a merge",
		"Propose merging source into target, as a merge commit or one squashed commit. Use it to integrate a " +
			"branch; a conflicting merge is refused at once with the files.", false}},
	{"propose_rebase", "propose", proposeKind, &proposeTool{proposal.OpRebase, "Propose a rebase",
		"Propose replaying branch onto another revision (never interactive; rewriting a pushed branch is " +
			"destructive). Use it to bring a branch up to date.", false}},
	{"propose_discard", "propose", proposeKind, &proposeTool{proposal.OpDiscard, "Propose discarding changes",
		"Propose throwing away uncommitted changes to paths, untracked files too with untracked " +
			"(destructive). Use it to drop edits that are not wanted.", true}},
	{"propose_reset", "propose", proposeKind, &proposeTool{proposal.OpReset, "Propose a reset",
		"Propose moving the checked-out branch to target: soft, mixed, or hard, which discards uncommitted " +
			"changes (destructive). Use it to undo commits.", true}},
	{"propose_patch", "propose", proposeKind, &proposeTool{proposal.OpPatch, "Propose a patch",
		"Propose applying a unified diff to the working tree or only to the index. Use it to change files; a " +
			"patch that does not apply is refused at once with git's reason.", false}},
	{"propose_plan", "propose_more", proposeKind, &proposeTool{proposal.OpPlan, "Propose a plan",
		"Propose 1 to 10 steps approved as one unit and run in order until one fails; each step is op (merge, " +
			"rebase, discard, reset or patch) with the arguments propose_<op> takes but repoPath, reason and " +
			"idempotencyKey. Use it when steps only make sense together.", false}},
	{"propose_worktree", "propose_more", proposeKind, &proposeTool{proposal.OpWorktree, "Propose a worktree",
		"Propose a linked worktree at path with branch checked out (newBranch creates it from startPoint). " +
			"Use it to work on a second branch side by side.", false}},
	{"propose_commit", "propose", proposeKind, &proposeTool{proposal.OpCommit, "Propose a commit",
		"Propose committing paths, or every change with stageAll, on the checked-out branch as the files are " +
			"now, with the person's identity, hooks and signing; it never amends. Use it when your edits are " +
			"ready; stackOn puts it on top of your own pending commit proposal.", false}},
	{"propose_push", "propose", proposeKind, &proposeTool{proposal.OpPush, "Propose a push",
		"Propose pushing a branch to a remote, optionally setting its upstream; forcing is only " +
			"--force-with-lease (destructive). Use it to publish commits.", false}},
	{"propose_branch", "propose", proposeKind, &proposeTool{proposal.OpBranch, "Propose a branch",
		"Propose creating a branch at startPoint (default HEAD), optionally checking it out. Use it before " +
			"work that should not land on the current branch.", false}},
	{"propose_branch_delete", "propose", proposeKind, &proposeTool{proposal.OpBranchDelete, "Propose deleting branches",
		"Propose deleting branches here and in other repositories; only merged branches that are not checked " +
			"out go. Use it to clean up.", false}},
	{"propose_submodule_pointer", "propose_more", proposeKind, &proposeTool{proposal.OpSubmodulePointer, "Propose a submodule pointer change",
		"Propose recording a submodule's checked-out commit as the superproject's pointer (record), or " +
			"checking out the recorded one (return). Use it when submodule_status shows drift.", false}},
	{"proposal_status", "propose", proposeKind, nil},
	{"proposal_wait", "propose", proposeKind, nil},
	{"proposal_cancel", "propose", proposeKind, nil},

	{"toolset_enable", "", askKind, nil},
	{"workspace_create", "workspace", askKind, nil},
	{"workspace_status", "workspace", askKind, nil},
	{"workspace_file_read", "workspace", askKind, nil},
	{"workspace_file_write", "workspace", askKind, nil},
	{"workspace_file_edit", "workspace", askKind, nil},
	{"workspace_run", "workspace", askKind, nil},
	{"workspace_diff", "workspace", askKind, nil},
	{"workspace_seal", "workspace", askKind, nil},
	{"workspace_destroy", "workspace", askKind, nil},
	{"workspace_file_list", "workspace_search", askKind, nil},
	{"workspace_file_glob", "workspace_search", askKind, nil},
	{"workspace_file_grep", "workspace_search", askKind, nil},
}

// toolsetTable says how each toolset registers its tools on a session's
// server; registration only declares tools, nothing is opened or started
// until one is called. The tools that are always served are registered by
// registerCapabilities.
var toolsetTable = []struct {
	name     string
	register func(*Sidecar)
}{
	{"git", func(s *Sidecar) {
		s.registerPresence()
		g := &gitTools{s: s}
		g.registerRepo()
		g.registerWorktree()
		g.registerDiff()
	}},
	{"propose", (*Sidecar).registerPropose},
	// The proposals a session needs now and then (plans, worktrees,
	// submodule pointers), one toolset_enable away.
	{"propose_more", (*Sidecar).registerProposeMore},
	{"workspace", func(s *Sidecar) { s.workspaceTools().register() }},
	{"workspace_search", func(s *Sidecar) { s.workspaceTools().registerSearch() }},
	// Read-only like git, but needed less often: across many
	// repositories, and when something has to be undone. They are off by
	// default and one toolset_enable away, so that a session pays for
	// them only when it uses them.
	{"fleet", func(s *Sidecar) { (&gitTools{s: s}).registerFleet() }},
	{"safety", func(s *Sidecar) { (&gitTools{s: s}).registerSafety() }},
}

// toolsetRegistration is how a toolset registers its tools, or nil when
// this sidecar has no such toolset.
func toolsetRegistration(toolset string) func(*Sidecar) {
	for _, t := range toolsetTable {
		if t.name == toolset {
			return t.register
		}
	}
	return nil
}

// toolsetToolNames are the tools a toolset brings, in the table's order.
func toolsetToolNames(toolset string) []string {
	var out []string
	for _, t := range toolTable {
		if t.toolset == toolset {
			out = append(out, t.name)
		}
	}
	return out
}

// toolsOfKind are the tools of one kind, in the table's order.
func toolsOfKind(kind toolKind) []string {
	var out []string
	for _, t := range toolTable {
		if t.kind == kind {
			out = append(out, t.name)
		}
	}
	return out
}

// availableToolsets are the toolsets built into this sidecar, in the
// configuration's order.
func availableToolsets() []string {
	var out []string
	for _, name := range config.KnownToolsets {
		if toolsetRegistration(name) != nil {
			out = append(out, name)
		}
	}
	return out
}
