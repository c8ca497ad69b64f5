package sidecar

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/session/podlink"
)

// The pod link's gate checks every line the session sidecar would take
// whole: its bound is the sidecar's (go-sdk's) and the line's end. core
// links no MCP SDK, so the two are kept equal here.
func TestPodLink_MaxLineIsTheSidecars(t *testing.T) {
	if podlink.MaxLine != mcp.DefaultMaxLineLength+2 || MaxStdioLine != mcp.DefaultMaxLineLength {
		t.Fatalf("podlink.MaxLine %d, the sidecar's line bound %d: the gate must take every line the sidecar takes", podlink.MaxLine, MaxStdioLine)
	}
}
