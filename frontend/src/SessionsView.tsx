// The agents Sluice started itself (`sluice run`), each confined in a
// private copy of its repository: what runs, where, since when, what it
// may reach, what it proposed, and what it left and never proposed. A
// running session can be stopped here; an ended one's kept changes can be
// offered again as a new card.
import { useCallback, useEffect, useRef, useState } from "react";
import { api, onEvents, type AgentSession, type EventName, type SessionOffer } from "./api";
import { ErrorBox, StateBadge, Time, errorMessage, useNow } from "./bits";
import { formatDuration, toDate } from "./format";
import { href } from "./route";

// A session's proposals and its leftover card change with the proposals'
// events; the list itself with session:changed.
const liveEvents: EventName[] = ["session:changed", "proposal:created", "proposal:updated", "proposals:resync"];

type Load = { kind: "loading" } | { kind: "ready"; list: AgentSession[] } | { kind: "error"; message: string };

export function SessionsView() {
  const [load, setLoad] = useState<Load>({ kind: "loading" });
  const seq = useRef(0);

  const refresh = useCallback(async () => {
    // Only the latest of overlapping reads may update the screen.
    const n = ++seq.current;
    try {
      const list = await api.sessions();
      if (n === seq.current) setLoad({ kind: "ready", list });
    } catch (e) {
      if (n === seq.current) setLoad({ kind: "error", message: errorMessage(e) });
    }
  }, []);

  useEffect(() => {
    void refresh();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Events come in bursts (a session ends, its leftover card arrives);
    // one read covers a burst.
    const off = onEvents(liveEvents, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void refresh(), 120);
    });
    return () => {
      clearTimeout(timer);
      off();
    };
  }, [refresh]);

  return (
    <section aria-labelledby="sessions-title">
      <div className="row">
        <h1 id="sessions-title">Sessions</h1>
        <button type="button" onClick={() => void refresh()}>
          Refresh
        </button>
      </div>
      <p className="muted">
        Agents Sluice started with <code>sluice run</code>, each in a private copy of its repository. Their changes come
        back only as proposals.
      </p>
      {load.kind === "loading" && (
        <p className="muted" role="status">
          Loading…
        </p>
      )}
      {load.kind === "error" && <ErrorBox>{load.message}</ErrorBox>}
      {load.kind === "ready" && load.list.length === 0 && (
        <div className="panel sessions-empty">
          <p>
            Run <code>sluice run claude</code> in a repository folder to start an agent confined, in a private copy of
            that repository with none of your credentials. Every session started that way appears here, with what it
            proposed and what it left.
          </p>
        </div>
      )}
      {load.kind === "ready" && load.list.map((s) => <SessionItem key={s.id} session={s} onChanged={() => void refresh()} />)}
    </section>
  );
}

function SessionItem({ session: s, onChanged }: { session: AgentSession; onChanged: () => void }) {
  const [busy, setBusy] = useState<"" | "stop" | "offer">("");
  const [error, setError] = useState<string | null>(null);
  const [offer, setOffer] = useState<SessionOffer | null>(null);
  const [stopped, setStopped] = useState(false);
  const running = s.state === "running";
  const titleId = `session-${s.id}-title`;
  const stopWhyId = `session-${s.id}-stop-why`;

  async function stop() {
    setBusy("stop");
    setError(null);
    try {
      await api.stopSession(s.id);
      setStopped(true);
      onChanged();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy("");
    }
  }

  async function offerAgain() {
    setBusy("offer");
    setError(null);
    setOffer(null);
    try {
      setOffer(await api.offerSessionChanges(s.id));
      onChanged();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy("");
    }
  }

  return (
    <article id={`session-${s.id}`} className="panel session" data-state={s.state} aria-labelledby={titleId}>
      <header className="card-head">
        <h2 id={titleId}>
          <span className="session-program">{s.agent}</span>{" "}
          <span className="muted">in</span>{" "}
          <span className="repo" title={s.repo}>
            {s.repoName}
          </span>
        </h2>
        <div className="card-badges">
          <StateBadge state={s.state} />
        </div>
      </header>
      <dl className="facts">
        <dt>Started</dt>
        <dd>
          <Time at={s.startedAt} />
          {s.endedAt && (
            <>
              {" "}
              · ended <Time at={s.endedAt} />
            </>
          )}{" "}
          <Ran start={s.startedAt} end={s.endedAt} running={running} />
        </dd>
        <dt>Proposals</dt>
        <dd className="session-proposals">{s.proposals === 0 ? "none yet" : s.proposals}</dd>
        <dt>Network</dt>
        <dd>
          <Hosts network={s.network} granted={s.granted} />
        </dd>
        <dt>Runtime</dt>
        <dd>
          <code>{s.runtime}</code>
        </dd>
        <dt>Session</dt>
        <dd>
          <code className="session-id" title={s.id}>
            {s.id.slice(0, 8)}
          </code>
        </dd>
        {s.leftover && (
          <>
            <dt>Left unproposed</dt>
            <dd className="session-leftover">
              {s.leftoverFiles ? `${s.leftoverFiles} file(s), offered as ` : "offered as "}
              <a href={href("proposal", s.leftover)}>proposal {s.leftover.slice(0, 8)}</a>
              {s.leftoverState && (
                <>
                  {" "}
                  <StateBadge state={s.leftoverState} />
                </>
              )}
            </dd>
          </>
        )}
        {s.note && (
          <>
            <dt>Note</dt>
            <dd>{s.note}</dd>
          </>
        )}
      </dl>
      {running && (
        <div className="actions">
          <button
            type="button"
            id={`stop-session-${s.id}`}
            className="stop-session"
            disabled={!!busy || stopped}
            aria-describedby={stopWhyId}
            onClick={() => void stop()}
          >
            {busy === "stop" ? "Stopping…" : "Stop"}
          </button>
          <span id={stopWhyId} className="muted">
            Stops the agent now. What it left and never proposed comes to you as a card.
          </span>
        </div>
      )}
      {s.canOffer && (
        <div className="actions">
          <button type="button" className="offer-session" disabled={!!busy} onClick={() => void offerAgain()}>
            {busy === "offer" ? "Offering…" : "Offer the changes again"}
          </button>
          <span className="muted">Its changes are kept; they come to you as a new card.</span>
        </div>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
      <div role="status" className="session-status">
        {stopped && running && <p>Stopping: the session ends when its agent has exited.</p>}
        {offer && (
          <p className="offer-message">
            {offer.message}
            {offer.proposal && (
              <>
                {" "}
                <a href={href("proposal", offer.proposal)}>Open the card</a>
              </>
            )}
          </p>
        )}
      </div>
    </article>
  );
}

/** How long a session ran, or has been running. */
function Ran({ start, end, running }: { start: string; end?: string; running: boolean }) {
  const now = useNow(running ? 1000 : 60_000);
  const from = toDate(start)?.getTime();
  const to = end ? toDate(end)?.getTime() : running ? now : undefined;
  if (from === undefined || to === undefined) return null;
  const d = formatDuration(Math.max(0, to - from));
  return <span className="muted">({running ? `running for ${d}` : `ran ${d}`})</span>;
}

/** The hosts a session may reach, the ones the person allowed marked. */
function Hosts({ network, granted }: { network: string[]; granted: string[] }) {
  if (network.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="plain hosts">
      {network.map((h) => (
        <li key={h}>
          <code>{h}</code>
          {granted.includes(h) && (
            <>
              {" "}
              <span className="badge granted" title="You allowed this host for this session (--allow-host)">
                you allowed
              </span>
            </>
          )}
        </li>
      ))}
    </ul>
  );
}
