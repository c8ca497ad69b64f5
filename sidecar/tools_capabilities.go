package sidecar

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
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
	AvailableToolsets []string        `json:"availableToolsets" jsonschema:"every toolset this sidecar knows; toolset_enable adds one to this session"`
	ToolsetTools      map[string]int  `json:"toolsetTools" jsonschema:"how many tools each available toolset brings"`
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
		Description: "Version, toolsets (enabled and available), limits, allowed roots, and whether the Sluice app is " +
			"reachable (proposals need it; reads do not). Use it when a proposal fails with gateway_unavailable, " +
			"before large requests, or to find a toolset to enable.",
		Annotations: readOnly("Sluice capabilities"),
	}, s.capabilities)
	addTool(s.server, &mcp.Tool{
		Name:  "toolset_enable",
		Title: "Enable a toolset",
		Description: "Add a toolset's tools to this session at once (propose_more: plans, worktrees, submodule " +
			"pointers; workspace_search: list, glob, grep; fleet: many repositories; safety: restore points, reflog). " +
			"Use it when a tool you need is not listed.",
		InputSchema: derived("toolset_enable", toolsetEnableSchema),
		Annotations: &mcp.ToolAnnotations{Title: "Enable a toolset", IdempotentHint: true, DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, s.toolsetEnable)
}

// ToolsetEnableIn names the toolset to add.
type ToolsetEnableIn struct {
	Toolset string `json:"toolset" jsonschema:"see sluice_capabilities"`
}

// ToolsetEnableOut is the session's toolsets after the call.
type ToolsetEnableOut struct {
	Toolsets []string `json:"toolsets" jsonschema:"toolsets enabled in this session now"`
	Added    []string `json:"added" jsonschema:"the tools this call added (empty when the toolset was already on)"`
	ErrorField
}

func toolsetEnableSchema() *jsonschema.Schema {
	s, err := jsonschema.For[ToolsetEnableIn](nil)
	if err != nil {
		panic(err)
	}
	for _, t := range availableToolsets() {
		s.Properties["toolset"].Enum = append(s.Properties["toolset"].Enum, t)
	}
	return s
}

// toolsetEnable registers a toolset on this session's server. The SDK
// then sends notifications/tools/list_changed, so a client lists the new
// tools without a restart. Each session has its own Sidecar (stdio: the
// process; HTTP: one per session), so one agent's choice never widens
// another's tools.
func (s *Sidecar) toolsetEnable(_ context.Context, _ *mcp.CallToolRequest, in ToolsetEnableIn) (ToolsetEnableOut, error) {
	fn := toolsetRegistration(in.Toolset)
	if fn == nil {
		return ToolsetEnableOut{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("unknown toolset %q", in.Toolset) +
			"; choose one of " + strings.Join(availableToolsets(), ", ") + " (sluice_capabilities lists them)"}
	}
	if s.allowedToolsets != nil && !slices.Contains(s.allowedToolsets, in.Toolset) {
		return ToolsetEnableOut{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("toolset %q is not granted to this connector", in.Toolset) +
			"; it may enable " + strings.Join(s.allowedToolsets, ", ")}
	}
	// Without an image every workspace tool can only fail, so they are not
	// added: the agent is told how the person turns workspaces on instead,
	// and no tool definitions it cannot use cost it context.
	if needsImage(in.Toolset) && s.conf().cfg.WorkspaceRunImage() == "" {
		return ToolsetEnableOut{}, errNoImage
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ToolsetEnableOut{Added: []string{}}
	if !slices.Contains(s.toolsets, in.Toolset) {
		fn(s)
		s.toolsets = append(s.toolsets, in.Toolset)
		out.Added = append(out.Added, toolsetToolNames(in.Toolset)...)
	}
	out.Toolsets = slices.Clone(s.toolsets)
	return out, nil
}

func (s *Sidecar) capabilities(ctx context.Context, _ *mcp.CallToolRequest, _ CapabilitiesIn) (CapabilitiesOut, error) {
	s.mu.Lock()
	enabled := slices.Clone(s.toolsets)
	s.mu.Unlock()
	out := CapabilitiesOut{
		Version:           config.Version,
		Toolsets:          enabled,
		ToolsetTools:      map[string]int{},
		AvailableToolsets: append([]string{}, availableToolsets()...),
		AllowedRoots:      append([]string{}, s.conf().cfg.AllowedRoots...),
		Limits: Limits{
			MaxProposalWaitSeconds: 50,
			PendingExpirySeconds:   int(s.conf().cfg.PendingExpiry / time.Second),
			MaxPatchBytes:          4 << 20,
			Git:                    gitLimits(enabled),
		},
		Features:      map[string]bool{},
		AuditDegraded: s.ledger == nil || s.auditDegraded.Load(),
	}
	if out.Toolsets == nil {
		out.Toolsets = []string{}
	}
	for _, t := range availableToolsets() {
		out.ToolsetTools[t] = len(toolsetToolNames(t))
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

// featureFlags are reported by sluice_capabilities.
var featureFlags = []struct {
	name string
	on   func(*Sidecar) bool
}{
	{"gitConflictPreflight", func(*Sidecar) bool {
		r, err := gitx.Default()
		return err == nil && r.Version().AtLeast(gitx.MinMergeTree)
	}},
	{"gitSemanticDiffGo", func(*Sidecar) bool { return true }},
	{"workspaces", func(s *Sidecar) bool { return s.conf().cfg.WorkspaceRunImage() != "" }},
}
