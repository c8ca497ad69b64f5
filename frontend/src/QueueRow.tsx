// One line of the Pending queue, and the words it is made of: a subject a
// person recognises (the commit message, else the branch, else the first
// words of the agent's reason), where and who, how many files, how long it
// has waited, and marks for what needs care (stale, colliding).
import { RiskBadge, StateBadge, useNow } from "./bits";
import type { Card } from "./api";
import { agentLabel, formatDuration, toDate } from "./format";

/** How many words of the reason a subject takes when nothing better names the change. */
const reasonWords = 8;

function firstLine(s: unknown): string {
  return typeof s === "string" ? (s.split("\n").find((l) => l.trim() !== "") ?? "").trim() : "";
}

/** The commit message's first line the arguments (or a plan's steps) carry. */
function messageOf(args: Record<string, unknown> | null): string {
  if (!args) return "";
  const m = firstLine(args.message);
  if (m) return m;
  if (Array.isArray(args.steps)) {
    for (const s of args.steps as { args?: Record<string, unknown> }[]) {
      const sm = messageOf(s?.args ?? null);
      if (sm) return sm;
    }
  }
  return "";
}

/** The first words of the reason, cut with an ellipsis when there is more. */
function reasonStart(reason: string): string {
  const words = firstLine(reason).split(/\s+/).filter(Boolean);
  if (words.length === 0) return "";
  const cut = words.slice(0, reasonWords).join(" ");
  return words.length > reasonWords || firstLine(reason) !== reason.trim() ? `${cut}…` : cut;
}

/**
 * What a row is called: the commit message's first line, else the branch
 * the operation is of (the app says which, from the operation's
 * definition), else the first words of the agent's reason (eight rows
 * that all read "Branch in docs-site" tell a person nothing).
 */
export function subjectOf(c: Card): string {
  const commits = c.sealed?.commits;
  const sealedSubject = commits && commits.count === 1 ? firstLine(commits.commits[0]?.subject) : "";
  return messageOf(c.args) || sealedSubject || c.subjectBranch.trim() || reasonStart(c.reason) || c.label;
}

/** The files a card changes, from its sealed outcome when it has one; null when they are not known before it runs. */
export function filesOf(c: Card): string[] | null {
  if (c.sealed?.files) return c.sealed.files.map((f) => f.path);
  return c.filesKnown ? c.files : null;
}

export function filesWords(c: Card): string {
  const f = filesOf(c);
  if (f === null) return "files unknown";
  return `${f.length} file${f.length === 1 ? "" : "s"}`;
}

/**
 * Whether a card matches what the person typed in the search box: every
 * word must be found in its subject, repository, agent, operation or file
 * names (case does not matter).
 */
export function matchesSearch(c: Card, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const hay = [subjectOf(c), c.repoName, c.repo, c.agent, c.label, ...(filesOf(c) ?? c.files)].join("\n").toLowerCase();
  return words.every((w) => hay.includes(w));
}

const goneWords: Record<string, string> = {
  expired: "expired before anyone decided",
  cancelled: "withdrawn by the agent before anyone decided",
};

/** One line of the queue; a button that opens the card. */
export function QueueRow({
  card: c,
  open,
  stale,
  staleWhy,
  onOpen,
}: {
  card: Card;
  open: boolean;
  stale: boolean;
  staleWhy?: string;
  onOpen: () => void;
}) {
  const now = useNow(15_000);
  const created = toDate(c.createdAt)?.getTime() ?? now;
  const waitingCard = c.state === "pending";
  const outcomeStale = c.outcome?.code === "stale_base";
  const subject = subjectOf(c);
  return (
    <button
      type="button"
      className="queue-row"
      aria-expanded={open}
      aria-controls={open ? `card-${c.id}` : undefined}
      onClick={onOpen}
    >
      <span className="q-subject" title={subject}>
        {subject}
        <span className="visually-hidden">,</span>
      </span>{" "}
      <span className="q-what">
        <span className="op">{c.label}</span> <span className="muted">in</span> <span className="repo">{c.repoName}</span>
      </span>
      <span className="q-sep muted" aria-hidden="true">·</span>{" "}
      <span className="q-agent">{agentLabel(c.agent)}</span>
      <span className="q-sep muted" aria-hidden="true">·</span>{" "}
      <span className="q-files muted">{filesWords(c)}</span>{" "}
      <span className="q-marks">
        <RiskBadge risk={c.risk} />
        {!waitingCard && <StateBadge state={c.state} />}
        {waitingCard && (stale || outcomeStale) && (
          <span className="badge warn mark-stale" title={staleWhy || undefined}>
            stale
          </span>
        )}
        {c.collisions?.length > 0 && (
          <span className="badge warn mark-collision" title={`Also touched by ${c.collisions.map((x) => x.agent).join(", ")}`}>
            collides ×{c.collisions.length}
          </span>
        )}
      </span>{" "}
      <span className="q-age muted">{formatDuration(Math.max(0, now - created)).split(" ")[0]} ago</span>
      {goneWords[c.state] && " "}
      {goneWords[c.state] && <span className="q-gone">{goneWords[c.state]}</span>}
    </button>
  );
}
