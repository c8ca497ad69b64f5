// Package connect writes an MCP client's configuration so that it runs the
// Sluice sidecar: `sluice-sidecar config` and the app's "Connect an agent"
// screen both call it.
//
// For each supported client it knows the client's real configuration file
// at the client's real path (documented per client in clients.go, with the
// client's documentation as source), in the format the client reads: JSON,
// JSONC or TOML. It merges Sluice's entry into that file textually, so that
// every other byte stays as it was; it refuses a file it cannot parse,
// rather than risk it; it writes a backup before it changes anything, writes
// atomically, and a second run with the same options changes nothing.
//
// Where a client supports it, Sluice's read tools and propose tools are
// pre-allowed, because the person approves every change in Sluice itself and
// should not have to approve every read a second time in the client. Nothing
// else is ever pre-allowed: workspace tools and other servers' tools keep the
// client's own prompts. Plan says, per client, exactly what was pre-allowed
// and how, or why nothing could be.
package connect
