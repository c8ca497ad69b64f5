// The home screen: every proposal waiting for a decision, oldest first,
// kept live by the app's events. Cards decided here (or withdrawn while
// on screen) stay until dismissed, showing what became of them:
// approved → executing → completed or failed.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { api, onEvents, type Card, type Status } from "./api";
import { ErrorBox, errorMessage } from "./bits";
import { EmptyState } from "./EmptyState";
import { ProposalCard, type CardActions } from "./ProposalCard";

const liveEvents = ["proposal:created", "proposal:updated", "proposals:resync"];

function byCreated(a: Card, b: Card) {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0;
}

function lastChange(c: Card): string {
  return c.history?.[c.history.length - 1]?.at ?? c.decision?.at ?? c.createdAt;
}

function isTyping(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || typeof el.closest !== "function") return false;
  return !!el.closest("input, textarea, select, [contenteditable=''], [contenteditable='true'], [role='dialog']");
}

export function PendingView({ status }: { status: Status }) {
  const [pending, setPending] = useState<Card[] | null>(null);
  const [kept, setKept] = useState<Record<string, Card>>({});
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const actions = useRef(new Map<string, CardActions>());
  // What the screen shows, for the refresh that runs outside React state.
  const shown = useRef<{ pending: Card[]; kept: Record<string, Card> }>({ pending: [], kept: {} });

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
        .filter((c) => !["completed", "failed", "rejected", "cancelled", "expired"].includes(c.state))
        .map((c) => c.id);
      const updates = await Promise.all(
        [...gone, ...unsettled].map((id) => api.proposal(id).catch(() => prev.kept[id] ?? prev.pending.find((c) => c.id === id))),
      );
      if (n !== refreshSeq.current) return;
      shown.current = {
        pending: list,
        kept: { ...prev.kept, ...Object.fromEntries(updates.filter(Boolean).map((c) => [c.id, c])) },
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

  // Waiting cards first, oldest first; then the ones decided or withdrawn
  // while on screen, latest change first.
  const waiting = useMemo(() => [...(pending ?? [])].sort(byCreated), [pending]);
  const settled = useMemo(
    () =>
      Object.values(kept)
        .filter((k) => !waiting.some((p) => p.id === k.id))
        .sort((a, b) => lastChange(b).localeCompare(lastChange(a))),
    [kept, waiting],
  );
  const cards = useMemo(() => [...waiting, ...settled], [waiting, settled]);

  const current = cards.find((c) => c.id === selected) ? selected : (cards.find((c) => c.state === "pending") ?? cards[0])?.id ?? null;

  // Let the app know which cards the person has in front of them (the
  // tray and the end-to-end tests rely on it); failures change nothing.
  const waitingIds = waiting.map((c) => c.id).join(",");
  useEffect(() => {
    if (waitingIds) api.shown("pending", waitingIds.split(",")).catch(() => {});
  }, [waitingIds]);

  useEffect(() => {
    document.title = pending && pending.length > 0 ? `(${pending.length}) Sluice` : "Sluice";
  }, [pending]);

  const move = useCallback(
    (delta: number) => {
      if (cards.length === 0) return;
      const i = cards.findIndex((c) => c.id === current);
      const next = cards[Math.min(cards.length - 1, Math.max(0, i + delta))];
      setSelected(next.id);
      actions.current.get(next.id)?.focus();
    },
    [cards, current],
  );

  // A layout effect, so the shortcuts act on what is on screen from the
  // moment it is drawn.
  useLayoutEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
      const act = current ? actions.current.get(current) : undefined;
      switch (e.key) {
        case "j":
          move(1);
          break;
        case "k":
          move(-1);
          break;
        case "a":
          act?.approveShortcut();
          break;
        case "r":
          act?.rejectShortcut();
          break;
        default:
          return;
      }
      e.preventDefault();
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [current, move]);

  function decided(c: Card) {
    // The next waiting card takes the selection, so a run of decisions
    // needs no j in between.
    if (c.id === current) {
      const i = waiting.findIndex((w) => w.id === c.id);
      const next = waiting[i + 1] ?? waiting[i - 1];
      if (next) setSelected(next.id);
    }
    shown.current = { ...shown.current, kept: { ...shown.current.kept, [c.id]: c } };
    setKept(shown.current.kept);
    // Until the next refresh the card shows the state the server returned.
    void refresh();
  }

  async function reload(id: string) {
    try {
      const c = await api.proposal(id);
      if (c.state === "pending") {
        setPending((p) => p && p.map((x) => (x.id === id ? c : x)));
      } else {
        decided(c);
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

  if (cards.length === 0) return <EmptyState status={status} />;

  const cardFor = (c: Card) => (
    <ProposalCard
      key={c.id}
      card={c}
      selected={c.id === current}
      onSelect={() => setSelected(c.id)}
      onDecided={decided}
      onReload={() => void reload(c.id)}
      onDismiss={c.state === "pending" ? undefined : () => dismiss(c.id)}
      ref={(h) => {
        if (h) actions.current.set(c.id, h);
        else actions.current.delete(c.id);
      }}
    />
  );

  // With nothing waiting the heading is the empty state's, so the page
  // reads the same whether or not decided cards are still shown.
  const titleId = waiting.length === 0 ? "empty-title" : "pending-title";

  return (
    <section aria-labelledby={titleId} className="pending">
      <div className="row">
        <h1 id={titleId}>
          {waiting.length === 0
            ? "No proposals waiting"
            : `${waiting.length} proposal${waiting.length === 1 ? "" : "s"} waiting`}
        </h1>
        <p className="muted keys" aria-label="Keyboard shortcuts">
          <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve · <kbd>r</kbd> reject
        </p>
      </div>
      {error && <ErrorBox>{error}</ErrorBox>}
      {waiting.length > 0 && <div className="cards">{waiting.map(cardFor)}</div>}
      {settled.length > 0 && (
        <>
          <div className="row settled-head">
            <h2>Decided while you were here</h2>
            <button type="button" onClick={() => settled.forEach((c) => dismiss(c.id))}>
              Dismiss all
            </button>
          </div>
          <div className="cards settled">{settled.map(cardFor)}</div>
        </>
      )}
    </section>
  );
}
