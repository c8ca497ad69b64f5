// Agents' disposable workspaces: their state, lease, and every run with
// its evidence (exit code, duration, parsed test results, whether output
// was cut).
import { useCallback, useEffect, useState } from "react";
import { api, ApiError, type Workspace } from "./api";
import { Countdown, ErrorBox, Sha, StateBadge, errorMessage } from "./bits";
import { formatRunDuration } from "./format";

type Load = { kind: "loading" } | { kind: "ready"; list: Workspace[] } | { kind: "unsupported"; message: string } | { kind: "error"; message: string };

export function WorkspacesView() {
  const [load, setLoad] = useState<Load>({ kind: "loading" });

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
              <dt>Source</dt>
              <dd>{w.source || <span className="muted">empty scaffold</span>}</dd>
              <dt>Base</dt>
              <dd>{w.base ? <Sha value={w.base} what="base commit" /> : <span className="muted">none</span>}</dd>
            </dl>
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
                    <tr key={i} className={r.exitCode === 0 && !r.oomKilled ? "" : "run-failed"}>
                      <td>
                        <code>{r.argv.join(" ")}</code>
                      </td>
                      <td>
                        {r.exitCode}
                        {r.oomKilled && <span className="badge risk-destructive"> out of memory</span>}
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
                      <td>{r.truncated ? <span className="badge warn">truncated</span> : <span className="muted">complete</span>}</td>
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
