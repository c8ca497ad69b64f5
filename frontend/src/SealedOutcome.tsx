// A proposal's sealed outcome in words: what is lost (first, in red), what
// lands or is sent, which refs move, and every file with its status, mode
// and size. The diff below it is the same outcome line by line.
import { useState } from "react";
import type { CommitList, Evidence, FileChange, OutcomeFacts, RefMove, Sealed, Tense, WorkspaceRun } from "./api";
import { Sha } from "./bits";
import { shortRef } from "./format";
import { showInvisible } from "./InvisibleChars";
import { count, lossHeading, lostCommitsWhat, say, workKinds, workSentence } from "./outcomeWords";

const fileLimit = 20;

/**
 * What in the repository makes the person's own git (git log, git show)
 * show other objects or history than the ones the card shows and that
 * land: replace refs, grafts.
 */
function Indirections({ notes }: { notes?: string[] }) {
  if (!notes || notes.length === 0) return null;
  return (
    <ul className="stale plain indirections" role="note" aria-label="Your git shows this repository otherwise">
      {notes.map((n) => (
        <li key={n}>{n}</li>
      ))}
    </ul>
  );
}

/**
 * facts: what the app says of the operation, from its definition (whether
 * it deletes branches, replays or sends the commits listed, writes a
 * confined session's checkout). confined: the proposal came from a
 * confined session, whose commit also writes the person's checkout
 * (sealed.checkout) except the files they have work of their own in
 * (sealed.keeps). tense: the card's (what will be lost, what was, what
 * would have been); future when not given.
 */
export function SealedOutcome({
  sealed,
  facts,
  confined,
  tense,
}: {
  sealed: Sealed;
  facts: OutcomeFacts;
  confined?: boolean;
  tense?: Tense;
}) {
  if (sealed.steps && sealed.steps.length > 0) {
    return (
      <>
        <Indirections notes={sealed.indirections} />
        <ol className="sealed-steps">
          {sealed.steps.map((s, i) => (
            <li key={i}>
              <SealedOutcome sealed={s} facts={facts} confined={confined} tense={tense} />
            </li>
          ))}
        </ol>
      </>
    );
  }
  const loses = sealed.effect === "loses";
  const work = workKinds(sealed);
  const losses = work.length > 0 || (sealed.lost?.count ?? 0) > 0;
  // A deletion of branches deletes only those whose commits are all on
  // another branch (the others stay, in keeps): it loses nothing, and
  // says so.
  const deletesOnly = facts.deletesBranches && !losses && (sealed.moves ?? []).some((m) => m.delete);
  const checkout = sealed.checkout ?? [];
  const keeps = sealed.keeps ?? [];
  // A confined session's commit names, in keeps, the files of the
  // checkout it leaves as they are: they belong with the ones it writes.
  const checkoutShown = checkout.length > 0 || (!!confined && keeps.length > 0 && facts.writesCheckoutWhenConfined);
  return (
    <div className="sealed">
      <Indirections notes={sealed.indirections} />
      {losses && (
        <section className="losses" aria-label="What is lost">
          <h3>{lossHeading(tense)}</h3>
          {sealed.lost && sealed.lost.count > 0 && (
            <Commits list={sealed.lost} what={lostCommitsWhat(sealed.lost.count, tense)} className="lost-commits" />
          )}
          {work.map((k) => (
            <p key={k.kind} className={`lost-work lost-${k.kind}`} data-count={k.paths.length}>
              {workSentence(k, tense)}: <Paths paths={k.paths} />
            </p>
          ))}
        </section>
      )}
      {deletesOnly && (
        <p className="nothing-lost" role="note">
          {say(
            tense,
            "Nothing is lost: every commit on these branches is in the checked-out branch or in an upstream.",
            "Nothing was lost: every commit on these branches was in the checked-out branch or in an upstream.",
            "Nothing would have been lost: every commit on these branches was in the checked-out branch or in an upstream.",
          )}
        </p>
      )}
      {sealed.commits && sealed.commits.count > 0 && (
        <Commits list={sealed.commits} what={commitsWhat(facts, sealed.commits.count, tense)} className="incoming-commits" />
      )}
      {sealed.kept && sealed.kept.length > 0 && (
        <p className="kept">
          {count(sealed.kept.length, "file")}{" "}
          {say(
            tense,
            sealed.kept.length === 1 ? "leaves the branch and stays" : "leave the branch and stay",
            "left the branch and stayed",
            "would have left the branch and stayed",
          )}{" "}
          in the working tree, uncommitted:{" "}
          <Paths paths={sealed.kept.map((f) => f.path)} />
        </p>
      )}
      {sealed.fastForward && (
        <p className="ff">
          {facts.replaysCommits
            ? say(
                tense,
                "Fast-forward: the branch only moves forward; no commit is rewritten.",
                "Fast-forward: the branch only moved forward; no commit was rewritten.",
                "Fast-forward: the branch would only have moved forward; no commit would have been rewritten.",
              )
            : say(
                tense,
                "Fast-forward: no new commit is made.",
                "Fast-forward: no new commit was made.",
                "Fast-forward: no new commit would have been made.",
              )}
        </p>
      )}
      {sealed.moves && sealed.moves.length > 0 && <Moves moves={sealed.moves} />}
      {checkoutShown && <Checkout writes={checkout} keeps={keeps} />}
      {!checkoutShown && keeps.length > 0 && (
        <p className="keeps">
          Left alone: <Paths paths={keeps} />
        </p>
      )}
      {sealed.files && sealed.files.length > 0 && <Files files={sealed.files} loses={loses} />}
      {sealed.after && (
        <p className="muted sealed-ids">
          Sealed tree <Sha value={sealed.after} what="sealed tree" />
          {sealed.before && (
            <>
              {" "}
              from <Sha value={sealed.before} what="tree before" />
            </>
          )}
        </p>
      )}
    </div>
  );
}

/**
 * What approving a confined session's commit does to the person's own
 * checkout: the files it writes with the committed content, and the ones
 * it leaves as they are because the person has work of their own there.
 */
function Checkout({ writes, keeps }: { writes: string[]; keeps: string[] }) {
  return (
    <section className="checkout" aria-label="Your checkout">
      <h3>Your checkout</h3>
      {writes.length > 0 && (
        <p className="checkout-writes">
          Approving writes {writes.length === 1 ? "this file" : `these ${writes.length} files`} of your checkout with the
          committed content: <Paths paths={writes} />
        </p>
      )}
      {keeps.length > 0 && (
        <div className="checkout-keeps">
          <p>Not written, because you have work of your own in {keeps.length === 1 ? "it" : "them"}:</p>
          <ul className="plain">
            {keeps.map((k) => (
              <li key={k}>
                <Kept entry={k} />
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}

/** A keeps entry, "path: why", with the path set apart. */
function Kept({ entry }: { entry: string }) {
  const i = entry.indexOf(": ");
  if (i <= 0) return <>{entry}</>;
  return (
    <>
      <code>{entry.slice(0, i)}</code>: {entry.slice(i + 2)}
    </>
  );
}

function commitsWhat(facts: OutcomeFacts, n: number, tense?: Tense): string {
  const commits = n === 1 ? "commit" : "commits";
  if (facts.sendsCommits) return `${commits} the remote ${say(tense, "receives", "received", "would have received")}`;
  if (facts.replaysCommits) return `${commits} ${say(tense, "replayed", "replayed", "that would have been replayed")} onto the new base`;
  return `${commits} ${say(tense, "brought in", "brought in", "that would have been brought in")}`;
}

function Commits({ list, what, className }: { list: CommitList; what: string; className: string }) {
  return (
    <div className={className}>
      <p>
        <strong>{list.count.toLocaleString("en-US")}</strong> {what}
        {list.count > list.commits.length ? ` (the first ${list.commits.length} are listed)` : ""}:
      </p>
      <ul className="plain commits">
        {list.commits.map((c) => (
          <li key={c.sha}>
            <Sha value={c.sha} what="commit" /> {c.subject}
          </li>
        ))}
      </ul>
    </div>
  );
}

function Moves({ moves }: { moves: RefMove[] }) {
  return (
    <ul className="plain moves">
      {moves.map((m, i) => (
        <li key={i}>
          {m.repo && <span className="muted">{m.repo.split("/").pop()} </span>}
          <span title={m.ref}>{shortRef(m.ref)}</span>:{" "}
          {m.from ? <Sha value={m.from} what={`${m.ref} before`} /> : <span className="muted">new</span>} →{" "}
          {m.to ? (
            <Sha value={m.to} what={`${m.ref} after`} />
          ) : m.delete ? (
            <span className="deleted">deleted</span>
          ) : (
            <span className="muted">the commit made on approval</span>
          )}
        </li>
      ))}
    </ul>
  );
}

function Paths({ paths }: { paths: string[] }) {
  const [all, setAll] = useState(false);
  const shown = all ? paths : paths.slice(0, 20);
  return (
    <>
      {shown.map((p, i) => (
        <span key={p}>
          {i > 0 && ", "}
          <code>{p}</code>
        </span>
      ))}
      {paths.length > shown.length && (
        <>
          {" "}
          <button type="button" className="link" onClick={() => setAll(true)}>
            and {paths.length - shown.length} more
          </button>
        </>
      )}
    </>
  );
}

const statusWord: Record<FileChange["status"], string> = {
  added: "new",
  modified: "changed",
  deleted: "deleted",
  renamed: "renamed",
  type_changed: "type changed",
};

export function humanBytes(n: number): string {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KB`;
  return `${n} B`;
}

function Files({ files, loses }: { files: FileChange[]; loses: boolean }) {
  const [all, setAll] = useState(false);
  const shown = all ? files : files.slice(0, fileLimit);
  return (
    <>
      <table className={`sealed-files${loses ? " loses" : ""}`}>
        <tbody>
          {shown.map((f) => (
            <tr key={f.path} className={`file-${f.status}`} data-path={f.path}>
              <td className="status">{loses && f.status === "deleted" ? "lost" : statusWord[f.status]}</td>
              <td className="path">
                <code>{f.path}</code>
                {f.oldPath && (
                  <span className="muted">
                    {" "}
                    from <code>{f.oldPath}</code>
                  </span>
                )}
              </td>
              <td className="flags">
                {f.mode === "100755" && f.oldMode !== "100755" && <span className="flag exec">executable</span>}
                {f.mode === "120000" && <span className="flag symlink">symlink</span>}
                {f.mode === "160000" && <span className="flag gitlink">submodule</span>}
                {f.binary && <span className="flag binary">binary {humanBytes(f.size)}</span>}
              </td>
              <td className="size muted">{!f.binary && f.status !== "deleted" ? humanBytes(f.size) : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {files.length > shown.length && (
        <button type="button" className="link" onClick={() => setAll(true)}>
          Show all {count(files.length, "file")}
        </button>
      )}
    </>
  );
}

function runFailed(r: WorkspaceRun): boolean {
  return r.exitCode !== 0 || r.oomKilled || (r.tests?.failed ?? 0) > 0;
}

/**
 * The runs of the workspace behind a proposal, as Sluice recorded them:
 * apart from the agent's words, red when any run failed, each run's
 * output one click away.
 */
export function EvidenceBlock({ evidence }: { evidence: Evidence }) {
  const last = evidence.runs[evidence.runs.length - 1];
  return (
    <section
      className={`evidence${evidence.failed ? " failed" : ""}`}
      aria-label="Workspace evidence"
      data-failed={evidence.failed ? "true" : undefined}
    >
      <h3>Recorded by Sluice: workspace {evidence.workspaceId}</h3>
      {evidence.runs.length === 0 && <p>No command was run in the workspace.</p>}
      {last && (
        <p className="evidence-summary">
          {evidence.runs.length} run(s); the last {runFailed(last) ? "failed" : "passed"}
          {evidence.failedRuns > 0 ? ` (${evidence.failedRuns} failed in all)` : ""}.
        </p>
      )}
      <ol className="runs">
        {evidence.runs.map((r, i) => (
          <li key={i} className={runFailed(r) ? "run failed" : "run"}>
            <code>{showInvisible(r.argv.join(" "))}</code> exited {r.exitCode} in {(r.durationMs / 1000).toFixed(1)}s
            {r.oomKilled && " (killed: out of memory)"}
            {r.tests && (
              <span className="tests">
                {" "}
                · tests: {r.tests.passed} passed, {r.tests.failed} failed, {r.tests.skipped} skipped ({r.tests.format})
              </span>
            )}
            {r.truncated && <span className="muted"> · output cut at the limit</span>}
            {(r.stdout || r.stderr) && (
              <details>
                <summary>Output</summary>
                {r.stdout && <pre className="run-output">{showInvisible(r.stdout)}</pre>}
                {r.stderr && <pre className="run-output stderr">{showInvisible(r.stderr)}</pre>}
              </details>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}
