// The home screen: the queue of proposals waiting for a decision, oldest
// first, kept live by the app's events. Each waiting proposal is one
// compact row (agent, operation, repository, risk, age, stale and
// collision marks); one row at a time is open as its full card. A card
// decided here leaves the queue with a notice that follows it to its end
// (approved → executing → completed or failed); a card that left without
// a decision here (expired, cancelled, decided elsewhere) stays in the
// queue saying so until dismissed.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { api, ApiError, onEvents, type Card, type Status } from "./api";
import { AutoApprovedNotices } from "./AutoApprovals";
import { ErrorBox, RiskBadge, StateBadge, errorMessage, useNow } from "./bits";
import { EmptyState } from "./EmptyState";
import { formatDuration, opLabel, stateLabel, toDate } from "./format";
import { ProposalCard, type CardActions } from "./ProposalCard";
import { href } from "./route";

const liveEvents = ["proposal:created", "proposal:updated", "proposals:resync"];
const terminal = ["completed", "failed", "rejected", "cancelled", "expired"];

/** How long a reject made with the `r` key can be undone before it is sent. */
export const defaultRejectUndoMs = 6000;

/**
 * The undo window for `r`. It can be set in localStorage under
 * "sluice.rejectUndoMs" (the end-to-end tests make it long, so that
 * nothing they check depends on how fast the machine is).
 */
function rejectUndoMs(): number {
  try {
    const v = Number(localStorage.getItem("sluice.rejectUndoMs"));
    if (Number.isFinite(v) && v > 0) return v;
  } catch {
    // storage can be unavailable; the default is fine
  }
  return defaultRejectUndoMs;
}

function byCreated(a: Card, b: Card) {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0;
}

function isTyping(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || typeof el.closest !== "function") return false;
  return !!el.closest("input, textarea, select, [contenteditable=''], [contenteditable='true'], [role='dialog']");
}

/** A reject made with `r`, held back while it can still be undone. */
interface HeldReject {
  card: Card;
  note: string;
  /** Sends it when the window passes. */
  timer: ReturnType<typeof setTimeout>;
}

export function PendingView({ status }: { status: Status }) {
  const [pending, setPending] = useState<Card[] | null>(null);
  // Cards no longer pending that the screen still shows: decided here
  // (as notices) or gone from the queue without a decision here (as rows).
  const [kept, setKept] = useState<Record<string, Card>>({});
  const [here, setHere] = useState<Record<string, true>>({});
  const [held, setHeld] = useState<HeldReject | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [stale, setStale] = useState<Record<string, boolean>>({});
  const [error, setError] = useState<string | null>(null);
  const [noticeError, setNoticeError] = useState<string | null>(null);
  const actions = useRef(new Map<string, CardActions>());
  // What the screen shows, for the refresh that runs outside React state.
  const shown = useRef<{ pending: Card[]; kept: Record<string, Card> }>({ pending: [], kept: {} });
  const heldNow = useRef<HeldReject | null>(null);
  const wantFocus = useRef(false);
  const refreshSeq = useRef(0);

  const refresh = useCallback(async () => {
    // Only the latest of overlapping refreshes may update the screen.
    const n = ++refreshSeq.current;
    try {
      const prev = shown.current;
      // A decided proposal never returns to pending: a list read before
      // the decision landed must not bring its buttons back.
      const list = (await api.pending()).filter((c) => (shown.current.kept[c.id]?.state ?? "pending") === "pending");
      const ids = new Set(list.map((c) => c.id));
      // A card that left the list without a decision here was cancelled,
      // expired or decided elsewhere: say so instead of letting it vanish.
      const gone = prev.pending.filter((c) => !ids.has(c.id) && !prev.kept[c.id]).map((c) => c.id);
      const unsettled = Object.values(prev.kept)
        .filter((c) => !terminal.includes(c.state))
        .map((c) => c.id);
      const updates = await Promise.all(
        [...gone, ...unsettled].map((id) => api.proposal(id).catch(() => prev.kept[id] ?? prev.pending.find((c) => c.id === id))),
      );
      if (n !== refreshSeq.current) return;
      shown.current = {
        pending: list,
        kept: { ...prev.kept, ...Object.fromEntries(updates.filter(Boolean).map((c) => [c!.id, c!])) },
      };
      for (const id of ids) delete shown.current.kept[id];
      setPending(list);
      setKept(shown.current.kept);
      setError(null);
    } catch (e) {
      if (n === refreshSeq.current) setError(errorMessage(e));
    }
  }, []);

  useEffect(() => {
    void refresh();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Events come in bursts (approve → executing → completed); one
    // re-read covers a burst.
    const off = onEvents(liveEvents, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void refresh(), 120);
    });
    return () => {
      clearTimeout(timer);
      off();
    };
  }, [refresh]);

  const keep = useCallback((c: Card, decidedHere: boolean) => {
    shown.current = { ...shown.current, kept: { ...shown.current.kept, [c.id]: c } };
    setKept(shown.current.kept);
    if (decidedHere) setHere((h) => ({ ...h, [c.id]: true }));
  }, []);

  // Sends a held reject now: its window passed or the person moved on.
  const sendHeld = useCallback(async () => {
    const h = heldNow.current;
    if (!h) return;
    heldNow.current = null;
    clearTimeout(h.timer);
    setHeld(null);
    try {
      const c = await api.reject({ id: h.card.id, digest: h.card.digest, note: h.note });
      keep(c, true);
      setNoticeError(null);
    } catch (e) {
      // Not rejected: the card is back in the queue, saying why.
      setNoticeError(`Rejecting ${opLabel(h.card.op)} in ${h.card.repoName} failed: ${errorMessage(e)}`);
      if (e instanceof ApiError && (e.code === "proposal_terminal" || e.code === "proposal_not_found")) {
        keep(await api.proposal(h.card.id).catch(() => h.card), false);
      }
    }
    void refresh();
  }, [keep, refresh]);

  // Leaving the screen is moving on: a held reject is sent. (If the page
  // itself closes first, the proposal stays pending: nothing lands.)
  useEffect(() => () => void sendHeld(), [sendHeld]);

  const heldId = held?.card.id;
  // Waiting cards, oldest first; then the ones that left without a
  // decision here, in the order they arrived.
  const waiting = useMemo(
    () => [...(pending ?? [])].filter((c) => c.id !== heldId && !here[c.id]).sort(byCreated),
    [pending, heldId, here],
  );
  const left = useMemo(
    () =>
      Object.values(kept)
        .filter((k) => !here[k.id] && !waiting.some((p) => p.id === k.id))
        .sort(byCreated),
    [kept, here, waiting],
  );
  const notices = useMemo(
    () =>
      Object.values(kept)
        .filter((k) => here[k.id])
        .sort((a, b) => (b.decision?.at ?? "").localeCompare(a.decision?.at ?? "")),
    [kept, here],
  );
  const rows = useMemo(() => [...waiting, ...left], [waiting, left]);

  const current =
    rows.find((c) => c.id === selected)?.id ?? (rows.find((c) => c.state === "pending") ?? rows[0])?.id ?? null;

  // Let the app know which cards the person has in front of them (the
  // tray and the end-to-end tests rely on it); failures change nothing.
  const waitingIds = waiting.map((c) => c.id).join(",");
  useEffect(() => {
    if (waitingIds) api.shown("pending", waitingIds.split(",")).catch(() => {});
  }, [waitingIds]);

  // Rows other than the open card are checked once when they appear, so
  // that a stale one is marked before it is opened; the open card checks
  // itself (ProposalCard) and reports here.
  const checked = useRef(new Set<string>());
  useEffect(() => {
    for (const c of waiting) {
      if (checked.current.has(c.id) || c.id === current) continue;
      checked.current.add(c.id);
      api
        .preflight(c.id)
        .then((pf) => setStale((s) => (s[c.id] === pf.stale ? s : { ...s, [c.id]: pf.stale })))
        .catch(() => {});
    }
  }, [waiting, current]);

  // The open card takes the focus after a move or a decision, once it is
  // drawn.
  useLayoutEffect(() => {
    if (!wantFocus.current || !current) return;
    const a = actions.current.get(current);
    if (a) {
      wantFocus.current = false;
      a.focus();
    }
  });

  const select = useCallback((id: string | undefined, focus = true) => {
    if (!id) return;
    setSelected(id);
    wantFocus.current = focus;
  }, []);

  const move = useCallback(
    (delta: number) => {
      if (rows.length === 0) return;
      const i = rows.findIndex((c) => c.id === current);
      select(rows[Math.min(rows.length - 1, Math.max(0, i + delta))].id);
    },
    [rows, current, select],
  );

  /** The waiting card after id (or before it, at the end), for the selection to move to. */
  const nextAfter = useCallback(
    (id: string) => {
      const i = waiting.findIndex((w) => w.id === id);
      return (waiting[i + 1] ?? waiting[i - 1])?.id;
    },
    [waiting],
  );

  const holdReject = useCallback(
    (c: Card, note: string) => {
      void sendHeld();
      const h: HeldReject = { card: c, note, timer: setTimeout(() => void sendHeld(), rejectUndoMs()) };
      heldNow.current = h;
      setHeld(h);
      select(nextAfter(c.id) ?? "");
      wantFocus.current = true;
    },
    [sendHeld, select, nextAfter],
  );

  const undo = useCallback(() => {
    const h = heldNow.current;
    if (!h) return;
    heldNow.current = null;
    clearTimeout(h.timer);
    setHeld(null);
    select(h.card.id);
  }, [select]);

  // A layout effect, so the shortcuts act on what is on screen from the
  // moment it is drawn.
  useLayoutEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
      const act = current ? actions.current.get(current) : undefined;
      const card = rows.find((c) => c.id === current);
      switch (e.key) {
        case "j":
          move(1);
          break;
        case "k":
          move(-1);
          break;
        case "a":
          // Approving something else is moving on from a held reject.
          if (act?.approvable()) void sendHeld();
          act?.approveShortcut();
          break;
        case "r": {
          const note = act?.rejectable();
          if (card && note !== undefined && note !== null) holdReject(card, note);
          break;
        }
        case "u":
          if (!heldNow.current) return;
          undo();
          break;
        default:
          return;
      }
      e.preventDefault();
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [current, rows, move, holdReject, undo, sendHeld]);

  function decided(c: Card) {
    void sendHeld();
    // The next waiting card takes the selection and the focus, so a run
    // of decisions needs no j in between.
    if (c.id === current) select(nextAfter(c.id) ?? "");
    keep(c, true);
    // Until the next refresh the notice shows the state the server returned.
    void refresh();
  }

  async function reload(id: string) {
    try {
      const c = await api.proposal(id);
      if (c.state === "pending") {
        setPending((p) => p && p.map((x) => (x.id === id ? c : x)));
      } else {
        keep(c, false);
      }
    } catch (e) {
      setError(errorMessage(e));
    }
  }

  function dismiss(id: string) {
    const k = { ...shown.current.kept };
    delete k[id];
    shown.current = { ...shown.current, kept: k };
    setKept(k);
    setHere((h) => {
      const n = { ...h };
      delete n[id];
      return n;
    });
  }

  if (pending === null) {
    return error ? (
      <ErrorBox title="Could not load the proposals.">
        {error}{" "}
        <button type="button" className="link" onClick={() => void refresh()}>
          Try again
        </button>
      </ErrorBox>
    ) : (
      <p className="muted" role="status">
        Loading proposals…
      </p>
    );
  }

  const quiet = rows.length === 0 && notices.length === 0 && !held;
  // What rules approved meanwhile is said even with nothing waiting.
  if (quiet)
    return (
      <>
        <AutoApprovedNotices />
        <EmptyState status={status} />
      </>
    );

  // With nothing waiting the heading is the empty state's, so the page
  // reads the same whether or not notices are still shown.
  const titleId = waiting.length === 0 ? "empty-title" : "pending-title";

  return (
    <section aria-labelledby={titleId} className="pending">
      <div className="row pending-head">
        <h1 id={titleId}>
          {waiting.length === 0
            ? "No proposals waiting"
            : `${waiting.length} proposal${waiting.length === 1 ? "" : "s"} waiting`}
        </h1>
        <p className="muted keys" aria-label="Keyboard shortcuts">
          <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve · <kbd>r</kbd> reject · <kbd>u</kbd> undo
        </p>
      </div>
      {error && <ErrorBox>{error}</ErrorBox>}
      <div className="notices" aria-live="polite">
        {held && (
          <div className="notice undo-notice" data-id={held.card.id}>
            <span>
              Rejecting <strong>{opLabel(held.card.op)}</strong> in {held.card.repoName} from {held.card.agent}
              {held.note ? " with your note" : ""}.
            </span>
            <button type="button" className="undo" onClick={undo}>
              Undo <kbd>u</kbd>
            </button>
            <button type="button" className="link send-now" onClick={() => void sendHeld()}>
              Reject now
            </button>
          </div>
        )}
        {noticeError && <ErrorBox>{noticeError}</ErrorBox>}
        <AutoApprovedNotices />
        {notices.length > 0 && (
          <ul className="plain decided-list" aria-label="Decided here">
            {notices.map((c) => (
              <DecidedNotice key={c.id} card={c} onDismiss={() => dismiss(c.id)} />
            ))}
          </ul>
        )}
      </div>
      {rows.length > 0 && (
        <ol className="plain queue" aria-label="Proposals">
          {rows.map((c) => {
            const open = c.id === current;
            return (
              <li key={c.id} className={`queue-item${open ? " open" : ""}`} data-id={c.id} data-state={c.state}>
                <QueueRow card={c} open={open} stale={!!stale[c.id]} onOpen={() => select(c.id)} />
                {open && (
                  <ProposalCard
                    card={c}
                    selected
                    underRow
                    onDecided={decided}
                    onReload={() => void reload(c.id)}
                    onDismiss={c.state === "pending" ? undefined : () => dismiss(c.id)}
                    onStale={(s) => setStale((m) => (m[c.id] === s ? m : { ...m, [c.id]: s }))}
                    ref={(h) => {
                      if (h) actions.current.set(c.id, h);
                      else actions.current.delete(c.id);
                    }}
                  />
                )}
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}

/** One line of the queue; a button that opens the card. */
function QueueRow({ card: c, open, stale, onOpen }: { card: Card; open: boolean; stale: boolean; onOpen: () => void }) {
  const now = useNow(15_000);
  const created = toDate(c.createdAt)?.getTime() ?? now;
  const waitingCard = c.state === "pending";
  const outcomeStale = c.outcome?.code === "stale_base";
  return (
    <button
      type="button"
      className="queue-row"
      aria-expanded={open}
      aria-controls={open ? `card-${c.id}` : undefined}
      onClick={onOpen}
    >
      <span className="q-what">
        <span className="op">{opLabel(c.op)}</span> <span className="muted">in</span> <span className="repo">{c.repoName}</span>
      </span>
      <span className="q-agent">{c.agent}</span>
      <span className="q-marks">
        <RiskBadge risk={c.risk} />
        {!waitingCard && <StateBadge state={c.state} />}
        {waitingCard && (stale || outcomeStale) && <span className="badge warn mark-stale">stale</span>}
        {c.collisions?.length > 0 && (
          <span className="badge warn mark-collision" title={`Also touched by ${c.collisions.map((x) => x.agent).join(", ")}`}>
            collides ×{c.collisions.length}
          </span>
        )}
      </span>
      <span className="q-age muted">{formatDuration(Math.max(0, now - created)).split(" ")[0]} ago</span>
    </button>
  );
}

function outcomeWords(c: Card): string {
  switch (c.state) {
    case "approved":
      return "approved, about to run";
    case "executing":
      return "approved, running";
    case "completed":
      return c.outcome?.message ? `done: ${c.outcome.message}` : "done";
    case "failed":
      return `failed${c.outcome?.message ? `: ${c.outcome.message}` : ""}`;
    case "rejected":
      return c.outcome?.code === "stale_base" ? "sent back to the agent as stale" : "rejected";
    default:
      return stateLabel(c.state);
  }
}

/** What became of a card decided here, until dismissed. */
function DecidedNotice({ card: c, onDismiss }: { card: Card; onDismiss: () => void }) {
  return (
    <li className={`notice decided state-${c.state}`} id={`decided-${c.id}`} data-state={c.state}>
      <span>
        <StateBadge state={c.state} /> <strong>{opLabel(c.op)}</strong> in {c.repoName} from {c.agent}: {outcomeWords(c)}
        {c.outcome?.restorePoint && (
          <>
            {" "}
            <a href={href("timeline", undefined, { repo: c.repo, rp: c.outcome.restorePoint })}>restore point</a>
          </>
        )}
      </span>
      <a href={href("proposal", c.id)} className="open-proposal" aria-label={`Details of ${c.id}`}>
        Details
      </a>
      <button type="button" className="link dismiss" onClick={onDismiss} aria-label={`Dismiss notice about ${c.id}`}>
        Dismiss
      </button>
    </li>
  );
}
