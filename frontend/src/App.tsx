import { useEffect, useState } from "react";
import { api, ApiError, detectDesktop, onEvents, type Status } from "./api";
import { AuditView } from "./AuditView";
import { ConnectView } from "./ConnectView";
import { HistoryView } from "./HistoryView";
import { usePendingCount } from "./pendingCount";
import { PendingView } from "./PendingView";
import { ProposalPage } from "./ProposalPage";
import { href, navigate, useRoute, type Route, type Screen } from "./route";
import { RulesView } from "./RulesView";
import { SettingsView } from "./SettingsView";
import { TimelineView } from "./TimelineView";
import { WorkspacesView } from "./WorkspacesView";

type Load =
  | { kind: "loading" }
  | { kind: "ready"; status: Status }
  | { kind: "login" }
  | { kind: "error"; message: string };

// The tabs, in the order a person needs them. The visible text is what
// end-to-end tests click.
const tabs: { screen: Screen; label: string }[] = [
  { screen: "pending", label: "Pending" },
  { screen: "history", label: "History" },
  { screen: "rules", label: "Rules" },
  { screen: "timeline", label: "Timeline" },
  { screen: "workspaces", label: "Workspaces" },
  { screen: "audit", label: "Audit" },
  { screen: "settings", label: "Settings" },
  { screen: "connect", label: "Connect" },
];

export function App() {
  const [load, setLoad] = useState<Load>({ kind: "loading" });
  const route = useRoute();
  const pendingCount = usePendingCount(load.kind === "ready" ? load.status.pending : null);

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

  // A click on a desktop notification opens that proposal's card.
  useEffect(() => {
    if (load.kind !== "ready") return;
    return onEvents(["ui:focus"], (_name, data) => {
      const id = (data as { id?: string } | undefined)?.id;
      if (id) navigate("proposal", id);
    });
  }, [load.kind]);

  // The proposal page belongs to History.
  const active: Screen = route.screen === "proposal" ? "history" : route.screen;

  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand" aria-label="Sluice">
          <span className="brand-mark" aria-hidden="true">
            ≋
          </span>{" "}
          Sluice
        </span>
        {load.kind === "ready" && (
          <nav className="tabs" aria-label="Screens">
            {tabs.map((t) => (
              <button
                key={t.screen}
                type="button"
                className={active === t.screen ? "tab active" : "tab"}
                aria-current={active === t.screen ? "page" : undefined}
                aria-label={t.screen === "pending" && pendingCount ? `${t.label} ${pendingCount} waiting` : undefined}
                onClick={() => {
                  window.location.hash = href(t.screen);
                }}
              >
                {t.label}
                {t.screen === "pending" && !!pendingCount && (
                  <>
                    {" "}
                    <span className="tab-count">{pendingCount}</span>
                  </>
                )}
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
      <main className={`content screen-${route.screen}`} id="main" tabIndex={-1}>
        {load.kind === "loading" && (
          <p className="muted" role="status">
            Loading…
          </p>
        )}
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
        {load.kind === "ready" && screenFor(route, load.status)}
      </main>
    </div>
  );
}

function screenFor(route: Route, status: Status) {
  switch (route.screen) {
    case "history":
      return <HistoryView />;
    case "proposal":
      return <ProposalPage id={route.id!} />;
    case "timeline":
      return (
        <TimelineView status={status} repo={route.params.get("repo") ?? ""} highlight={route.params.get("rp") ?? undefined} />
      );
    case "workspaces":
      return <WorkspacesView />;
    case "audit":
      return <AuditView />;
    case "rules":
      return <RulesView />;
    case "settings":
      return <SettingsView />;
    case "connect":
      return <ConnectView />;
    default:
      return <PendingView status={status} />;
  }
}
