package sidecar

import "github.com/sluicehq/sluice/core/config"

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
}

// toolTable lists every tool. Within each kind the order is the order in
// which clients' files list the pre-allowed tools.
var toolTable = []toolRow{
	{"repo_brief", "git", readKind},
	{"repo_scope", "git", readKind},
	{"repo_status", "git", readKind},
	{"repo_refs", "git", readKind},
	{"repo_branch_stack", "git", readKind},
	{"repo_history", "git", readKind},
	{"repo_reflog", "git", readKind},
	{"repo_conflict_preflight", "git", readKind},
	{"conflict_read", "git", readKind},
	{"commit_details", "git", readKind},
	{"worktree_changes", "git", readKind},
	{"worktree_list", "git", readKind},
	{"submodule_status", "git", readKind},
	{"diff_text", "git", readKind},
	{"diff_semantic", "git", readKind},
	{"fleet_radar", "fleet", readKind},
	{"fleet_digest", "fleet", readKind},
	{"agents_presence", "git", readKind},
	{"safety_timeline", "safety", readKind},
	{"safety_event", "safety", readKind},
	{"restore_points", "safety", readKind},
	{"restore_point_details", "safety", readKind},
	{"sluice_capabilities", "", readKind},

	{"propose_merge", "propose", proposeKind},
	{"propose_rebase", "propose", proposeKind},
	{"propose_discard", "propose", proposeKind},
	{"propose_reset", "propose", proposeKind},
	{"propose_patch", "propose", proposeKind},
	{"propose_plan", "propose_more", proposeKind},
	{"propose_worktree", "propose_more", proposeKind},
	{"propose_commit", "propose", proposeKind},
	{"propose_push", "propose", proposeKind},
	{"propose_branch", "propose", proposeKind},
	{"propose_branch_delete", "propose", proposeKind},
	{"propose_submodule_pointer", "propose_more", proposeKind},
	{"proposal_status", "propose", proposeKind},
	{"proposal_wait", "propose", proposeKind},
	{"proposal_cancel", "propose", proposeKind},

	{"toolset_enable", "", askKind},
	{"workspace_create", "workspace", askKind},
	{"workspace_status", "workspace", askKind},
	{"workspace_file_read", "workspace", askKind},
	{"workspace_file_write", "workspace", askKind},
	{"workspace_file_edit", "workspace", askKind},
	{"workspace_run", "workspace", askKind},
	{"workspace_diff", "workspace", askKind},
	{"workspace_seal", "workspace", askKind},
	{"workspace_destroy", "workspace", askKind},
	{"workspace_file_list", "workspace_search", askKind},
	{"workspace_file_glob", "workspace_search", askKind},
	{"workspace_file_grep", "workspace_search", askKind},
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
