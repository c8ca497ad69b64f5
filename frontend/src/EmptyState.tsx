import { useState, type FormEvent } from "react";
import { api, type Status } from "./api";
import { errorMessage } from "./bits";
import { ConfinedStart } from "./ConfinedStart";

// The first thing a person sees: what Sluice is, where agents may work (and
// a question when nowhere is allowed yet), how to start an agent confined,
// and how to connect one started by hand with the one command that writes
// its configuration.
export function EmptyState({ status }: { status: Status }) {
  const sidecar = status.sidecarPath;
  return (
    <section className="empty" aria-labelledby="empty-title">
      <h1 id="empty-title">No proposals waiting</h1>
      <p className="lede">
        Sluice lets coding agents read your git repositories freely and change them only with your approval. When an
        agent proposes a change, it appears here as a card for you to approve or reject.
      </p>
      {status.allowedRoots.length === 0 ? (
        <RootQuestion />
      ) : (
        <p className="note">
          Agents may work in: <code>{status.allowedRoots.join(", ")}</code>
        </p>
      )}
      <section className="panel confined-start" aria-labelledby="confined-title">
        <ConfinedStart headingId="confined-title" />
      </section>
      <div className="panel">
        <h2>Connect an agent</h2>
        <p>
          One command writes your agent&apos;s configuration (Claude Code, Codex, Gemini CLI, Copilot CLI, opencode, Qwen
          Code, Cursor, VS Code, Windsurf, Claude Desktop); without <code>--write</code> it only shows what it would
          change:
        </p>
        <pre>
          <code>{sidecar} config --client claude-code --write</code>
        </pre>
        <p>
          The <a href="#/connect">Connect</a> screen does the same with a button, for every client.
        </p>
      </div>
    </section>
  );
}

// RootQuestion asks for the folder that holds the person's repositories and
// saves it in config.json, where every sidecar reads it.
function RootQuestion() {
  const [dir, setDir] = useState("");
  const [saved, setSaved] = useState<string[] | null>(null);
  const [envOverride, setEnvOverride] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await api.addRoot(dir.trim());
      setSaved(s.allowedRoots);
      setEnvOverride((s.overriddenByEnv ?? []).includes("allowedRoots"));
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  }

  if (saved) {
    return (
      <div className="panel" role="status">
        <h2>Agents may work in</h2>
        <p>
          <code>{saved.join(", ")}</code>
        </p>
        <p className="note">
          Saved in <code>config.json</code>. Sluice and your agents use it from their next call: nothing needs a
          restart.
        </p>
        {envOverride && (
          <p className="note">
            This Sluice was started with <code>SLUICE_ALLOWED_ROOTS</code> set, which overrides the file for it until
            the variable is unset.
          </p>
        )}
      </div>
    );
  }
  return (
    <form className="panel" onSubmit={submit} aria-labelledby="roots-title">
      <h2 id="roots-title">Where are your repositories?</h2>
      <p>
        No repository roots are allowed yet, so agents can name no repository. Choose the folder that holds them;
        agents can never name a path outside it.
      </p>
      <label>
        Folder that holds your repositories
        <input value={dir} onChange={(e) => setDir(e.target.value)} placeholder="/home/you/src" spellCheck={false} />
      </label>
      <button type="submit" disabled={busy || dir.trim() === ""}>
        Allow agents here
      </button>
      {error && <p className="error">{error}</p>}
      <p className="note">
        The same from a terminal: <code>sluice roots add DIR</code>. Starting Sluice with{" "}
        <code>SLUICE_ALLOWED_ROOTS</code> saves those roots too.
      </p>
    </form>
  );
}
