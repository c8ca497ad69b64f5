import { useEffect, useState } from "react";
import { api, ApiError, detectDesktop, type Status } from "./api";
import { AuditView } from "./AuditView";
import { EmptyState } from "./EmptyState";

type Load =
  | { kind: "loading" }
  | { kind: "ready"; status: Status }
  | { kind: "login" }
  | { kind: "error"; message: string };

type Screen = "pending" | "audit";

export function App() {
  const [load, setLoad] = useState<Load>({ kind: "loading" });
  const [screen, setScreen] = useState<Screen>("pending");

  useEffect(() => {
    let cancelled = false;
    (async () => {
      await detectDesktop();
      try {
        const status = await api.status();
        if (cancelled) return;
        setLoad({ kind: "ready", status });
        // Tell the app the UI is alive (the tray and tests wait for it).
        await api.ready();
      } catch (e) {
        if (cancelled) return;
        if (e instanceof ApiError && e.status === 401) setLoad({ kind: "login" });
        else setLoad({ kind: "error", message: e instanceof Error ? e.message : String(e) });
      }
    })();
    return () => {
      cancelled = true;
    };
  }, []);

  return (
    <div className="shell">
      <header className="topbar">
        <span className="brand" aria-label="Sluice">
          <span className="brand-mark" aria-hidden="true">≋</span> Sluice
        </span>
        {load.kind === "ready" && (
          <nav className="tabs" aria-label="Screens">
            {(["pending", "audit"] as Screen[]).map((s) => (
              <button
                key={s}
                type="button"
                className={screen === s ? "tab active" : "tab"}
                aria-current={screen === s ? "page" : undefined}
                onClick={() => setScreen(s)}
              >
                {s === "pending" ? "Pending" : "Audit"}
              </button>
            ))}
          </nav>
        )}
        {load.kind === "ready" && (
          <span className="meta" title={`Gateway ${load.status.gatewayAddr}`}>
            v{load.status.version} · {load.status.ui}
          </span>
        )}
      </header>
      <main className="content">
        {load.kind === "loading" && <p className="muted" role="status">Loading…</p>}
        {load.kind === "login" && (
          <section className="panel" aria-labelledby="login-title">
            <h1 id="login-title">Sign in</h1>
            <p>
              Open the one-time login link that <code>sluice serve</code> printed in its terminal. Each link works
              once; restart <code>sluice serve</code> for a new one.
            </p>
          </section>
        )}
        {load.kind === "error" && (
          <section className="panel error" role="alert">
            <h1>Sluice could not load</h1>
            <p>{load.message}</p>
          </section>
        )}
        {load.kind === "ready" && screen === "pending" && load.status.pending === 0 && (
          <EmptyState status={load.status} />
        )}
        {load.kind === "ready" && screen === "audit" && <AuditView />}
      </main>
    </div>
  );
}
