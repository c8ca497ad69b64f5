// The Pending screen's log of notices: what was decided here, what rules
// approved, what was sent back, which open card was replaced under the
// cursor. A notice on screen can be dismissed (one at a time or all
// together); the log keeps every one for the page's life, so that a
// person who dismissed too quickly can still read what happened.
import { useEffect, useState, useSyncExternalStore } from "react";
import { Time } from "./bits";
import { href } from "./route";

export type NoticeKind = "decided" | "auto" | "held" | "replaced" | "error";

export interface LoggedNotice {
  /** One entry per key: a later notice with the same key updates it. */
  key: string;
  kind: NoticeKind;
  text: string;
  /** When it was first logged (ms since the epoch). */
  at: number;
  /** The proposal it is about, for a Details link. */
  proposalId?: string;
}

// Module state: the Pending screen mounts again whenever the person comes
// back to it, and the log must outlive that.
let entries: LoggedNotice[] = [];
const listeners = new Set<() => void>();

function emit() {
  listeners.forEach((l) => l());
}

/** Adds a notice to the log, or updates the words of the one with its key. */
export function logNotice(n: Omit<LoggedNotice, "at"> & { at?: number }) {
  const old = entries.find((e) => e.key === n.key);
  if (old && old.text === n.text && old.kind === n.kind) return;
  const at = old?.at ?? n.at ?? Date.now();
  entries = [{ ...n, at }, ...entries.filter((e) => e.key !== n.key)].sort((a, b) => b.at - a.at);
  emit();
}

/** Empties the log (tests). */
export function clearNoticeLog() {
  entries = [];
  emit();
}

function subscribe(l: () => void) {
  listeners.add(l);
  return () => listeners.delete(l);
}

export function useNoticeLog(): LoggedNotice[] {
  return useSyncExternalStore(
    subscribe,
    () => entries,
    () => entries,
  );
}

const kindWords: Record<NoticeKind, string> = {
  decided: "Decided here",
  auto: "Approved by a rule",
  held: "Held reject",
  replaced: "Card replaced",
  error: "Error",
};

/**
 * A button that opens the log below it, newest first. It stays open until
 * the person closes it.
 */
export function NoticeLogButton({ open, onToggle }: { open: boolean; onToggle: () => void }) {
  const log = useNoticeLog();
  return (
    <button
      type="button"
      className="notice-log-toggle"
      aria-expanded={open}
      aria-controls="notice-log"
      onClick={onToggle}
    >
      Notices{log.length > 0 ? ` (${log.length})` : ""}
    </button>
  );
}

export function NoticeLogPanel({ onClose }: { onClose: () => void }) {
  const log = useNoticeLog();
  // Keep the times current enough for "at" to read right after a while.
  const [, redraw] = useState(0);
  useEffect(() => {
    const t = setInterval(() => redraw((n) => n + 1), 30_000);
    return () => clearInterval(t);
  }, []);
  return (
    <section id="notice-log" className="panel notice-log" aria-labelledby="notice-log-title">
      <div className="row">
        <h2 id="notice-log-title">Notices</h2>
        <button type="button" className="link" onClick={onClose}>
          Close
        </button>
      </div>
      {log.length === 0 ? (
        <p className="muted">No notices yet on this page.</p>
      ) : (
        <ol className="plain notice-log-list">
          {log.map((n) => (
            <li key={n.key} className={`logged logged-${n.kind}`} data-kind={n.kind}>
              <Time at={n.at} /> <span className="muted">{kindWords[n.kind]}:</span> {n.text}
              {n.proposalId && (
                <>
                  {" "}
                  <a href={href("proposal", n.proposalId)} aria-label={`Details of ${n.proposalId}`}>
                    Details
                  </a>
                </>
              )}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
