// The safety timeline of one repository: the restore points Sluice took
// before each change it made, and the ref movements around them, newest
// first. A restore asks first; if the repository moved on since the
// restore point, the server says so (restore_conflict) and restoring
// anyway needs a second, explicit confirmation.
import { useCallback, useEffect, useMemo, useState } from "react";
import {
  api,
  ApiError,
  type RestorePoint,
  type RestorePreview,
  type RestoreResult,
  type Status,
  type Timeline,
  type TimelineEvent,
} from "./api";
import { ConfirmDialog } from "./ConfirmDialog";
import { ErrorBox, Sha, Time, errorMessage } from "./bits";
import { shortRef, toDate } from "./format";
import { href, navigate } from "./route";

// One row: a restore point (with its event when there is one) or another
// event.
interface Item {
  time: string | number;
  rp?: RestorePoint;
  ev?: TimelineEvent;
}

function items(t: Timeline): Item[] {
  const rps = new Map(t.restorePoints.map((r) => [r.id, r]));
  const used = new Set<string>();
  const out: Item[] = [];
  for (const ev of t.events) {
    const rp = ev.restorePointId ? rps.get(ev.restorePointId) : undefined;
    if (ev.kind === "restore_point" && rp) {
      if (used.has(rp.id)) continue;
      used.add(rp.id);
      out.push({ time: ev.time, rp, ev });
    } else {
      out.push({ time: ev.time, ev });
    }
  }
  for (const rp of t.restorePoints) {
    if (!used.has(rp.id)) out.push({ time: rp.createdAt, rp });
  }
  const ms = (x: Item) => toDate(x.time)?.getTime() ?? 0;
  return out.sort((a, b) => ms(b) - ms(a));
}

interface Pending {
  rp: RestorePoint;
  force: boolean;
}

export function TimelineView({ status, repo, highlight }: { status: Status; repo: string; highlight?: string }) {
  const [input, setInput] = useState(repo);
  const [known, setKnown] = useState<Record<string, string>>({});
  const [timeline, setTimeline] = useState<Timeline | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [dialog, setDialog] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const [conflict, setConflict] = useState<{ rp: RestorePoint; message: string } | null>(null);
  const [result, setResult] = useState<{ rp: RestorePoint; result: RestoreResult } | null>(null);

  // Repositories Sluice has seen proposals for are the useful choices.
  useEffect(() => {
    api.history({ limit: 500 }).then(
      (cards) => setKnown(Object.fromEntries(cards.map((c) => [c.repo, c.repoName]))),
      () => setKnown({}),
    );
  }, []);

  const load = useCallback(async (path: string) => {
    if (!path) return;
    setLoading(true);
    setError(null);
    try {
      setTimeline(await api.timeline(path));
    } catch (e) {
      setTimeline(null);
      setError(errorMessage(e));
    } finally {
      setLoading(false);
    }
  }, []);

  useEffect(() => {
    setInput(repo);
    setConflict(null);
    setResult(null);
    if (repo) void load(repo);
    else setTimeline(null);
  }, [repo, load]);

  useEffect(() => {
    if (highlight && timeline) document.getElementById(`rp-${highlight}`)?.scrollIntoView?.({ block: "center" });
  }, [highlight, timeline]);

  async function restore(p: Pending) {
    setBusy(true);
    setError(null);
    try {
      const r = await api.restore({ repo: timeline?.repo || repo, restorePoint: p.rp.id, force: p.force });
      setDialog(null);
      setConflict(null);
      setResult({ rp: p.rp, result: r });
      void load(repo);
    } catch (e) {
      setDialog(null);
      if (e instanceof ApiError && e.code === "restore_conflict" && !p.force) {
        setConflict({ rp: p.rp, message: e.message });
      } else {
        setError(errorMessage(e));
      }
    } finally {
      setBusy(false);
    }
  }

  const list = useMemo(() => (timeline ? items(timeline) : []), [timeline]);
  const choices = Object.entries(known).sort((a, b) => a[1].localeCompare(b[1]));

  return (
    <section aria-labelledby="timeline-title">
      <h1 id="timeline-title">Safety timeline</h1>
      <p className="muted">
        Before every change it makes, Sluice records where the refs it touches pointed (and the working tree, when the
        change touches it). Restore puts them back.
      </p>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const path = input.trim();
          if (path === repo) void load(path);
          else navigate("timeline", undefined, { repo: path });
        }}
      >
        <label className="field grow">
          <span>Repository</span>
          <input
            className="timeline-repo"
            list="timeline-repos"
            placeholder={status.allowedRoots[0] ? `${status.allowedRoots[0]}/…` : "/path/to/repository"}
            value={input}
            onChange={(e) => setInput(e.target.value)}
          />
          <datalist id="timeline-repos">
            {choices.map(([path]) => (
              <option key={path} value={path} />
            ))}
            {status.allowedRoots.map((r) => (
              <option key={`root:${r}`} value={r} />
            ))}
          </datalist>
        </label>
        <button type="submit" className="primary" disabled={!input.trim() || loading}>
          {loading ? "Loading…" : "Show"}
        </button>
      </form>
      {!repo && choices.length > 0 && (
        <div className="chips" aria-label="Repositories with proposals">
          {choices.map(([path, name]) => (
            <a key={path} className="chip" href={href("timeline", undefined, { repo: path })} title={path}>
              {name}
            </a>
          ))}
        </div>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
      {conflict && (
        <div className="panel warn restore-conflict" role="alert">
          <strong>The repository moved on since this restore point.</strong>
          <p>{conflict.message}</p>
          <div className="actions">
            <button type="button" onClick={() => setConflict(null)}>
              Leave it
            </button>
            <button
              type="button"
              className="primary danger restore-anyway"
              onClick={() => setDialog({ rp: conflict.rp, force: true })}
            >
              Restore anyway…
            </button>
          </div>
        </div>
      )}
      {result && (
        <div className="panel ok restore-result" role="status">
          <strong>Restored: {result.rp.label}.</strong>
          <ul className="plain">
            {result.result.restored.map((r) => (
              <li key={r.ref}>
                {shortRef(r.ref)}: <Sha value={r.from} /> → <Sha value={r.to} />
              </li>
            ))}
            {result.result.restored.length === 0 && <li className="muted">No ref needed to move.</li>}
            <li>{result.result.worktreeRestored ? "The working tree was restored too." : "The working tree was not touched."}</li>
          </ul>
        </div>
      )}
      {timeline && list.length === 0 && (
        <p className="panel muted">No restore points or ref movements recorded for this repository yet.</p>
      )}
      {timeline && list.length > 0 && (
        <ol className="timeline" aria-label={`Timeline of ${timeline.repo}`}>
          {list.map((it, i) =>
            it.rp ? (
              <li
                key={`rp-${it.rp.id}`}
                id={`rp-${it.rp.id}`}
                className={`tl-item rp${highlight === it.rp.id ? " highlight" : ""}`}
              >
                <div className="tl-head">
                  <Time at={it.time} />
                  <span className="badge">restore point</span>
                  <span>
                    <strong className="rp-label">{it.rp.label}</strong>
                    {it.rp.proposalId && (
                      <>
                        {" "}
                        (<a href={href("proposal", it.rp.proposalId)}>{it.rp.proposalId}</a>)
                      </>
                    )}
                  </span>
                  <button type="button" className="restore" onClick={() => setDialog({ rp: it.rp!, force: false })}>
                    Restore…
                  </button>
                </div>
                <ul className="plain refs">
                  {it.rp.refs.map((r) => (
                    <li key={r.ref}>
                      <span title={r.ref}>{shortRef(r.ref)}</span> at <Sha value={r.sha} />
                    </li>
                  ))}
                  {it.rp.hasWorktreeSnapshot && <li className="muted">with a snapshot of the index and working tree</li>}
                </ul>
                {it.ev?.message && <p className="muted">{it.ev.message}</p>}
              </li>
            ) : (
              <EventRow key={`ev-${i}`} ev={it.ev!} />
            ),
          )}
        </ol>
      )}
      {dialog && (
        <ConfirmDialog
          title={dialog.force ? "Restore anyway?" : "Restore this point?"}
          confirmLabel={dialog.force ? "Restore anyway" : "Restore"}
          confirmClass="confirm-restore"
          danger
          busy={busy}
          onCancel={() => setDialog(null)}
          onConfirm={() => void restore(dialog)}
        >
          <p>
            <strong>{dialog.rp.label}</strong>
          </p>
          {dialog.force && (
            <p>
              Commits made on these refs after the restore point will no longer be on them
              {dialog.rp.hasWorktreeSnapshot ? ", and changes made in the working tree since may be overwritten" : ""}.
            </p>
          )}
          <RestoreChanges repo={timeline?.repo || repo} rp={dialog.rp} />
        </ConfirmDialog>
      )}
    </section>
  );
}

// What a restore would change, compared with the repository now, read
// when the dialog opens.
function RestoreChanges({ repo, rp }: { repo: string; rp: RestorePoint }) {
  const [preview, setPreview] = useState<RestorePreview | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    api.restorePreview(repo, rp.id).then(
      (p) => live && setPreview(p),
      (e) => live && setError(errorMessage(e)),
    );
    return () => {
      live = false;
    };
  }, [repo, rp.id]);
  if (error) return <ErrorBox>{error}</ErrorBox>;
  if (!preview) return <p className="muted">Comparing with the repository now…</p>;
  const moving = preview.refs.filter((r) => r.now !== r.after);
  return (
    <div className="restore-changes">
      <p title={repo}>Compared with the repository now:</p>
      <ul className="plain">
        {moving.map((r) => (
          <li key={r.ref} className="restore-change">
            <span title={r.ref}>{shortRef(r.ref)}</span>{" "}
            {!r.after ? (
              <>
                is deleted (it is at <Sha value={r.now ?? ""} /> now)
              </>
            ) : !r.now ? (
              <>
                is created again at <Sha value={r.after ?? ""} />
              </>
            ) : (
              <>
                moves from <Sha value={r.now} /> back to <Sha value={r.after} />
                {r.leaving > 0 && <>: {r.leaving === 1 ? "1 commit leaves it" : `${r.leaving} commits leave it`}</>}
              </>
            )}
          </li>
        ))}
        {moving.length === 0 && <li className="muted">No ref moves: they are where the restore point has them.</li>}
        {preview.worktree && <li>The index and working tree go back to the snapshot.</li>}
      </ul>
      {preview.conflicts.length > 0 && (
        <>
          <p>Changed since, and overwritten by a restore:</p>
          <ul className="plain restore-conflicts">
            {preview.conflicts.map((c, i) => (
              <li key={i}>{c.message}</li>
            ))}
          </ul>
        </>
      )}
      {preview.note && <p className="muted">{preview.note}</p>}
    </div>
  );
}

function EventRow({ ev }: { ev: TimelineEvent }) {
  return (
    <li className="tl-item move">
      <div className="tl-head">
        <Time at={ev.time} />
        <span className="badge">{ev.kind === "ref_move" ? "ref moved" : ev.kind.replace(/_/g, " ")}</span>
        {ev.ref && <span title={ev.ref}>{shortRef(ev.ref)}</span>}
        {(ev.from || ev.to) && (
          <span>
            {ev.from ? <Sha value={ev.from} /> : <span className="muted">created</span>} →{" "}
            {ev.to ? <Sha value={ev.to} /> : <span className="muted">deleted</span>}
          </span>
        )}
      </div>
      {ev.message && <p className="muted">{ev.message}</p>}
    </li>
  );
}
