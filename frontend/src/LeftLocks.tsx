// The lock files git left in a repository when Sluice was stopped in the
// middle of an execution. While one is there git refuses to touch what it
// guards, so restores and approvals in that repository answer repo_locked;
// the person removes those the interrupted execution's own git left, here,
// after confirming.
import { useState } from "react";
import { api, type Card, type GitLock, type LockRemoval } from "./api";
import { ConfirmDialog } from "./ConfirmDialog";
import { ErrorBox, Time, errorMessage } from "./bits";
import { kb } from "./format";

interface Props {
  card: Card;
  /** Asks the owner to re-read the card after a removal. */
  onChanged?: () => void;
}

export function LeftLocks({ card, onChanged }: Props) {
  const locks = card.locks ?? [];
  const leftover = locks.filter((l) => l.leftover);
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [result, setResult] = useState<LockRemoval | null>(null);
  if (locks.length === 0 && !result) return null;

  async function remove() {
    setBusy(true);
    setError("");
    try {
      const r = await api.removeLocks({ id: card.id, locks: leftover });
      setResult(r);
      setAsking(false);
      onChanged?.();
    } catch (e) {
      setError(errorMessage(e));
      setAsking(false);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="left-locks" aria-label="git lock files">
      <h3>git lock files in the repository</h3>
      {locks.length > 0 && (
        <>
          <p>
            git creates a <code>.lock</code> file beside a file it is about to replace and removes it when done. A git
            that is stopped leaves it behind, and every later git that needs that file refuses to run: restores and
            approvals in this repository answer <code>repo_locked</code> until it is gone. Removing a lock deletes only
            the lock file; the file it guards stays as it is.
          </p>
          <ul className="plain lock-list">
            {locks.map((l) => (
              <LockRow key={l.repo + "\0" + l.path} lock={l} />
            ))}
          </ul>
        </>
      )}
      {result && (
        <div className="lock-result" role="status">
          {result.removed.length > 0 && (
            <p className="locks-removed">
              Removed {result.removed.map((l) => l.shown).join(", ")}.
            </p>
          )}
          {result.kept.map((k) => (
            <p key={k.lock.repo + "\0" + k.lock.path} className="lock-kept">
              Kept <code>{k.lock.shown}</code>: {k.reason}.
            </p>
          ))}
        </div>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
      {leftover.length > 0 && (
        <div className="actions">
          <button type="button" className="remove-locks danger" disabled={busy} onClick={() => setAsking(true)}>
            Remove {leftover.length === 1 ? "this lock file" : `these ${leftover.length} lock files`}
          </button>
        </div>
      )}
      {asking && (
        <ConfirmDialog
          title="Remove git's lock files?"
          confirmLabel={busy ? "Removing…" : "Remove"}
          confirmClass="confirm-remove-locks"
          danger
          busy={busy}
          onConfirm={() => void remove()}
          onCancel={() => setAsking(false)}
        >
          <p>
            Sluice was stopped while this ran and its git was stopped with it, leaving these locks. No git is working in
            the repository now. Only these files are removed, and each only if it is still exactly the file shown here:
          </p>
          <ul className="plain">
            {leftover.map((l) => (
              <li key={l.repo + "\0" + l.path}>
                <code>{l.shown}</code>
              </li>
            ))}
          </ul>
        </ConfirmDialog>
      )}
    </section>
  );
}

function LockRow({ lock }: { lock: GitLock }) {
  return (
    <li className={`lock${lock.leftover ? " leftover" : ""}`} data-path={lock.path}>
      <code className="lock-path" title={lock.repo}>
        {lock.shown}
      </code>{" "}
      <span className="muted">
        {lock.size < 1024 ? `${lock.size} B` : `${kb(lock.size)} KB`} · <Time at={lock.modTime} />
      </span>
      <div className="lock-what">{lock.what}.</div>
      <div className="lock-whose">
        {lock.inUse
          ? "A git process is working in this repository now: it may be its lock. Wait for it to finish."
          : lock.leftover
            ? "Left by this execution's git when Sluice was stopped."
            : "It was there before this execution began, so it is not Sluice's: remove it yourself once you are sure no git runs."}
      </div>
    </li>
  );
}
