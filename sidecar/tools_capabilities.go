package sidecar

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
)

// CapabilitiesIn takes no arguments.
type CapabilitiesIn struct{}

// Limits are the bounds every tool respects. Later families extend this.
type Limits struct {
	MaxProposalWaitSeconds int `json:"maxProposalWaitSeconds" jsonschema:"longest proposal_wait long-poll"`
	PendingExpirySeconds   int `json:"pendingExpirySeconds" jsonschema:"how long a proposal waits for a decision before it expires"`
	MaxPatchBytes          int `json:"maxPatchBytes" jsonschema:"largest patch a proposal may carry"`
	// Git is set when the git toolset is enabled.
	Git *GitLimits `json:"git,omitempty" jsonschema:"bounds of the read-only git tools"`
}

// GatewayStatus says whether proposals can reach the app right now.
type GatewayStatus struct {
	Reachable  bool   `json:"reachable" jsonschema:"true when the Sluice app answered just now"`
	AppVersion string `json:"appVersion,omitempty" jsonschema:"the app's version when reachable"`
	Problem    string `json:"problem,omitempty" jsonschema:"why it is not reachable"`
}

// CapabilitiesOut describes this sidecar.
type CapabilitiesOut struct {
	Version           string          `json:"version" jsonschema:"sidecar version"`
	Toolsets          []string        `json:"toolsets" jsonschema:"toolsets enabled in this session"`
	AvailableToolsets []string        `json:"availableToolsets" jsonschema:"every toolset this sidecar knows"`
	AllowedRoots      []string        `json:"allowedRoots" jsonschema:"directories under which repositories may be named; empty means none are configured"`
	Limits            Limits          `json:"limits"`
	Gateway           GatewayStatus   `json:"gateway"`
	Features          map[string]bool `json:"features" jsonschema:"feature flags"`
	AuditDegraded     bool            `json:"auditDegraded" jsonschema:"true when this sidecar could not write an audit entry; reads continue, flagged"`
	ErrorField
}

func (s *Sidecar) registerCapabilities() {
	addTool(s.server, &mcp.Tool{
		Name:  "sluice_capabilities",
		Title: "Sluice capabilities",
		Description: "Describe this Sluice sidecar: version, enabled toolsets, limits, allowed repository roots, " +
			"and whether the Sluice app is reachable (proposals need it; reads do not). Call it when a proposal " +
			"fails with gateway_unavailable or to learn the limits before large requests.",
		Annotations: readOnly("Sluice capabilities"),
	}, s.capabilities)
}

func (s *Sidecar) capabilities(ctx context.Context, _ *mcp.CallToolRequest, _ CapabilitiesIn) (CapabilitiesOut, error) {
	out := CapabilitiesOut{
		Version:           config.Version,
		Toolsets:          s.toolsets,
		AvailableToolsets: append([]string{}, availableToolsets()...),
		AllowedRoots:      append([]string{}, s.cfg.AllowedRoots...),
		Limits: Limits{
			MaxProposalWaitSeconds: 50,
			PendingExpirySeconds:   int(s.cfg.PendingExpiry / time.Second),
			MaxPatchBytes:          4 << 20,
			Git:                    gitLimits(s),
		},
		Features:      map[string]bool{},
		AuditDegraded: s.ledger == nil || s.auditDegraded.Load(),
	}
	if out.Toolsets == nil {
		out.Toolsets = []string{}
	}
	for _, f := range featureFlags {
		out.Features[f.name] = f.on(s)
	}
	c, err := s.gateway()
	if err != nil {
		out.Gateway.Problem = asToolError(err).Message
		return out, nil
	}
	h, err := c.Health(ctx)
	if err != nil {
		out.Gateway.Problem = "the Sluice app at " + c.Addr() + " did not answer; ask the person to start Sluice"
		return out, nil
	}
	out.Gateway = GatewayStatus{Reachable: true, AppVersion: h.AppVersion}
	return out, nil
}

// featureFlags are reported by sluice_capabilities; families append to it.
var featureFlags []struct {
	name string
	on   func(*Sidecar) bool
}
