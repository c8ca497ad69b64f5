// Agents' disposable workspaces: their state, lease, and every run with
// its evidence (exit code, duration, parsed test results, whether output
// was cut).
import { useCallback, useEffect, useState } from "react";
import { api, ApiError, onEvents, type GrantRequest, type Workspace } from "./api";
import { Countdown, ErrorBox, Sha, StateBadge, errorMessage } from "./bits";
import { formatRunDuration } from "./format";
import { href } from "./route";

type Load = { kind: "loading" } | { kind: "ready"; list: Workspace[] } | { kind: "unsupported"; message: string } | { kind: "error"; message: string };

export function WorkspacesView() {
  const [load, setLoad] = useState<Load>({ kind: "loading" });
  // What the person's last stop or destroy did (the workspace may be gone).
  const [notice, setNotice] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    try {
      setLoad({ kind: "ready", list: await api.workspaces() });
    } catch (e) {
      if (e instanceof ApiError && e.code === "unsupported") setLoad({ kind: "unsupported", message: e.message });
      else setLoad({ kind: "error", message: errorMessage(e) });
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // Runs happen in agents' sidecars; the app watches the workspace store
  // and says when it changed (SSE in the browser, Wails events in the
  // window), so a run's output arrives as it is written. A stream that
  // reconnects asks for a resync: whatever changed meanwhile is read.
  const watching = load.kind === "ready";
  useEffect(() => {
    if (!watching) return;
    return onEvents(["workspace:changed", "proposals:resync"], () => void refresh());
  }, [watching, refresh]);

  return (
    <section aria-labelledby="workspaces-title">
      <div className="row">
        <h1 id="workspaces-title">Workspaces</h1>
        {load.kind !== "unsupported" && (
          <button type="button" onClick={() => void refresh()}>
            Refresh
          </button>
        )}
      </div>
      <p className="muted">
        Disposable, network-less containers where agents edit and run tests. Their changes come back only as proposals.
      </p>
      {notice && (
        <p className="panel ok workspace-notice" role="status">
          {notice}
        </p>
      )}
      {load.kind === "loading" && <p className="muted">Loading…</p>}
      {load.kind === "unsupported" && (
        <div className="panel workspaces-unavailable" role="status">
          Workspaces are not available: {load.message}
        </div>
      )}
      {load.kind === "error" && <ErrorBox>{load.message}</ErrorBox>}
      {load.kind === "ready" && load.list.length === 0 && (
        <p className="panel muted">No workspaces. An agent creates one with the workspace_create tool.</p>
      )}
      {load.kind === "ready" &&
        load.list.map((w) => (
          <article key={w.id} id={`ws-${w.id}`} className="panel workspace">
            <header className="card-head">
              <h2>
                <code>{w.id}</code>
              </h2>
              <div className="card-badges">
                <StateBadge state={w.state} />
                {w.leaseExpiresAt && <Countdown until={w.leaseExpiresAt} prefix="lease ends in" />}
              </div>
            </header>
            <dl className="facts">
              <dt>Owner</dt>
              <dd className="workspace-owner" title="only this agent can use the workspace">
                {w.owner ? <code>{w.owner}</code> : <span className="muted">unknown (no agent can use it)</span>}
              </dd>
              <dt>Source</dt>
              <dd>{w.source || <span className="muted">empty scaffold</span>}</dd>
              <dt>Base</dt>
              <dd>{w.base ? <Sha value={w.base} what="base commit" /> : <span className="muted">none</span>}</dd>
            </dl>
            {w.state === "sealed" ? (
              <p className="workspace-sealed">
                Sealed: its changes came back as{" "}
                {w.proposalId ? (
                  <a className="workspace-proposal" href={href("proposal", w.proposalId)}>
                    proposal {w.proposalId.slice(0, 8)}
                  </a>
                ) : (
                  <span className="muted">a proposal not yet stored</span>
                )}
                . It takes no more changes, so nothing can be granted to it.
              </p>
            ) : w.state === "ready" ? (
              <GrantForm id={w.id} />
            ) : null}
            {w.state !== "destroying" && (
              <WorkspaceActions
                ws={w}
                onDone={(msg) => {
                  setNotice(msg);
                  void refresh();
                }}
              />
            )}
            {w.runs.length === 0 ? (
              <p className="muted">No runs yet.</p>
            ) : (
              <table className="entries runs">
                <thead>
                  <tr>
                    <th scope="col">command</th>
                    <th scope="col">exit</th>
                    <th scope="col">duration</th>
                    <th scope="col">tests</th>
                    <th scope="col">output</th>
                  </tr>
                </thead>
                <tbody>
                  {w.runs.map((r, i) => (
                    <tr
                      key={r.id ?? i}
                      title={r.verdict}
                      className={r.running ? "run-running" : r.exitCode === 0 && !r.oomKilled && !r.timedOut && !r.interrupted ? "" : "run-failed"}
                    >
                      <td>
                        <code>{r.argv.join(" ")}</code>
                        {r.ociRuntime === "runsc" && (
                          <span className="badge" title="ran under gVisor (runsc)">
                            {" "}
                            gVisor
                          </span>
                        )}
                      </td>
                      <td>
                        {r.running ? (
                          <span className="badge" role="status">running</span>
                        ) : r.interrupted ? (
                          <span className="badge warn">interrupted</span>
                        ) : (
                          r.exitCode
                        )}
                        {r.oomKilled && <span className="badge risk-destructive"> out of memory</span>}
                        {r.timedOut && <span className="badge risk-destructive"> time limit</span>}
                        {r.outputStopped && <span className="badge risk-destructive"> output flood</span>}
                      </td>
                      <td className="nowrap">{formatRunDuration(r.durationMs)}</td>
                      <td>
                        {r.tests ? (
                          <span>
                            {r.tests.passed} passed, {r.tests.failed} failed, {r.tests.skipped} skipped{" "}
                            <span className="muted">({r.tests.format})</span>
                          </span>
                        ) : (
                          <span className="muted">none parsed</span>
                        )}
                      </td>
                      <td>
                        {r.truncated ? (
                          <span className="badge warn">truncated</span>
                        ) : (
                          <span className="muted">{r.running ? "so far" : "complete"}</span>
                        )}
                        {(r.stdout || r.stderr) && (
                          <details className="run-output" open={r.running || undefined}>
                            <summary>output</summary>
                            {r.stdout && <pre aria-label="standard output">{r.stdout}</pre>}
                            {r.stderr && <pre aria-label="standard error">{r.stderr}</pre>}
                          </details>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </article>
        ))}
    </section>
  );
}

// WorkspaceActions stops a workspace's running commands or destroys it,
// each after the person confirms what it will do. The app audits both and
// refuses to destroy a workspace whose changes are still an open card (its
// runs are that card's evidence).
function WorkspaceActions({ ws, onDone }: { ws: Workspace; onDone: (message: string) => void }) {
  const [asking, setAsking] = useState<"stop" | "destroy" | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ask = (what: "stop" | "destroy" | null) => {
    setAsking(what);
    setError(null);
  };
  const running = ws.runs.some((r) => r.running);

  async function confirm() {
    const what = asking;
    if (!what) return;
    setBusy(true);
    setError(null);
    try {
      const res = what === "stop" ? await api.stopWorkspace(ws.id) : await api.destroyWorkspace(ws.id);
      setAsking(null);
      onDone(
        what === "stop"
          ? `Workspace ${ws.id}: stopped ${res.runsStopped} running command${res.runsStopped === 1 ? "" : "s"}.`
          : `Workspace ${ws.id} destroyed.`,
      );
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="workspace-actions">
      {asking === null ? (
        <div className="actions">
          {running && (
            <button type="button" className="stop-workspace" onClick={() => ask("stop")}>
              Stop…
            </button>
          )}
          <button type="button" className="destroy-workspace" onClick={() => ask("destroy")}>
            Destroy…
          </button>
        </div>
      ) : (
        <div className="panel warn confirm" role="alertdialog" aria-labelledby={`ws-confirm-${ws.id}`}>
          <p id={`ws-confirm-${ws.id}`}>
            {asking === "stop" ? (
              <>
                Stop the command running in workspace <code>{ws.id}</code>? The agent&apos;s run ends as interrupted; the
                workspace, its files and its runs so far stay.
              </>
            ) : (
              <>
                Destroy workspace <code>{ws.id}</code>? Its files, commits and run records are deleted, any running
                command is stopped, and {ws.owner ? <code>{ws.owner}</code> : "its agent"} can no longer use it. This
                cannot be undone.
                {ws.proposalId && (
                  <>
                    {" "}
                    Its changes came back as proposal {ws.proposalId.slice(0, 8)}: while that card is open, Sluice keeps
                    the workspace (its runs are the card&apos;s evidence), so decide the card first.
                  </>
                )}
              </>
            )}
          </p>
          <div className="actions">
            <button
              type="button"
              className={asking === "destroy" ? "primary danger" : "primary"}
              disabled={busy}
              onClick={() => void confirm()}
            >
              {busy ? "Working…" : asking === "stop" ? "Stop the command" : "Destroy workspace"}
            </button>
            <button type="button" disabled={busy} onClick={() => ask(null)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
    </div>
  );
}

// GrantForm is the person's side of what agents cannot ask for: a secret
// for this workspace's runs (sent once, never shown again) and the hosts
// its runs may reach through Sluice's proxy.
function GrantForm({ id }: { id: string }) {
  const [name, setName] = useState("");
  const [value, setValue] = useState("");
  const [hosts, setHosts] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function send(g: GrantRequest, done: string) {
    setError(null);
    setMessage(null);
    try {
      await api.grantWorkspace(g);
      setMessage(done);
      setValue("");
    } catch (e) {
      setError(errorMessage(e));
    }
  }

  return (
    <details className="grants">
      <summary>Grant access…</summary>
      <form
        className="grant-secret"
        onSubmit={(e) => {
          e.preventDefault();
          void send({ id, secretName: name.trim(), secretValue: value }, `Secret ${name.trim()} granted.`);
        }}
      >
        <label className="field">
          Secret name
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="DEPLOY_TOKEN" autoComplete="off" />
        </label>
        <label className="field">
          Value
          <input type="password" value={value} onChange={(e) => setValue(e.target.value)} autoComplete="off" />
        </label>
        <button type="submit" disabled={!name.trim() || !value}>
          Grant secret
        </button>
      </form>
      <form
        className="grant-egress"
        onSubmit={(e) => {
          e.preventDefault();
          const list = hosts.split(",").map((h) => h.trim()).filter(Boolean);
          void send({ id, egress: list }, list.length ? `Network access to ${list.join(", ")}.` : "Network access removed.");
        }}
      >
        <label className="field">
          Hosts its runs may reach (comma-separated; empty for none)
          <input value={hosts} onChange={(e) => setHosts(e.target.value)} placeholder="proxy.golang.org, registry.npmjs.org" />
        </label>
        <button type="submit">Save network access</button>
      </form>
      {message && <p role="status">{message}</p>}
      {error && <ErrorBox>{error}</ErrorBox>}
    </details>
  );
}
