package connect

import (
	"slices"
	"strings"
)

// ReadTools and ProposeTools, what may be pre-allowed, are generated from
// the sidecar's tool table (tools_gen.go): read tools change nothing;
// propose tools only ask, and the person decides in Sluice.

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
