// Package sidecar is Sluice's MCP server: one process per agent session,
// speaking MCP over stdio (or streamable HTTP), running read-only git tools
// itself and forwarding proposals to the app through the loopback gateway.
// It never writes to a repository.
//
// Tools are grouped by family, one file each (tools_repo.go,
// tools_propose.go, tools_workspace.go, …), with their In/Out types beside
// the handler. Every Out type embeds ErrorField so that a failure the model
// can act on is a tool result with isError and a structured
// {"error": {"code", "message", "data"}}; protocol faults stay JSON-RPC
// errors.
package sidecar
