// What rules approved without asking. On the Pending screen each recent
// automatic approval is a notice naming its rule, with an Undo that puts
// the repository back to the restore point taken before it ran (the same
// restore as the Safety timeline's); the Rules screen lists the newest as a
// feed. Both read the app's list of automatic approvals and follow its
// proposal events.
import { useCallback, useEffect, useState } from "react";
import { api, onEvents, type AutoApproval, type EventName } from "./api";
import { ErrorBox, StateBadge, Time, errorMessage, useNow } from "./bits";
import { toDate } from "./format";
import { href } from "./route";

/** How long an automatic approval stays on the Pending screen. */
export const autoNoticeMs = 15 * 60_000;

const liveEvents: EventName[] = ["proposal:created", "proposal:updated", "proposals:resync"];

// Dismissed and undone notices, for as long as the page lives: the Pending
// screen mounts the notices again when its queue empties or fills.
const dismissed = new Set<string>();
const undone = new Map<string, string>();

/** The app's automatic approvals, newest first, re-read on proposal events. */
export function useAutoApprovals(): { list: AutoApproval[] | null; error: string | null } {
  const [list, setList] = useState<AutoApproval[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const load = () =>
      api.autoApprovals().then(
        (l) => {
          if (!live) return;
          // An answer that is not a list (a proxy's page, an older app)
          // is an error, never a list to draw.
          if (!Array.isArray(l)) {
            setError("the app's answer was not a list of approvals");
            return;
          }
          setList(l);
          setError(null);
        },
        (e) => live && setError(errorMessage(e)),
      );
    void load();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onEvents(liveEvents, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void load(), 150);
    });
    return () => {
      live = false;
      clearTimeout(timer);
      off();
    };
  }, []);
  return { list, error };
}

function what(a: AutoApproval) {
  return (
    <>
      <strong>{a.label}</strong> in {a.repoName} from {a.agent}
    </>
  );
}

/**
 * The Pending screen's notices of recent automatic approvals. onRecent is
 * told the ones on screen (the screen keeps them in its log); a new
 * dismissAllAt dismisses every one shown.
 */
export function AutoApprovedNotices({
  onRecent,
  dismissAllAt = 0,
}: { onRecent?: (recent: AutoApproval[]) => void; dismissAllAt?: number } = {}) {
  const { list } = useAutoApprovals();
  const now = useNow(30_000);
  const [, redraw] = useState(0);
  const [busy, setBusy] = useState<string | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});

  const undo = useCallback(async (a: AutoApproval) => {
    setBusy(a.id);
    try {
      await api.restore({ repo: a.repo, restorePoint: a.restorePoint, force: false });
      undone.set(a.id, `Undone: ${a.repoName} is back as it was before.`);
      setErrors(({ [a.id]: _, ...rest }) => rest);
    } catch (e) {
      setErrors((m) => ({ ...m, [a.id]: `Undo failed: ${errorMessage(e)}` }));
    } finally {
      setBusy(null);
    }
  }, []);

  const recent = (list ?? []).filter((a) => {
    const at = toDate(a.at)?.getTime() ?? 0;
    return !dismissed.has(a.id) && now - at < autoNoticeMs;
  });
  const recentKey = recent.map((a) => `${a.id}:${a.state}`).join(",");
  useEffect(() => {
    if (recent.length > 0) onRecent?.(recent);
    // recentKey stands for recent, a new array on every render.
  }, [recentKey, onRecent]);
  useEffect(() => {
    if (!dismissAllAt) return;
    for (const a of list ?? []) dismissed.add(a.id);
    redraw((n) => n + 1);
    // Only a new "Dismiss all" dismisses: a list read later is not dismissed.
  }, [dismissAllAt]);
  if (recent.length === 0) return null;
  return (
    <ul className="plain auto-approved-list" aria-label="Approved by rules" aria-live="polite">
      {recent.map((a) => (
        <li key={a.id} className={`notice auto-approved state-${a.state}`} id={`auto-${a.id}`} data-state={a.state}>
          <span>
            <StateBadge state={a.state} /> {what(a)}: approved automatically by rule{" "}
            <a href={href("rules")} className="rule-link">
              {a.rule}
            </a>
            {undone.has(a.id) && <span className="undone"> {undone.get(a.id)}</span>}
          </span>
          {errors[a.id] && <ErrorBox>{errors[a.id]}</ErrorBox>}
          {a.restorePoint && !undone.has(a.id) && (
            <button type="button" className="undo undo-auto" disabled={busy === a.id} onClick={() => void undo(a)}>
              {busy === a.id ? "Undoing…" : "Undo"}
            </button>
          )}
          <a href={href("proposal", a.id)} className="open-proposal" aria-label={`Details of ${a.id}`}>
            Details
          </a>
          <button
            type="button"
            className="link dismiss"
            aria-label={`Dismiss notice about ${a.id}`}
            onClick={() => {
              dismissed.add(a.id);
              redraw((n) => n + 1);
            }}
          >
            Dismiss
          </button>
        </li>
      ))}
    </ul>
  );
}

/** The Rules screen's feed of the newest automatic approvals. */
export function AutoApprovalFeed() {
  const { list, error } = useAutoApprovals();
  return (
    <section aria-labelledby="auto-feed-title" className="auto-feed">
      <h2 id="auto-feed-title">Approved by rules</h2>
      {error && <ErrorBox>{error}</ErrorBox>}
      {list && list.length === 0 && <p className="muted auto-feed-empty">No proposal has been approved by a rule yet.</p>}
      {list && list.length > 0 && (
        <ol className="plain auto-feed-list">
          {list.map((a) => (
            <li key={a.id} id={`auto-feed-${a.id}`} data-state={a.state}>
              <Time at={a.at} /> <StateBadge state={a.state} /> {what(a)}, by rule <strong className="rule-name">{a.rule}</strong>{" "}
              <a href={href("proposal", a.id)}>details</a>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
