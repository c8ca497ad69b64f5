import { Fragment, useEffect, useState } from "react";
import { api, ApiError, detectDesktop, onConnection, onEvents, type Status } from "./api";
import { AuditView } from "./AuditView";
import { ConnectView } from "./ConnectView";
import { ConsentView } from "./ConsentView";
import { HistoryView } from "./HistoryView";
import { usePendingCount } from "./pendingCount";
import { PendingView } from "./PendingView";
import { ProposalPage } from "./ProposalPage";
import { href, navigate, useRoute, type Route, type Screen } from "./route";
import { RulesView } from "./RulesView";
import { SessionsView } from "./SessionsView";
import { SettingsView } from "./SettingsView";
import { TimelineView } from "./TimelineView";
import { WorkspacesView } from "./WorkspacesView";

type Load =
  | { kind: "loading" }
  | { kind: "ready"; status: Status }
  | { kind: "login" }
  | { kind: "error"; message: string; code?: string };

// The tabs, in the order a person needs them. The visible text is what
// end-to-end tests click.
const tabs: { screen: Screen; label: string }[] = [
  { screen: "pending", label: "Pending" },
  { screen: "history", label: "History" },
  { screen: "rules", label: "Rules" },
  { screen: "timeline", label: "Timeline" },
  { screen: "workspaces", label: "Workspaces" },
  { screen: "sessions", label: "Sessions" },
  { screen: "audit", label: "Audit" },
  { screen: "settings", label: "Settings" },
  { screen: "connect", label: "Connect" },
];

export function App() {
  const [load, setLoad] = useState<Load>({ kind: "loading" });
  const route = useRoute();
  // down: the app stopped answering (browser only). generation remounts
  // the screen when it answers again, so that everything is read afresh.
  const [down, setDown] = useState(false);
  const [generation, setGeneration] = useState(0);
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
        else if (e instanceof ApiError && e.code === "not_running") setDown(true);
        else
          setLoad({
            kind: "error",
            message: e instanceof Error ? e.message : String(e),
            code: e instanceof ApiError ? e.code : undefined,
          });
      }
    })();
    return () => {
      cancelled = true;
    };
  }, []);

  useEffect(
    () =>
      onConnection((d) => {
        setDown(d);
        if (!d) setGeneration((g) => g + 1);
      }),
    [],
  );

  // While the app is down, ask until it answers again: a restarted
  // `sluice serve` on the same port takes the open tab back.
  useEffect(() => {
    if (!down) return;
    // An answer (any answer) flips `down` back through onConnection,
    // which ends this effect; what the answer was decides the screen.
    const probe = async () => {
      try {
        const status = await api.status();
        setLoad({ kind: "ready", status });
        await api.ready();
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) setLoad({ kind: "login" });
      }
    };
    const timer = window.setInterval(probe, 1500);
    return () => window.clearInterval(timer);
  }, [down]);

  // A click on a desktop notification opens that proposal's card.
  useEffect(() => {
    if (load.kind !== "ready") return;
    return onEvents(["ui:focus"], (_name, data) => {
      const id = data?.id;
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
        {down && (
          <section className="panel error" role="alert" id="app-down" aria-labelledby="app-down-title">
            <h1 id="app-down-title">Sluice isn't running</h1>
            <p>
              Start it again with <code>sluice serve</code> in a terminal (or open the Sluice app); this page reconnects
              by itself.
            </p>
          </section>
        )}
        {load.kind === "loading" && !down && (
          <p className="muted" role="status">
            Loading…
          </p>
        )}
        {load.kind === "login" && (
          <section className="panel" aria-labelledby="login-title">
            <h1 id="login-title">Sign in</h1>
            <p>
              Run <code>sluice login</code> in a terminal on this machine and open the link it prints. Each link works
              once, within 15 minutes; <code>sluice serve</code> prints one when it starts.
              {route.screen === "consent" && " Then open this page again to answer the connector."}
            </p>
          </section>
        )}
        {load.kind === "error" && (load.code === "already_running" || load.code === "already_serving") && (
          <AlreadyRunning message={load.message} serving={load.code === "already_serving"} />
        )}
        {load.kind === "error" && load.code !== "already_running" && load.code !== "already_serving" && (
          <section className="panel error" role="alert">
            <h1>Sluice could not load</h1>
            <p>{load.message}</p>
          </section>
        )}
        {load.kind === "ready" && <Fragment key={generation}>{screenFor(route, load.status, pendingCount)}</Fragment>}
      </main>
    </div>
  );
}

// A window opened while another Sluice holds the journal: it says which,
// and opens a running web UI in the browser.
function AlreadyRunning({ message, serving }: { message: string; serving: boolean }) {
  const [note, setNote] = useState("");
  return (
    <section className="panel" role="alert" aria-labelledby="already-title">
      <h1 id="already-title">Sluice is already running</h1>
      <p>{message}</p>
      {serving && (
        <p>
          <button
            type="button"
            className="primary"
            onClick={() =>
              api.openRunning().then(
                () => setNote("Opened in your browser."),
                (e) => setNote(e instanceof Error ? e.message : String(e)),
              )
            }
          >
            Open it in the browser
          </button>{" "}
          <span role="status">{note}</span>
        </p>
      )}
    </section>
  );
}

function screenFor(route: Route, status: Status, pendingCount: number | null) {
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
    case "sessions":
      return <SessionsView />;
    case "audit":
      return <AuditView />;
    case "rules":
      return <RulesView />;
    case "settings":
      return <SettingsView />;
    case "connect":
      return <ConnectView />;
    case "consent":
      return <ConsentView id={route.id ?? ""} />;
    default:
      return <PendingView status={status} total={pendingCount} />;
  }
}
