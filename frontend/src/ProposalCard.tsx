// One proposal as a card: what would change, where, who asked and why,
// what it was pinned to, and the whole diff, with approve and reject. A
// decision is bound to the digest shown here; destructive changes need
// the confirmation word typed first.
import { useEffect, useImperativeHandle, useMemo, useRef, useState, type ReactNode, type Ref } from "react";
import { api, ApiError, type Card, type Preflight } from "./api";
import { Countdown, ErrorBox, RiskBadge, Sha, StateBadge, Time, errorMessage } from "./bits";
import { DiffView } from "./DiffView";
import { sealedDiffChanges } from "./FileTree";
import { agentLabel, shortRef } from "./format";
import { href } from "./route";
import { InvisibleContent } from "./InvisibleChars";
import { LeftLocks } from "./LeftLocks";
import { EvidenceBlock, SealedOutcome } from "./SealedOutcome";
import { sealedDiffFiles } from "./outcomeWords";
import { TrustSimilar } from "./TrustSimilar";
import { ReviewNotes, SentNotes, clearReviewNotes, notesToSend } from "./ReviewNotes";
import { ResealNote } from "./ResealNote";

/** How the refusal of a to approve a stale card begins. */
const staleRefusal = "This card cannot be approved: it is stale";

/** How often a pending card re-checks what it was sealed against. */
const preflightEveryMs = 4000;

/**
 * Re-checks a pending card's pins and sealed inputs, and what else would
 * keep it from landing: when it opens, when the window regains focus, and
 * every few seconds while it is pending (or failed and retryable).
 */
function usePreflight(card: Card): Preflight | null {
  // Each answer is for the digest it was asked about: a card re-sealed on
  // a moved branch is checked again at once, and what was said of the
  // digest before is never shown of the new one.
  const [answer, setAnswer] = useState<{ digest: string; pf: Preflight } | null>(null);
  const pending = card.state === "pending" || card.retryable;
  const digest = card.digest;
  useEffect(() => {
    if (!pending) return;
    let live = true;
    let inFlight = false;
    const check = async () => {
      if (inFlight) return;
      inFlight = true;
      try {
        const r = await api.preflight(card.id);
        if (live) setAnswer({ digest, pf: r });
      } catch {
        // A failed check says nothing about staleness; the next one runs.
      } finally {
        inFlight = false;
      }
    };
    void check();
    const t = setInterval(() => void check(), preflightEveryMs);
    const onFocus = () => void check();
    window.addEventListener("focus", onFocus);
    return () => {
      live = false;
      clearInterval(t);
      window.removeEventListener("focus", onFocus);
    };
  }, [card.id, digest, pending]);
  return answer?.digest === digest ? answer.pf : null;
}

function describePreflight(pf: Preflight): string {
  const parts: string[] = [];
  for (const m of pf.moved) {
    const name = m.ref.replace(/^refs\/(heads|remotes)\//, "");
    parts.push(m.to ? `${name} moved from ${m.from?.slice(0, 12)} to ${m.to.slice(0, 12)}` : `${name} is gone`);
  }
  for (const c of pf.changed) parts.push(`${c} changed since it was proposed`);
  return parts.join("; ");
}

/** What the Pending screen's keyboard shortcuts do to the open card. */
export interface CardActions {
  /** Approves, or for a destructive card focuses the confirmation input. */
  approveShortcut(): void;
  /** Whether approveShortcut would send an approval now. */
  approvable(): boolean;
  /** Sends a stale card back to the agent; on a card that is not stale, says so. */
  sendBackShortcut(): void;
  /**
   * The note typed so far when the card can be rejected now, else null.
   * The queue sends the reject itself, after its undo window.
   */
  rejectable(): string | null;
  focus(): void;
}

interface Props {
  card: Card;
  selected?: boolean;
  onSelect?: () => void;
  /** Called with the card the server returned after a decision. */
  onDecided?: (card: Card) => void;
  /** Asks the owner to re-read the card (it changed under us). */
  onReload?: () => void;
  onDismiss?: () => void;
  /** The card opens under its queue row, which already names it. */
  underRow?: boolean;
  /** Told whether the card is stale, whenever that changes. */
  onStale?: (stale: boolean) => void;
  /**
   * Notices drawn in the decision bar, next to Approve (the Pending
   * screen's undo notice and what became of the last decision), so that
   * they are in view wherever the card is scrolled.
   */
  dock?: ReactNode;
  ref?: Ref<CardActions>;
}

const staleCodes = new Set(["digest_mismatch", "stale_base"]);

// Notes typed on cards that are not open (the queue opens one at a time)
// or not yet decided, kept for this page's life.
const drafts = new Map<string, string>();

export function ProposalCard({ card, selected, onSelect, onDecided, onReload, onDismiss, underRow, onStale, dock, ref }: Props) {
  const rootEl = useRef<HTMLElement>(null);
  const confirmEl = useRef<HTMLInputElement>(null);
  const [note, setNoteState] = useState(() => drafts.get(card.id) ?? "");
  const setNote = (v: string) => {
    setNoteState(v);
    if (v) drafts.set(card.id, v);
    else drafts.delete(card.id);
  };
  const [confirm, setConfirm] = useState("");
  const [busy, setBusy] = useState<"" | "approve" | "reject" | "retry">("");
  const [error, setError] = useState<string | null>(null);
  const [staleError, setStaleError] = useState<string | null>(null);
  // Approve waits while any part of the diff (a chunk, a jump, an image)
  // is still loading: nobody approves what is not on screen yet.
  const [diffLoading, setDiffLoading] = useState(true);
  const diffChanges = useMemo(() => sealedDiffChanges(card.sealed), [card.sealed]);
  // Why the a key did not approve, said in the decision bar, with the
  // state of the card it was said of (see refusalAt below).
  const [refusal, setRefusalState] = useState<{ text: string; at: string } | null>(null);
  const preflight = usePreflight(card);

  const pending = card.state === "pending";
  const outcomeStale = card.outcome?.code === "stale_base";
  const liveStale = pending && preflight?.stale ? describePreflight(preflight) : null;
  const staleMessage =
    liveStale ?? staleError ?? (outcomeStale ? card.outcome?.message || "The branch moved since this was proposed." : null);
  const confirmed = !card.destructive || confirm === card.confirmWord;
  // What the executor would refuse or fail now, though nothing moved: the
  // card says why, and Approve (or Retry) waits until it is fixed.
  const checked = pending || card.retryable;
  const blockers = checked ? (preflight?.blockers ?? []) : [];
  const notices = checked ? (preflight?.notices ?? []) : [];
  const blockedId = `card-${card.id}-blocked`;
  const canApprove = pending && !busy && !staleMessage && confirmed && blockers.length === 0 && !diffLoading;
  const retryStale = card.retryable && preflight?.stale ? describePreflight(preflight) : null;
  const canRetry =
    card.retryable && !busy && preflight !== null && !preflight.stale && blockers.length === 0 && confirmed;
  const canReject = pending && !busy;
  const titleId = `card-${card.id}-title`;
  const isStale = !!staleMessage;
  useEffect(() => onStale?.(isStale), [isStale, onStale]);
  // Why a did not approve holds for the card as it was: a new digest, or
  // staleness, blockers or loading that come or go, make it old news.
  // (A stale card's refusal holds while it stays stale: a check of its
  // blockers or a reload of its diff meanwhile changes nothing of it.)
  // The refusal carries the state it was said of, and is shown only in
  // that state: the effect that drops old news may run after a key press
  // that came in before it, and must not drop what that key just said.
  const refusalAt = `${card.digest}|${isStale}|${isStale ? "" : `${blockers.length}|${diffLoading}`}`;
  const setRefusal = (text: string | null) => setRefusalState(text === null ? null : { text, at: refusalAt });
  useEffect(() => setRefusalState((r) => (r && r.at !== refusalAt ? null : r)), [refusalAt]);
  const refusalText = refusal?.at === refusalAt ? refusal.text : null;

  function fail(e: unknown) {
    if (e instanceof ApiError && staleCodes.has(e.code)) {
      setStaleError(e.message);
      return;
    }
    setError(errorMessage(e));
    if (e instanceof ApiError && e.code === "confirmation_required") confirmEl.current?.focus();
    if (e instanceof ApiError && (e.code === "proposal_terminal" || e.code === "proposal_not_found")) onReload?.();
  }

  async function approve() {
    if (!canApprove) return;
    setBusy("approve");
    setError(null);
    try {
      const c = await api.approve({ id: card.id, digest: card.digest, note, confirm: card.destructive ? confirm : "" });
      onDecided?.(c);
    } catch (e) {
      fail(e);
    } finally {
      setBusy("");
    }
  }

  async function retry() {
    if (!canRetry) return;
    setBusy("retry");
    setError(null);
    try {
      const c = await api.retry({ id: card.id, digest: card.digest, note, confirm: card.destructive ? confirm : "" });
      onDecided?.(c);
    } catch (e) {
      fail(e);
    } finally {
      setBusy("");
    }
  }

  async function sendBack() {
    if (!pending || busy) return;
    setBusy("reject");
    setError(null);
    try {
      const c = await api.sendBack({ id: card.id, digest: card.digest, note });
      onDecided?.(c);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy("");
    }
  }

  async function reject() {
    if (!canReject) return;
    setBusy("reject");
    setError(null);
    try {
      const c = await api.reject({ id: card.id, digest: card.digest, note, comments: notesToSend(card.id) });
      clearReviewNotes(card.id);
      onDecided?.(c);
    } catch (e) {
      fail(e);
    } finally {
      setBusy("");
    }
  }

  useImperativeHandle(ref, () => ({
    approveShortcut() {
      if (!pending) return;
      // A key that cannot approve says why instead of doing nothing.
      if (staleMessage) {
        setRefusal(
          `${staleRefusal} (${staleMessage.replace(/\.$/, "")}). ${
            liveStale ? "Send it back (s) so that the agent proposes it again on what is there now." : ""
          }`.trim(),
        );
        return;
      }
      if (blockers.length > 0) {
        setRefusal(`This card cannot land now: ${blockers.join(" ")}`);
        return;
      }
      setRefusal(null);
      if (card.destructive) {
        confirmEl.current?.focus();
        return;
      }
      if (diffLoading) {
        setRefusal("Approve waits until the diff is on screen: it is still loading.");
        return;
      }
      void approve();
    },
    approvable() {
      return canApprove;
    },
    sendBackShortcut() {
      if (!pending || busy) return;
      if (liveStale) {
        void sendBack();
        return;
      }
      setRefusal("Send back is for a stale card; nothing this card depends on has moved.");
    },
    rejectable() {
      return canReject ? note : null;
    },
    focus() {
      rootEl.current?.focus({ preventScroll: true });
      rootEl.current?.scrollIntoView?.({ block: "start", behavior: "smooth" });
    },
  }));

  const refs = Object.entries(card.pinned?.refs ?? {});
  const otherRepos = Object.entries(card.pinned?.repos ?? {});

  // The field for the confirmation word: the Approve form and the Retry
  // form (never shown together) ask for it the same way.
  const confirmInput = (
    <input
      ref={confirmEl}
      className="confirm-input"
      autoComplete="off"
      spellCheck={false}
      value={confirm}
      aria-invalid={confirm !== "" && !confirmed}
      onChange={(e) => setConfirm(e.target.value)}
    />
  );

  return (
    <article
      id={`card-${card.id}`}
      ref={rootEl}
      className={`card${selected ? " selected" : ""}${card.destructive ? " destructive" : ""}${staleMessage ? " is-stale" : ""}`}
      data-state={card.state}
      data-stale={staleMessage ? "true" : undefined}
      aria-labelledby={titleId}
      aria-current={selected ? "true" : undefined}
      tabIndex={-1}
      onFocus={onSelect}
      onMouseDown={onSelect}
    >
      <header className="card-head">
        <h2 id={titleId} className={underRow ? "visually-hidden" : undefined}>
          <span className="op">{card.label}</span> <span className="muted">in</span>{" "}
          <span className="repo" title={card.repo}>
            {card.repoName}
          </span>
        </h2>
        <div className="card-badges">
          <RiskBadge risk={card.risk} />
          <StateBadge state={card.state} />
          {pending && <Countdown until={card.expiresAt} />}
        </div>
      </header>
      <p className="byline">
        Proposed by <strong className="agent">{agentLabel(card.agent)}</strong> · <Time at={card.createdAt} /> ·{" "}
        <a href={href("proposal", card.id)} className="muted">
          {card.id}
        </a>
      </p>
      <Confinement card={card} />
      {card.state === "expired" && (
        <p className="gone-note" role="status">
          This proposal expired at <Time at={card.expiresAt} /> before anyone decided. Nothing was changed; the agent
          can propose it again.
        </p>
      )}
      {card.state === "cancelled" && (
        <p className="gone-note" role="status">
          The agent withdrew this proposal before anyone decided. Nothing was changed.
        </p>
      )}
      {card.riskWhy && (
        <p className={`risk-why risk-${card.risk}`}>
          <span className="muted">Risk {card.risk}:</span> {card.riskWhy}
        </p>
      )}
      <blockquote className="reason">
        <span className="reason-label muted">The agent says:</span> {card.reason}
      </blockquote>
      {card.invisible && card.invisible.length > 0 && (
        <div className="stale invisible-chars" role="alert">
          <strong>Hidden characters:</strong> this proposal holds characters that change how text reads without
          showing themselves (direction overrides, zero-width characters). Each is written as ⟨U+XXXX⟩ below.
          <ul className="plain">
            {card.invisible.map((f) => (
              <li key={f.field}>
                <span className="muted">{f.field}:</span> <code>{f.shown}</code>
              </li>
            ))}
          </ul>
        </div>
      )}

      <InvisibleContent card={card} />

      <ResealNote card={card} />

      {staleMessage && (
        <div className="stale" role="alert">
          <strong>Stale:</strong> {staleMessage}
          {liveStale && (
            <>
              {" "}
              This card can no longer be approved as shown.{" "}
              <button type="button" className="send-back" disabled={!!busy} onClick={() => void sendBack()}>
                Send back to the agent
              </button>
            </>
          )}
          {!liveStale && staleError && onReload && (
            <>
              {" "}
              <button
                type="button"
                className="link"
                onClick={() => {
                  setStaleError(null);
                  onReload();
                }}
              >
                Reload card
              </button>
            </>
          )}
        </div>
      )}

      {blockers.length > 0 && (
        <div className="blocked" role="alert" id={blockedId}>
          <strong>Cannot land now:</strong>
          <ul className="plain blockers">
            {blockers.map((b) => (
              <li key={b} className="blocker">
                {b}
              </li>
            ))}
          </ul>
          {pending ? "Approve waits until this is fixed; the card stays as it is." : "Retry waits until this is fixed."}
        </div>
      )}

      {notices.length > 0 && (
        <ul className="plain preflight-notices">
          {notices.map((n) => (
            <li key={n} className="preflight-notice">
              {n}
            </li>
          ))}
        </ul>
      )}

      {pending && preflight && preflight.notes.length > 0 && (
        <ul className="plain preflight-notes">
          {preflight.notes.map((n) => (
            <li key={n} className="preflight-note">
              {n}
            </li>
          ))}
        </ul>
      )}

      {card.evidence && <EvidenceBlock evidence={card.evidence} />}

      {card.sealed && (
        <section className="outcome-block" aria-label="Sealed outcome">
          <SealedOutcome sealed={card.sealed} facts={card.opFacts} confined={!!card.origin} tense={card.tense} />
        </section>
      )}

      <dl className="facts">
        <dt>Change</dt>
        <dd>
          <ArgsSummary label={card.label} args={card.args} stepLabels={card.stepLabels} />
        </dd>
        <dt>Pinned</dt>
        <dd>
          {refs.length === 0 && <span className="muted">no refs</span>}
          <ul className="plain">
            {refs.map(([ref, sha]) => (
              <li key={ref}>
                <span title={ref}>{shortRef(ref)}</span> at <Sha value={sha} what={`SHA of ${ref}`} />
              </li>
            ))}
            {card.pinned?.worktreeFingerprint && (
              <li>
                working tree <Sha value={card.pinned.worktreeFingerprint} what="working tree fingerprint" />
              </li>
            )}
            {otherRepos.map(([repo, rs]) => (
              <li key={repo}>
                <span title={repo}>{repo.split("/").pop()}</span>:{" "}
                {Object.entries(rs).map(([ref, sha]) => (
                  <span key={ref} className="nowrap">
                    {shortRef(ref)} <Sha value={sha} what={`SHA of ${ref}`} />{" "}
                  </span>
                ))}
              </li>
            ))}
          </ul>
        </dd>
        <dt>Digest</dt>
        <dd>
          <Sha value={card.digest} short={card.shortDigest} what="digest" />
        </dd>
        {!card.sealed && (
          <>
            <dt>Files</dt>
            <dd>
              <FileList files={card.files} known={card.filesKnown} />
            </dd>
          </>
        )}
        {card.collisions?.length > 0 && (
          <>
            <dt>Collides with</dt>
            <dd>
              <ul className="plain collisions">
                {card.collisions.map((c) => (
                  <li key={c.proposalId}>
                    <a href={href("proposal", c.proposalId)}>{c.proposalId}</a> from <strong>{c.agent}</strong>, also
                    touching {c.files.join(", ")}
                  </li>
                ))}
              </ul>
            </dd>
          </>
        )}
        {card.decision && (
          <>
            <dt>Decision</dt>
            <dd className="decision">
              {card.decision.approved ? "Approved" : "Rejected"}
              {card.decision.auto ? " automatically" : ""} by{" "}
              {card.approvedByRule ? <a href={href("rules")}>rule {card.approvedByRule}</a> : card.decision.by} ·{" "}
              <Time at={card.decision.at} />
              {card.decision.note && <q className="note-text">{card.decision.note}</q>}
              <SentNotes comments={card.decision.comments} />
            </dd>
          </>
        )}
        {card.outcome && !outcomeStale && (
          <>
            <dt>Outcome</dt>
            <dd className={`outcome${card.outcome.code ? " failed" : ""}`}>
              {card.outcome.code && <code>{card.outcome.code}</code>} {card.outcome.message}{" "}
              {card.outcome.restorePoint && (
                <a href={href("timeline", undefined, { repo: card.repo, rp: card.outcome.restorePoint })}>
                  restore point {card.outcome.restorePoint}
                </a>
              )}
            </dd>
          </>
        )}
      </dl>

      {card.state === "needs_reconciliation" && <LeftLocks card={card} onChanged={onReload} />}

      <DiffView
        proposalId={card.id}
        files={sealedDiffFiles(card.sealed)}
        changes={diffChanges}
        onLoadingChange={pending ? setDiffLoading : undefined}
      />

      {pending && (
        <form
          className="decide decision-bar"
          aria-label="Decision"
          onSubmit={(e) => {
            e.preventDefault();
            void approve();
          }}
        >
          {dock && <div className="dock">{dock}</div>}
          <label className="field">
            <span>Note (optional, sent to the agent)</span>
            <textarea
              className="note-input"
              rows={2}
              maxLength={2000}
              value={note}
              onChange={(e) => setNote(e.target.value)}
            />
          </label>
          {card.destructive && (
            <label className="field confirm">
              <span id={`card-${card.id}-confirm-why`}>
                This can lose work: see what is lost above. Approve stays disabled until you type{" "}
                <code className="confirm-word">{card.confirmWord}</code>,{" "}
                {card.confirmWhat ??
                  (confirmIsBranch(card) ? "the name of the branch this rewrites" : "the name of the repository")}
                , here.
              </span>
              {confirmInput}
            </label>
          )}
          <ReviewNotes card={card} />
          {error && <ErrorBox>{error}</ErrorBox>}
          {refusalText && (
            <p className="refusal" role="alert">
              {refusalText}
            </p>
          )}
          <div className="actions">
            <button
              type="submit"
              className={`approve primary${card.destructive ? " danger" : ""}`}
              disabled={!canApprove}
              title={blockers.length > 0 ? `Cannot land now: ${blockers.join(" ")}` : undefined}
              aria-describedby={
                blockers.length > 0
                  ? blockedId
                  : card.destructive && !confirmed
                    ? `card-${card.id}-confirm-why`
                    : diffLoading
                      ? `card-${card.id}-loading`
                      : undefined
              }
            >
              {busy === "approve" ? "Approving…" : card.destructive ? "Approve destructive change" : "Approve"}
            </button>
            {diffLoading && (
              <span className="approve-wait muted" id={`card-${card.id}-loading`} role="status">
                Loading… Approve waits until the diff is on screen.
              </span>
            )}
            <button type="button" className="reject" disabled={!canReject} onClick={() => void reject()}>
              {busy === "reject" ? "Rejecting…" : "Reject"}
            </button>
            {liveStale && (
              <button type="button" className="send-back bar-send-back" disabled={!!busy} onClick={() => void sendBack()}>
                Send back
              </button>
            )}
            <TrustSimilar card={card} note={note} enabled={!busy && !staleMessage && blockers.length === 0 && !diffLoading} onDecided={onDecided} />
          </div>
        </form>
      )}
      {card.retryable && (
        <form
          className="decide retry-block"
          onSubmit={(e) => {
            e.preventDefault();
            void retry();
          }}
        >
          <p className="retry-why">
            This failed before it changed anything. Once its cause is fixed, it can run again exactly as approved.
          </p>
          {retryStale && (
            <p className="stale" role="alert">
              <strong>Stale:</strong> {retryStale}. It can no longer run as sealed: ask the agent to propose it again.
            </p>
          )}
          {card.destructive && (
            <label className="field confirm">
              <span id={`card-${card.id}-confirm-why`}>
                This can lose work: type <code className="confirm-word">{card.confirmWord}</code> to run it again.
              </span>
              {confirmInput}
            </label>
          )}
          {error && <ErrorBox>{error}</ErrorBox>}
          <div className="actions">
            <button
              type="submit"
              className="retry primary"
              disabled={!canRetry}
              title={blockers.length > 0 ? `Cannot land now: ${blockers.join(" ")}` : undefined}
              aria-describedby={blockers.length > 0 ? blockedId : undefined}
            >
              {busy === "retry" ? "Retrying…" : preflight === null ? "Retry (checking…)" : "Retry"}
            </button>
          </div>
        </form>
      )}
      {!pending && onDismiss && (
        <div className="actions">
          <button type="button" className="dismiss" onClick={onDismiss}>
            Dismiss
          </button>
        </div>
      )}
    </article>
  );
}

/**
 * How the agent ran, in one line near its name: confined in a session
 * Sluice started, or as the person's own account. The app words it from
 * the credential the proposal came with, never from the agent.
 */
function Confinement({ card }: { card: Card }) {
  const confined = !!card.origin;
  return (
    <p
      id="card-confinement"
      className={`confinement${confined ? " confined" : " unconfined"}`}
      data-confined={confined ? "true" : "false"}
    >
      {confined ? (
        <span className="badge confined">Confined</span>
      ) : (
        <span className="badge warn">
          <span aria-hidden="true">⚠ </span>Not confined
        </span>
      )}
      <span className="visually-hidden">:</span>{" "}
      <span className="confinement-text">{card.confinement}</span>
    </p>
  );
}

/** Whether the confirmation word is the one branch the proposal pinned (else it is the operation's name). */
function confirmIsBranch(card: Card): boolean {
  return !!card.confirmWord && Object.prototype.hasOwnProperty.call(card.pinned?.refs ?? {}, `refs/heads/${card.confirmWord}`);
}

const fileListLimit = 25;

function FileList({ files, known }: { files: string[]; known: boolean }) {
  const [all, setAll] = useState(false);
  if (!known) {
    return (
      <span className="muted">
        {files.length > 0 ? `${files.join(", ")}; the rest ` : ""}unknown until executed
      </span>
    );
  }
  if (files.length === 0) return <span className="muted">none</span>;
  const shown = all ? files : files.slice(0, fileListLimit);
  return (
    <>
      <ul className="plain files">
        {shown.map((f) => (
          <li key={f}>
            <code>{f}</code>
          </li>
        ))}
      </ul>
      {files.length > shown.length && (
        <button type="button" className="link" onClick={() => setAll(true)}>
          Show all {files.length} files
        </button>
      )}
    </>
  );
}

// The op's arguments in words. Patches are in the diff; plans list their
// steps, each under the label the app gives it (stepLabels, in order).
function ArgsSummary({
  label,
  args,
  stepLabels,
}: {
  label: string;
  args: Record<string, unknown> | null;
  stepLabels?: string[];
}) {
  if (!args) return <span className="muted">{label}</span>;
  if (Array.isArray(args.steps)) {
    return (
      <ol className="steps">
        {(args.steps as { args: Record<string, unknown> }[]).map((s, i) => {
          const stepLabel = stepLabels?.[i] ?? "";
          return (
            <li key={i}>
              <strong>{stepLabel}</strong> <ArgsSummary label={stepLabel} args={s.args} />
            </li>
          );
        })}
      </ol>
    );
  }
  const entries = Object.entries(args).filter(([k, v]) => k !== "patch" && v !== "" && v !== false && v != null);
  if (entries.length === 0) return <span className="muted">{label}</span>;
  return (
    <span className="args">
      {entries.map(([k, v]) => (
        <span key={k} className="arg">
          <span className="muted">{k}</span>{" "}
          {typeof v === "string" && v.includes("\n") ? (
            <pre className="message">{v}</pre>
          ) : (
            <code>{v === true ? "yes" : Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v)}</code>
          )}
        </span>
      ))}
    </span>
  );
}
