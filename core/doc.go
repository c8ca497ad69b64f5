// Package core is the root of Sluice's domain packages. It holds no code of
// its own; its test enforces the layering: nothing under core/ may import
// the desktop framework (Wails), the MCP SDK, app/ or sidecar/, so the
// domain stays usable by every front door and testable without them.
package core
