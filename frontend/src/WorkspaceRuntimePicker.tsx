// The settings screen's choice of the OCI runtime workspace runs use: runc
// (the Engine's usual default) or runsc (gVisor, a kernel of its own
// between the agent's commands and the machine's). Saved in config.json;
// the app and the agents' MCP servers read it when they start.
import { useEffect, useState } from "react";
import { api, type WorkspaceRuntime } from "./api";
import { ErrorBox, errorMessage } from "./bits";

function describe(name: string, isDefault: boolean, noNetwork: boolean): string {
  const what = name === "runsc" ? "runsc (gVisor)" : name;
  const notes = [isDefault ? "the Engine's default" : "", noNetwork ? "no network: egress grants cannot work" : ""].filter(Boolean);
  return notes.length ? `${what} · ${notes.join(" · ")}` : what;
}

export function WorkspaceRuntimePicker() {
  const [view, setView] = useState<WorkspaceRuntime | null>(null);
  const [choice, setChoice] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [unavailable, setUnavailable] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.workspaceRuntime().then(
      (v) => {
        setView(v);
        setChoice(v.saved);
      },
      // Like the image list: a fact about this machine, not a failure
      // of the form.
      (e) => setUnavailable(errorMessage(e)),
    );
  }, []);

  async function save() {
    setBusy(true);
    setError(null);
    try {
      const v = await api.useWorkspaceRuntime(choice);
      setView(v);
      setChoice(v.saved);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  const known = view ? view.runtimes.some((r) => r.name === view.saved) : false;
  return (
    <section className="panel workspace-runtime" aria-labelledby="workspace-runtime-title">
      <h2 id="workspace-runtime-title">Workspace runtime</h2>
      <p className="muted">
        What runs the agents' commands in a workspace: <code>runc</code>, the Engine's usual runtime, or{" "}
        <code>runsc</code> (gVisor), which puts a kernel of its own between the commands and this machine. Sluice never
        falls back to another runtime.
      </p>
      {unavailable && <p role="status">The runtime cannot be read: {unavailable}</p>}
      {view?.engineError && <p role="status">The Engine's runtimes cannot be listed: {view.engineError}</p>}
      {view && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <label className="field">
            <span>Runtime</span>
            <select name="workspaceRuntime" value={choice} onChange={(e) => setChoice(e.target.value)}>
              <option value="">the Engine's default</option>
              {view.runtimes.map((r) => (
                <option key={r.name} value={r.name}>
                  {describe(r.name, r.default, r.noNetwork)}
                </option>
              ))}
              {view.saved && !known && <option value={view.saved}>{view.saved} (not a runtime of the Engine)</option>}
            </select>
          </label>
          <div className="actions">
            <button type="submit" className="use-runtime" disabled={busy || choice === view.saved}>
              {busy ? "Saving…" : "Use this runtime"}
            </button>
          </div>
          <p className="muted saved-runtime">
            Saved: <code>{view.saved || "the Engine's default"}</code> · this app runs with{" "}
            <code>{view.running || "the Engine's default"}</code>
          </p>
          {view.restartRequired && (
            <p className="note runtime-restart" role="status">
              Saved in config.json. Restart Sluice and your agents' MCP servers for workspace runs to use it: each reads
              the runtime when it starts.
            </p>
          )}
          {view.overriddenByEnv && (
            <p className="note">SLUICE_WORKSPACE_RUNTIME is set for this app and overrides the saved runtime.</p>
          )}
        </form>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
    </section>
  );
}
