import type { Status } from "./api";

// The first thing a person sees: what Sluice is, and how to connect an
// agent, with the sidecar path this app was built with.
export function EmptyState({ status }: { status: Status }) {
  const sidecar = status.sidecarPath;
  const json = JSON.stringify({ mcpServers: { sluice: { command: sidecar, args: [] } } }, null, 2);
  return (
    <section className="empty" aria-labelledby="empty-title">
      <h1 id="empty-title">No proposals waiting</h1>
      <p className="lede">
        Sluice lets coding agents read your git repositories freely and change them only with your approval. When an
        agent proposes a change, it appears here as a card for you to approve or reject.
      </p>
      <div className="panel">
        <h2>Connect an agent</h2>
        <p>Add Sluice as an MCP server in your agent. For Claude Code:</p>
        <pre>
          <code>claude mcp add sluice -- {sidecar}</code>
        </pre>
        <p>For clients configured with JSON (Claude Desktop, Cursor, Windsurf):</p>
        <pre>
          <code>{json}</code>
        </pre>
        <p>
          Other clients (Codex, VS Code, Gemini CLI, ChatGPT…) and a button that writes the configuration for you are on
          the <a href="#/connect">Connect</a> screen.
        </p>
        {status.allowedRoots.length === 0 ? (
          <p className="note">
            No repository roots are allowed yet. Set <code>SLUICE_ALLOWED_ROOTS</code> (or{" "}
            <code>allowedRoots</code> in <code>config.json</code>) to the folders that hold your repositories.
          </p>
        ) : (
          <p className="note">
            Agents may work in: <code>{status.allowedRoots.join(", ")}</code>
          </p>
        )}
      </div>
    </section>
  );
}
