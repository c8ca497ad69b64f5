// The home screen: the queue of proposals waiting for a decision, oldest
// first, kept live by the app's events. Each waiting proposal is one
// compact row (subject, operation, repository, agent, files, risk, age,
// stale and collision marks) in a list beside the open card (above it on
// a narrow screen); the card's decision bar stays in view while it
// scrolls, with the undo notice next to it. A card decided here leaves the
// queue with a notice that follows it to its end (approved → executing →
// completed or failed); a card that left without a decision here
// (expired, cancelled, decided elsewhere) stays in the queue saying so
// until dismissed. When the open card is replaced under the cursor, the
// screen says so and the decision keys wait until the person has seen
// the new one.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { api, ApiError, onEvents, type AutoApproval, type Card, type EventName, type Status } from "./api";
import { AutoApprovedNotices } from "./AutoApprovals";
import { ErrorBox, StateBadge, errorMessage } from "./bits";
import { EmptyState } from "./EmptyState";
import { shortSha, stateLabel } from "./format";
import { KeysHelp } from "./KeysHelp";
import { logNotice, NoticeLogButton, NoticeLogPanel } from "./NoticeLog";
import { ProposalCard, type CardActions } from "./ProposalCard";
import { QueueRow, matchesSearch, subjectOf } from "./QueueRow";
import { clearReviewNotes, notesToSend } from "./ReviewNotes";
import { href } from "./route";

const liveEvents: EventName[] = ["proposal:created", "proposal:updated", "proposals:resync"];
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

/** How long the decision keys wait after the open card was replaced under the cursor. */
export const defaultReplacedPauseMs = 1500;

function replacedPauseMs(): number {
  try {
    const v = Number(localStorage.getItem("sluice.replacedPauseMs"));
    if (Number.isFinite(v) && v > 0) return v;
  } catch {
    // storage can be unavailable; the default is fine
  }
  return defaultReplacedPauseMs;
}

/** The keys that decide on the open card: they wait while a replaced card is new. */
const decisionKeys = new Set(["a", "r", "s"]);

/** The open card changed under the cursor without the person asking. */
interface Replaced {
  /** The card the person had open, as it is now. */
  was: Card;
  /** The card open now, when it is another one. */
  next: string | null;
  /** What happened to it, in words that follow "The card you had open". */
  words: string;
  /** The decision keys still wait (the pause, then a key press). */
  holding: boolean;
  /** The pause is over: the next key press lets the decision keys act. */
  paused: boolean;
}

/** What became of a card that left the queue without a decision here. */
function goneWords(c: Card | undefined): string {
  if (!c) return "left the queue";
  switch (c.state) {
    case "cancelled":
      return "was withdrawn by the agent";
    case "expired":
      return "expired before anyone decided";
    case "approved":
    case "executing":
    case "completed":
    case "failed":
    case "needs_reconciliation":
      if (c.decision?.auto || c.approvedByRule) return `was approved automatically by rule ${c.approvedByRule ?? ""}`.trim();
      return "was approved elsewhere";
    case "rejected":
      return c.outcome?.code === "stale_base" ? "was sent back elsewhere" : "was rejected elsewhere";
    default:
      return "left the queue";
  }
}

function resealedWords(c: Card): string {
  const r = c.resealed;
  if (!r) return "changed: its digest is not the one you saw";
  return `was re-sealed${r.branch ? ` on ${r.branch.replace(/^refs\/heads\//, "")}` : ""} at ${shortSha(r.base)}: same changes`;
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

/** How many cards the server's pending list holds at most (app/api_proposals.go pendingPage). */
const pendingListMax = 500;

/**
 * The queue and the open card. total is how many proposals wait in all
 * (the app's live count): the list holds the oldest 500 at most, and the
 * heading and a note say so when more wait.
 */
export function PendingView({ status, total = null }: { status: Status; total?: number | null }) {
  const [pending, setPending] = useState<Card[] | null>(null);
  // Cards no longer pending that the screen still shows: decided here
  // (as notices) or gone from the queue without a decision here (as rows).
  const [kept, setKept] = useState<Record<string, Card>>({});
  const [here, setHere] = useState<Record<string, true>>({});
  const [held, setHeld] = useState<HeldReject | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  // Preflight results for rows, by id@digest: a re-sealed card is checked again.
  const [stale, setStale] = useState<Record<string, boolean>>({});
  const [query, setQuery] = useState("");
  const [keysOpen, setKeysOpen] = useState(false);
  const [logOpen, setLogOpen] = useState(false);
  const [replaced, setReplaced] = useState<Replaced | null>(null);
  // Bumped by "Dismiss all" to dismiss the automatic approvals' notices too.
  const [dismissAllAt, setDismissAllAt] = useState(0);
  const searchEl = useRef<HTMLInputElement>(null);
  // The decision keys wait until this time, and then until a key press.
  const guard = useRef<{ until: number } | null>(null);
  const lastOpen = useRef<{ id: string; digest: string; pending: boolean } | null>(null);
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
      const c = await api.reject({ id: h.card.id, digest: h.card.digest, note: h.note, comments: notesToSend(h.card.id) });
      clearReviewNotes(h.card.id);
      keep(c, true);
      setNoticeError(null);
    } catch (e) {
      // Not rejected: the card is back in the queue, saying why.
      setNoticeError(`Rejecting ${h.card.label} in ${h.card.repoName} failed: ${errorMessage(e)}`);
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
  // The rows the search leaves; j and k move among them.
  const rows = useMemo(() => [...waiting, ...left].filter((c) => matchesSearch(c, query)), [waiting, left, query]);

  const current =
    rows.find((c) => c.id === selected)?.id ?? (rows.find((c) => c.state === "pending") ?? rows[0])?.id ?? null;
  const openCard = rows.find((c) => c.id === current);

  // Let the app know which cards the person has in front of them (the
  // tray and the end-to-end tests rely on it); failures change nothing.
  const waitingIds = waiting.map((c) => c.id).join(",");
  useEffect(() => {
    if (waitingIds) api.shown("pending", waitingIds.split(",")).catch(() => {});
  }, [waitingIds]);

  // The app marks a card stale as soon as what it depends on moves
  // (card.stale, re-read on every event). Each row is also checked once
  // per digest it shows, so that a stale one is marked before it is
  // opened; the open card checks itself (ProposalCard) and reports here.
  const checked = useRef(new Set<string>());
  useEffect(() => {
    for (const c of waiting) {
      const key = `${c.id}@${c.digest}`;
      if (checked.current.has(key) || c.id === current) continue;
      checked.current.add(key);
      api
        .preflight(c.id)
        .then((pf) => setStale((s) => (s[key] === pf.stale ? s : { ...s, [key]: pf.stale })))
        .catch(() => {});
    }
  }, [waiting, current]);
  const isStale = (c: Card) => c.stale || !!stale[`${c.id}@${c.digest}`];

  // The open card replaced under the cursor: it left the queue without a
  // decision here (the agent withdrew it, it expired, a rule or another
  // window decided it) or its digest changed (it was re-sealed). The
  // screen says so, opens the next card, and the decision keys wait (see
  // onKey). A layout effect, so that the keys wait from the very render
  // that shows the new card.
  useLayoutEffect(() => {
    const prev = lastOpen.current;
    lastOpen.current = openCard ? { id: openCard.id, digest: openCard.digest, pending: openCard.state === "pending" } : null;
    if (!prev || !prev.pending) return;
    // The person's own decisions move the selection on, and are no surprise.
    if (here[prev.id] || heldNow.current?.card.id === prev.id) return;
    const still = waiting.find((c) => c.id === prev.id);
    let r: Omit<Replaced, "holding" | "paused">;
    if (still) {
      // Still waiting: either the person moved on, or it changed in place.
      if (still.id !== current || still.digest === prev.digest) return;
      r = { was: still, next: still.id, words: resealedWords(still) };
    } else {
      const was = kept[prev.id] ?? (pending ?? []).find((c) => c.id === prev.id);
      if (!was) return;
      const next = (waiting.find((w) => byCreated(w, was) > 0) ?? waiting[waiting.length - 1])?.id ?? null;
      if (next && next !== current) {
        setSelected(next);
        wantFocus.current = true;
      }
      r = { was, next, words: goneWords(was) };
    }
    // Re-sealed with the same changes, it is still the card the person
    // was reading: the notice says so, and the keys act on it at once
    // (approving a run of commits re-seals the next card as each lands).
    const sameCard = !!still && still.resealed?.to === still.digest;
    guard.current = sameCard ? null : { until: Date.now() + replacedPauseMs() };
    setReplaced({ ...r, holding: !sameCard, paused: sameCard });
    logNotice({
      key: `replaced-${r.was.id}-${r.was.digest}-${r.was.state}`,
      kind: "replaced",
      text: `${r.was.label} in ${r.was.repoName} (${subjectOf(r.was)}) ${r.words}.`,
      proposalId: r.was.id,
    });
  });

  // When the pause is over the notice says a key press lets the keys act.
  const holding = replaced?.holding ?? false;
  useEffect(() => {
    if (!holding || !guard.current) return;
    const t = setTimeout(
      () => setReplaced((r) => (r && r.holding ? { ...r, paused: true } : r)),
      Math.max(0, guard.current.until - Date.now()),
    );
    return () => clearTimeout(t);
  }, [holding, replaced?.was.id, replaced?.was.digest]);

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
    // Moving on is having seen the card that replaced the one before
    // (unless its keys still wait); the log keeps the notice.
    setReplaced((r) => (r && !r.holding ? null : r));
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
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "Escape" && e.target === searchEl.current) {
        // Esc leaves the search (keeping what it found) for the shortcuts.
        e.preventDefault();
        searchEl.current?.blur();
        if (current) actions.current.get(current)?.focus();
        return;
      }
      if (isTyping(e.target)) return;
      if (["Shift", "Control", "Alt", "Meta", "CapsLock"].includes(e.key)) return;
      // A card replaced under the cursor: the decision keys wait for the
      // pause, and then for one key press, which only lets them act again.
      if (guard.current) {
        const deciding = decisionKeys.has(e.key);
        if (Date.now() >= guard.current.until) {
          guard.current = null;
          setReplaced((r) => (r ? { ...r, holding: false } : r));
          if (deciding) {
            e.preventDefault();
            return;
          }
        } else if (deciding) {
          e.preventDefault();
          return;
        }
      }
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
        case "s":
          act?.sendBackShortcut();
          break;
        case "u":
          if (!heldNow.current) return;
          undo();
          break;
        case "?":
          setKeysOpen((o) => !o);
          break;
        case "/":
          searchEl.current?.focus();
          searchEl.current?.select();
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
    // A decision that the list's refresh saw land before its answer came
    // back was the person's own: it replaced nothing.
    if (replaced?.was.id === c.id) {
      setReplaced(null);
      guard.current = null;
    }
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

  // Every notice shown is kept in the log, in its latest words.
  useEffect(() => {
    for (const c of notices)
      logNotice({
        key: `decided-${c.id}`,
        kind: "decided",
        text: `${c.label} in ${c.repoName} from ${c.agent} (${subjectOf(c)}): ${outcomeWords(c)}`,
        proposalId: c.id,
      });
  }, [notices]);
  useEffect(() => {
    if (noticeError) logNotice({ key: `error-${noticeError}`, kind: "error", text: noticeError });
  }, [noticeError]);
  const heldText = held
    ? `Rejecting ${held.card.label} in ${held.card.repoName} from ${held.card.agent}${held.note ? " with your note" : ""}.`
    : "";
  useEffect(() => {
    if (held) logNotice({ key: `held-${held.card.id}`, kind: "held", text: heldText, proposalId: held.card.id });
  }, [held, heldText]);
  const logAuto = useCallback((recent: AutoApproval[]) => {
    for (const a of recent)
      logNotice({
        key: `auto-${a.id}`,
        kind: "auto",
        text: `${a.label} in ${a.repoName} from ${a.agent}: approved automatically by rule ${a.rule} (${stateLabel(a.state)})`,
        proposalId: a.id,
      });
  }, []);

  const dismissAll = useCallback(() => {
    const k = { ...shown.current.kept };
    for (const id of Object.keys(here)) delete k[id];
    shown.current = { ...shown.current, kept: k };
    setKept(k);
    setHere({});
    setReplaced((r) => (r && r.holding ? r : null));
    setNoticeError(null);
    setDismissAllAt(Date.now());
  }, [here]);

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

  const quiet = waiting.length === 0 && left.length === 0 && notices.length === 0 && !held;
  // What rules approved meanwhile is said even with nothing waiting.
  if (quiet)
    return (
      <>
        <AutoApprovedNotices onRecent={logAuto} dismissAllAt={dismissAllAt} />
        <EmptyState status={status} />
      </>
    );

  // With nothing waiting the heading is the empty state's, so the page
  // reads the same whether or not notices are still shown.
  const titleId = waiting.length === 0 ? "empty-title" : "pending-title";
  const shownWaiting = rows.filter((c) => c.state === "pending").length;
  // What needs care before anything is opened.
  const staleCount = waiting.filter(isStale).length;
  const collidingCount = waiting.filter((c) => c.collisions?.length > 0).length;
  const counts = [staleCount > 0 && `${staleCount} stale`, collidingCount > 0 && `${collidingCount} colliding`].filter(Boolean);

  // The notices that belong next to the decision: the undo of a held
  // reject, the card replaced under the cursor, and what became of the
  // last decision. They go in the open card's decision bar, which stays
  // in view; with no card to decide on, at the top.
  const dockInBar = openCard?.state === "pending";
  const [latest, ...older] = notices;
  const dockItems: ReactNode[] = [];
  if (replaced)
    dockItems.push(
      <div
        key="replaced"
        id="replaced-notice"
        className={`notice replaced-notice${replaced.holding ? " holding" : ""}`}
        role="alert"
        data-holding={replaced.holding ? "true" : "false"}
        data-was={replaced.was.id}
      >
        <span>
          <strong>The card you had open</strong> ({subjectOf(replaced.was)}) {replaced.words}
          {replaced.next && replaced.next !== replaced.was.id ? "; this is another card." : "."}
          {replaced.holding &&
            (replaced.paused ? " Press any key, then decide on this one." : " Decision keys wait: read this card first.")}
        </span>
        <a href={href("proposal", replaced.was.id)} className="open-proposal" aria-label={`Details of ${replaced.was.id}`}>
          Details
        </a>
        <button
          type="button"
          className="link dismiss"
          aria-label="Dismiss notice about the replaced card"
          onClick={() => {
            guard.current = null;
            setReplaced(null);
          }}
        >
          Dismiss
        </button>
      </div>,
    );
  if (held)
    dockItems.push(
      <div key="held" className="notice undo-notice" data-id={held.card.id}>
        <span>
          Rejecting <strong>{held.card.label}</strong> in {held.card.repoName} from {held.card.agent}
          {held.note ? " with your note" : ""}.
        </span>
        <button type="button" className="undo" onClick={undo}>
          Undo <kbd>u</kbd>
        </button>
        <button type="button" className="link send-now" onClick={() => void sendHeld()}>
          Reject now
        </button>
      </div>,
    );
  if (latest)
    dockItems.push(
      <ul key="latest" className="plain decided-list latest-decided" aria-label="Last decision">
        <DecidedNotice card={latest} onDismiss={() => dismiss(latest.id)} />
      </ul>,
    );
  const dock = dockItems.length > 0 ? <div aria-live="polite">{dockItems}</div> : null;
  const dismissable = notices.length > 0 || !!replaced || !!noticeError;

  // The server lists the oldest pendingListMax; more may wait.
  const cut = total !== null && waiting.length >= pendingListMax && total > waiting.length;
  return (
    <section aria-labelledby={titleId} className="pending review">
      <div className="row pending-head">
        <h1 id={titleId}>
          {waiting.length === 0
            ? "No proposals waiting"
            : `${Math.max(waiting.length, cut ? (total ?? 0) : 0)} proposal${waiting.length === 1 && !cut ? "" : "s"} waiting`}
        </h1>
        {cut && (
          <p className="muted queue-cut" role="note">
            The oldest {waiting.length} are listed; the others appear here as these are decided.
          </p>
        )}
        {counts.length > 0 && <p className="muted queue-counts">{counts.join(" · ")}</p>}
        <div className="review-tools">
          <label className="search">
            <span className="visually-hidden">Search proposals</span>
            <input
              ref={searchEl}
              id="queue-search"
              type="search"
              placeholder="Search  /"
              autoComplete="off"
              spellCheck={false}
              value={query}
              onChange={(e) => setQuery(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter") {
                  e.preventDefault();
                  if (current) actions.current.get(current)?.focus();
                }
              }}
            />
          </label>
          <button type="button" className="keys-button" aria-haspopup="dialog" onClick={() => setKeysOpen(true)}>
            Keys <kbd>?</kbd>
          </button>
          <NoticeLogButton open={logOpen} onToggle={() => setLogOpen((o) => !o)} />
          {dismissable && (
            <button type="button" className="link dismiss-all" onClick={dismissAll}>
              Dismiss all
            </button>
          )}
        </div>
      </div>
      {query && (
        <p className="muted search-count" role="status">
          {rows.length === 0
            ? `Nothing matches “${query}”.`
            : `Showing ${rows.length} of ${waiting.length + left.length}: ${shownWaiting} waiting.`}
        </p>
      )}
      {logOpen && <NoticeLogPanel onClose={() => setLogOpen(false)} />}
      {keysOpen && <KeysHelp onClose={() => setKeysOpen(false)} />}
      {error && <ErrorBox>{error}</ErrorBox>}
      <div className="notices" aria-live="polite">
        {noticeError && <ErrorBox>{noticeError}</ErrorBox>}
        <AutoApprovedNotices onRecent={logAuto} dismissAllAt={dismissAllAt} />
        {!dockInBar && dockItems}
        {older.length > 0 && (
          <ul className="plain decided-list" aria-label="Decided here">
            {older.map((c) => (
              <DecidedNotice key={c.id} card={c} onDismiss={() => dismiss(c.id)} />
            ))}
          </ul>
        )}
      </div>
      <div className="review-body">
        <div className="review-list">
          {rows.length > 0 && (
            <ol className="plain queue" aria-label="Proposals">
              {rows.map((c) => {
                const open = c.id === current;
                return (
                  <li key={c.id} className={`queue-item${open ? " open" : ""}`} data-id={c.id} data-state={c.state}>
                    <QueueRow
                      card={c}
                      open={open}
                      stale={isStale(c)}
                      staleWhy={c.staleWhy}
                      onOpen={() => select(c.id)}
                    />
                  </li>
                );
              })}
            </ol>
          )}
        </div>
        <div className="review-card">
          {openCard && (
            <ProposalCard
              key={openCard.id}
              card={openCard}
              selected
              dock={dockInBar ? dock : undefined}
              onDecided={decided}
              onReload={() => void reload(openCard.id)}
              onDismiss={openCard.state === "pending" ? undefined : () => dismiss(openCard.id)}
              onStale={(st) => {
                const key = `${openCard.id}@${openCard.digest}`;
                setStale((m) => (m[key] === st ? m : { ...m, [key]: st }));
              }}
              ref={(h) => {
                if (h) actions.current.set(openCard.id, h);
                else actions.current.delete(openCard.id);
              }}
            />
          )}
        </div>
      </div>
    </section>
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
  const [undo, setUndo] = useState<{ busy: boolean; done?: string; error?: string }>({ busy: false });
  // An approval that landed can be undone from here: the repository goes
  // back to the restore point taken before it ran (the Timeline's restore).
  const undoable = c.state === "completed" && !!c.outcome?.restorePoint && !!c.decision?.approved && !undo.done;
  async function undoIt() {
    setUndo({ busy: true });
    try {
      await api.restore({ repo: c.repo, restorePoint: c.outcome!.restorePoint!, force: false });
      setUndo({ busy: false, done: `Undone: ${c.repoName} is back as it was before.` });
    } catch (e) {
      setUndo({ busy: false, error: `Undo failed: ${errorMessage(e)}` });
    }
  }
  return (
    <li className={`notice decided state-${c.state}`} id={`decided-${c.id}`} data-state={c.state}>
      <span>
        <StateBadge state={c.state} /> <strong>{c.label}</strong> in {c.repoName} from {c.agent}: {outcomeWords(c)}
        {c.outcome?.restorePoint && (
          <>
            {" "}
            <a href={href("timeline", undefined, { repo: c.repo, rp: c.outcome.restorePoint })}>restore point</a>
          </>
        )}
        {undo.done && <span className="undone"> {undo.done}</span>}
      </span>
      {undo.error && <ErrorBox>{undo.error}</ErrorBox>}
      {undoable && (
        <button type="button" className="undo undo-approval" disabled={undo.busy} onClick={() => void undoIt()}>
          {undo.busy ? "Undoing…" : "Undo"}
        </button>
      )}
      <a href={href("proposal", c.id)} className="open-proposal" aria-label={`Details of ${c.id}`}>
        Details
      </a>
      <button type="button" className="link dismiss" onClick={onDismiss} aria-label={`Dismiss notice about ${c.id}`}>
        Dismiss
      </button>
    </li>
  );
}
