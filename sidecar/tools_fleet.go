package sidecar

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gitx"
)

// FleetIn chooses the repositories of a fleet call.
type FleetIn struct {
	RepoPaths []string `json:"repoPaths,omitempty" jsonschema:"repositories; with neither this nor under, every allowed root is searched"`
	Under     []string `json:"under,omitempty" jsonschema:"directories to search"`
	Depth     int      `json:"depth,omitempty" jsonschema:"below each directory (default 3, max 6)"`
	MaxRepos  int      `json:"maxRepos,omitempty" jsonschema:"default 50, max 500"`
}

// FleetRadarOut is fleet_radar's result.
type FleetRadarOut struct {
	gitx.Radar
	ErrorField
}

// FleetDigestIn adds the window.
type FleetDigestIn struct {
	FleetIn
	Since string `json:"since,omitempty" jsonschema:"a date, or a duration back such as 36h or 7d (default 24h)"`
}

// FleetDigestOut is fleet_digest's result.
type FleetDigestOut struct {
	gitx.Digest
	ErrorField
}

func (in FleetIn) options() gitx.FleetOptions {
	return gitx.FleetOptions{RepoPaths: in.RepoPaths, Under: in.Under, Depth: in.Depth, MaxRepos: in.MaxRepos}
}

func (g *gitTools) registerFleet() {
	addTool(g.s.server, &mcp.Tool{
		Name:  "fleet_radar",
		Title: "Fleet radar",
		Description: "Across many repositories, which need attention and why, most urgent first: conflicts, diverged or " +
			"gone upstreams, uncommitted or unpushed work. Use it to choose where to work.",
		Annotations: readOnly("Fleet radar"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in FleetIn) (FleetRadarOut, error) {
		r, err := g.runner()
		if err != nil {
			return FleetRadarOut{}, err
		}
		rad, err := r.Radar(ctx, g.s.conf().roots, in.options())
		if err != nil {
			return FleetRadarOut{}, err
		}
		return FleetRadarOut{Radar: *rad}, nil
	})

	addTool(g.s.server, &mcp.Tool{
		Name:  "fleet_digest",
		Title: "Fleet digest",
		Description: "What moved across many repositories since a time, from their reflogs: branches advanced or " +
			"rewritten, branch switches. Use it to catch up after time away.",
		Annotations: readOnly("Fleet digest"),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in FleetDigestIn) (FleetDigestOut, error) {
		since, err := gitx.ParseSince(in.Since, time.Now())
		if err != nil {
			return FleetDigestOut{}, err
		}
		r, err := g.runner()
		if err != nil {
			return FleetDigestOut{}, err
		}
		d, err := r.Digest(ctx, g.s.conf().roots, in.FleetIn.options(), since)
		if err != nil {
			return FleetDigestOut{}, err
		}
		return FleetDigestOut{Digest: *d}, nil
	})
}
