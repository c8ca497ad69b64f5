package connect

import (
	"slices"
	"strings"
)

// The one list of what may be pre-allowed. Read tools (the git toolset)
// change nothing; propose tools only ask: the person decides in Sluice. A
// test in the sidecar fails when a tool is registered in those toolsets but
// missing here, or when a listed read tool is not annotated read-only.
var (
	// ReadTools are the git toolset and sluice_capabilities.
	ReadTools = []string{
		"repo_brief", "repo_scope", "repo_status", "repo_refs", "repo_branch_stack",
		"repo_history", "repo_reflog", "repo_conflict_preflight", "conflict_read",
		"commit_details", "worktree_changes", "worktree_list", "submodule_status",
		"diff_text", "diff_semantic", "fleet_radar", "fleet_digest", "agents_presence",
		"safety_timeline", "safety_event", "restore_points", "restore_point_details",
		"sluice_capabilities",
	}
	// ProposeTools are the propose and propose_more toolsets.
	ProposeTools = []string{
		"propose_merge", "propose_rebase", "propose_discard", "propose_reset",
		"propose_patch", "propose_plan", "propose_worktree", "propose_commit",
		"propose_push", "propose_branch", "propose_branch_delete",
		"propose_submodule_pointer", "proposal_status", "proposal_wait", "proposal_cancel",
	}
)

// ServerName is the name Sluice's entry has in every client's file; tool
// names in clients' allow-lists are derived from it.
const ServerName = "sluice"

// PreAllowTools returns the tools to pre-allow for the chosen toolsets:
// read tools when "git" is on (sluice_capabilities always, since it is
// always served), propose tools when "propose" is on, and nothing for
// "workspace".
func PreAllowTools(toolsets []string) []string {
	var out []string
	if slices.Contains(toolsets, "git") {
		out = append(out, ReadTools...)
	} else {
		out = append(out, "sluice_capabilities")
	}
	if slices.Contains(toolsets, "propose") {
		out = append(out, ProposeTools...)
	}
	return out
}

// preAllowWords says, in words that are true for these toolsets, what the
// pre-allowed tools can do and what still asks.
func preAllowWords(toolsets []string) string {
	var parts []string
	if slices.Contains(toolsets, "git") {
		parts = append(parts, "the read tools, which change nothing")
	} else {
		parts = append(parts, "sluice_capabilities, which changes nothing")
	}
	if slices.Contains(toolsets, "propose") {
		parts = append(parts, "the propose tools, which only propose: every change, propose_reset and propose_discard included, still waits for a person's approval in Sluice")
	}
	s := strings.Join(parts, ", and ")
	if slices.Contains(toolsets, "workspace") {
		s += "; workspace tools still ask"
	}
	return s
}
