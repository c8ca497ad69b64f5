// The one module that talks to Sluice's Go side. In the desktop window the
// calls go through Wails bindings (window.go.app.API); in `sluice serve`
// they go to the JSON API under /api/ with the session cookie and CSRF
// header. Components never know which.

export interface Status {
  version: string;
  ui: string;
  gatewayAddr: string;
  pending: number;
  allowedRoots: string[];
  sidecarPath: string;
  startedAt: string;
}

export type Risk = "low" | "medium" | "high" | "destructive";

/**
 * When a card's sentences are said: before the proposal runs ("future"),
 * once it landed ("past"), or when it ended without changing anything
 * ("unrealized": rejected, cancelled, expired, failed).
 */
export type Tense = "future" | "past" | "unrealized";

/** What approving a proposal loses, counted by kind from its sealed outcome. */
export interface Losses {
  /** Tracked files whose uncommitted changes are thrown away. */
  modified: number;
  /** New files (added, never committed) that are removed. */
  added: number;
  /** Files deleted without a commit that come back. */
  deleted: number;
  /** Untracked files deleted or overwritten. */
  untracked: number;
  /** Files with uncommitted work of a kind the outcome does not record (older outcomes). */
  changed: number;
  /** Commits that become unreachable. */
  commits: number;
}

export type ProposalState =
  | "pending"
  | "approved"
  | "executing"
  | "completed"
  | "failed"
  | "rejected"
  | "cancelled"
  | "expired"
  | "needs_reconciliation";

export const proposalStates: ProposalState[] = [
  "pending",
  "approved",
  "executing",
  "completed",
  "failed",
  "rejected",
  "cancelled",
  "expired",
  "needs_reconciliation",
];

export interface Pinned {
  refs: Record<string, string>;
  worktreeFingerprint?: string;
  /** The working tree a worktree proposal's new worktree would be created inside. */
  worktreeNestedIn?: string;
  repos?: Record<string, Record<string, string>>;
}

export interface Collision {
  proposalId: string;
  agent: string;
  files: string[];
}

export interface Decision {
  by: string;
  note?: string;
  approvedDigest?: string;
  approved: boolean;
  auto?: boolean;
  at: string;
  /** A rejection's notes on the proposal's files and lines. */
  comments?: ReviewComment[];
}

/**
 * A person's note on one file of a proposal (line 0) or on one line of
 * it, sent to the agent with a rejection: the line is in the new version
 * of the file (side "new"), or in the old one for a deleted line ("old").
 */
export interface ReviewComment {
  path: string;
  line: number;
  side?: "new" | "old";
  note: string;
}

export interface Outcome {
  code?: string;
  message?: string;
  restorePoint?: string;
  at: string;
}

export interface Step {
  version: number;
  from?: ProposalState;
  to: ProposalState;
  at: string;
  by?: string;
  note?: string;
}

/** One path's change between two sealed trees. */
export interface FileChange {
  status: "added" | "modified" | "deleted" | "renamed" | "type_changed";
  path: string;
  oldPath?: string;
  oldMode?: string;
  mode?: string;
  oldBlob?: string;
  blob?: string;
  size: number;
  binary?: boolean;
}

export interface CommitList {
  count: number;
  commits: { sha: string; subject: string }[];
}

export interface RefMove {
  ref: string;
  from?: string;
  to?: string;
  delete?: boolean;
  repo?: string;
}

/** The exact outcome approving a proposal produces, sealed when it arrived. */
export interface Sealed {
  ref?: string;
  /** The branch (refs/heads/…) your checkout's HEAD named when the card was made, or "HEAD" when detached: approving on another branch is refused. */
  head?: string;
  base?: string;
  before?: string;
  after?: string;
  files?: FileChange[];
  /** "loses": files are uncommitted work that is thrown away. */
  effect?: "lands" | "loses";
  kept?: FileChange[];
  commits?: CommitList;
  lost?: CommitList;
  moves?: RefMove[];
  fastForward?: boolean;
  untracked?: string[];
  uncommitted?: string[];
  keeps?: string[];
  steps?: Sealed[];
  /** A confined session's commit: files of your checkout it writes with the committed content. */
  checkout?: string[];
  /** What makes your own git show this repository otherwise (replace refs, grafts), one sentence each. */
  indirections?: string[];
  /** The uncommitted work thrown away, each file as a change from the base to the working tree (its status is the kind of work). */
  work?: FileChange[];
  /** A stacked commit: the pending proposal whose outcome this one is sealed on (it lands after that one). */
  below?: string;
}

/** What changed since a pending proposal was sealed. */
export interface Preflight {
  stale: boolean;
  moved: RefMove[];
  changed: string[];
  notes: string[];
  /** Why the executor would refuse or fail it now, each a sentence saying what to fix; Approve waits until there are none. */
  blockers: string[];
  /** What of the person's will run beside it and does not block ("your pre-commit hook will run"). */
  notices: string[];
}

/** Sluice's own record of the workspace runs behind a proposal. */
export interface Evidence {
  workspaceId: string;
  runs: WorkspaceRun[];
  /** A run failed; lastFailed says whether the last one did. */
  failed: boolean;
  failedRuns: number;
  lastFailed: boolean;
}

/** One line of content that held invisible characters. */
export interface InvisibleLine {
  /** The repository path, or a run's stream ("workspace run 2 stdout"). */
  file: string;
  /** In the new file, or the old one when removed; 0 for a run's argument. */
  line: number;
  removed?: boolean;
  /** Each character once: "right-to-left override U+202E". */
  chars: string[];
  /** The line with each invisible character written as ⟨U+XXXX⟩. */
  shown: string;
  /** "src/auth.js line 12: right-to-left override U+202E". */
  text: string;
}

/** Everything a person needs to decide on one proposal. */
export interface Card {
  id: string;
  op: string;
  agent: string;
  repo: string;
  repoName: string;
  reason: string;
  state: ProposalState;
  risk: Risk;
  /** One line saying why the risk is what it is. */
  riskWhy: string;
  destructive: boolean;
  confirmWord?: string;
  /** What the confirmation word is, in words: "the name of the branch this rewrites". */
  confirmWhat?: string;
  /** The tense riskWhy and lossWhy are said in. */
  tense: Tense;
  /** What approving loses, by kind (absent without a sealed outcome). */
  losses?: Losses;
  /** What is lost in one sentence, in the card's tense; absent when nothing is. */
  lossWhy?: string;
  sealed?: Sealed;
  evidence?: Evidence;
  digest: string;
  shortDigest: string;
  pinned: Pinned;
  args: Record<string, unknown> | null;
  files: string[];
  filesKnown: boolean;
  collisions: Collision[];
  createdAt: string;
  expiresAt: string;
  decision?: Decision;
  /** The auto-approve rule that approved it, when one did. */
  approvedByRule?: string;
  outcome?: Outcome;
  /** It failed without changing anything: Retry runs it again once the cause is fixed. */
  retryable: boolean;
  history: Step[];
  /** Fields that held invisible characters, shown escaped as ⟨U+XXXX⟩. */
  invisible?: { field: string; shown: string }[];
  /**
   * Lines of the diff's files and of the workspace runs' output that held
   * invisible characters, each with its file and line; the diff and the
   * evidence show them as ⟨U+XXXX⟩. invisibleContentMore counts the rest.
   */
  invisibleContent?: InvisibleLine[];
  invisibleContentMore?: number;
  /** git's lock files in the repositories of an interrupted execution. */
  locks?: GitLock[];
  /** Set when the agent ran in a confined session Sluice started. */
  origin?: Origin;
  /** One line on how the agent ran: confined, or as the person's account. */
  confinement: string;
  /**
   * Set for a pending proposal when what it depends on moved in a way it
   * cannot be re-sealed over; staleWhy says what.
   */
  stale: boolean;
  staleWhy?: string;
  /** The latest re-sealing on a moved base: the same changes, a new digest. */
  resealed?: Reseal;
  /** The pending proposal this one is stacked on (it lands after it). */
  below?: string;
}

/** A pending proposal re-sealed on a base that moved under it. */
export interface Reseal {
  /** The digests before and after. */
  from: string;
  to: string;
  /** What moved: the pinned refs, from and to. */
  moves: RefMove[];
  /** The branch it is now sealed on, and that branch's commit. */
  branch?: string;
  base: string;
  at: string;
}

/** The confined session a proposal came from. */
export interface Origin {
  session: string;
  runtime: string;
  network?: string[];
  /** Sluice made it of what the session left and never proposed. */
  leftover?: boolean;
}

/** A confined agent session (`sluice run`). */
export interface AgentSession {
  id: string;
  /** The client (claude-code, …) or command it runs, which its proposals are made as. */
  agent: string;
  repo: string;
  repoName: string;
  runtime: string;
  network: string[];
  /** Hosts the person allowed on top of the client's own. */
  granted: string[];
  state: "running" | "ended" | "closed";
  startedAt: string;
  endedAt?: string;
  proposals: number;
  leftover?: string;
  leftoverFiles?: number;
  leftoverState?: string;
  /** Its kept changes can be offered again as a new card. */
  canOffer: boolean;
  note?: string;
}

export interface SessionOffer {
  proposal?: string;
  files?: number;
  message: string;
}

/** One of git's lock files (NAME.lock beside the file git replaces). */
export interface GitLock {
  repo: string;
  /** Relative to the repository's common git directory. */
  path: string;
  /** As a person finds it: ".git/index.lock". */
  shown: string;
  size: number;
  modTime: string;
  what: string;
  /** A running git works in the repository: it may be its lock. */
  inUse: boolean;
  /** The interrupted execution's own git left it; it can be removed here. */
  leftover: boolean;
}

export interface LockRemoval {
  removed: GitLock[];
  kept: { lock: GitLock; reason: string }[];
}

export interface HistoryQuery {
  agent?: string;
  repo?: string;
  state?: string;
  text?: string;
  limit?: number;
}

export interface DiffChunk {
  /** A unified diff piece that ends on a line boundary. */
  text: string;
  offset: number;
  nextOffset: number;
  totalBytes: number;
  done: boolean;
  /** What the diff compares, e.g. "main…feature". */
  compared?: string;
  /** Where the diff is incomplete and why. */
  notices?: string[];
}

/** Where one file's part of a proposal's diff lies (byte offsets). */
export interface DiffFileAt {
  path: string;
  offset: number;
  end: number;
}

/** An image of a proposal's sealed outcome, its type sniffed from its bytes. */
export interface ImagePreview {
  contentType: string;
  size: number;
  dataUrl: string;
}

export type AuditEntry = Record<string, unknown>;

export interface DecisionRequest {
  id: string;
  /** The digest shown on the card: the decision is bound to it. */
  digest: string;
  note: string;
  /** The typed confirmation word (destructive proposals). */
  confirm?: string;
  /** Notes on files and lines; a rejection only. */
  comments?: ReviewComment[];
}

export interface RestorePoint {
  id: string;
  /** What the point preserves ("before commit 'Add line' by claude-code"); unique. */
  label: string;
  proposalId?: string;
  op?: string;
  createdAt: string | number;
  /** sha is left out for a ref that did not exist. */
  refs: { ref: string; sha?: string }[];
  hasWorktreeSnapshot: boolean;
  note?: string;
}

export interface TimelineEvent {
  time: string | number;
  kind: "restore_point" | "ref_move" | string;
  ref?: string;
  from?: string;
  to?: string;
  message?: string;
  restorePointId?: string;
}

export interface Timeline {
  repo: string;
  restorePoints: RestorePoint[];
  events: TimelineEvent[];
}

export interface RestoreRequest {
  repo: string;
  restorePoint: string;
  force: boolean;
}

/** What restoring a point would change, compared with the repository now. */
export interface RestorePreview {
  label: string;
  refs: { ref: string; now?: string; after?: string; leaving: number }[];
  worktree: boolean;
  conflicts: { kind: string; ref?: string; path?: string; expected?: string; current?: string; message: string }[];
  note?: string;
}

export interface RestoreResult {
  /** from or to is left out for a ref that was or is absent. */
  restored: { ref: string; from?: string; to?: string }[];
  worktreeRestored: boolean;
  /** The restore point taken just before, which undoes this restore. */
  undoPoint: string;
  note?: string;
}

export interface Settings {
  allowedRoots: string[];
  pendingExpiry: string;
  policyFile: string;
  toolsets: string[];
  notifications: boolean;
  availableToolsets: string[];
  /** Settings that only take effect after the app restarts. */
  restartRequired: string[];
  /** Settings an environment variable overrides for the running app. */
  overriddenByEnv?: string[];
}

export type SettingsInput = Omit<Settings, "availableToolsets" | "restartRequired" | "overriddenByEnv">;

export interface Client {
  client: string;
  displayName: string;
  scopes: ("user" | "project")[];
  /** Where the user-scope configuration goes. */
  path: string;
  format: "json" | "jsonc" | "toml" | "steps";
  preview: string;
  preAllows: string[];
  /** What pre-allowing means for this client, or why nothing was, in words that are true. */
  preAllowNote: string;
  /** Why Sluice cannot make this client's configuration (then the rest is empty). */
  problem?: string;
}

export interface ConnectRequest {
  client: string;
  scope: "user" | "project";
  project: string;
}

export interface ConnectResult {
  client: string;
  path: string;
  backupPath?: string;
  changed: boolean;
  preAllowed: string[];
  message: string;
}

export interface WorkspaceRun {
  id?: string;
  argv: string[];
  exitCode: number;
  oomKilled: boolean;
  durationMs: number;
  truncated: boolean;
  /** The run goes on: duration and output are those so far. */
  running?: boolean;
  /** Left running by a process that ended first: there is no result. */
  interrupted?: boolean;
  timedOut?: boolean;
  outputStopped?: boolean;
  /** How the run ended, naming the limit it hit. */
  verdict?: string;
  ociRuntime?: string;
  /** The end of the run's output, secrets redacted. */
  stdout?: string;
  stderr?: string;
  tests?: { passed: number; failed: number; skipped: number; format: string } | null;
}

export interface Workspace {
  id: string;
  state: string;
  /** The agent that created it: the only one whose workspace tools it answers. */
  owner: string;
  source: string;
  base: string;
  leaseExpiresAt: string;
  runs: WorkspaceRun[];
  /** The proposal a sealed workspace's changes came back as. */
  proposalId?: string;
}

/** What stopping or destroying a workspace did. */
export interface WorkspaceEnded {
  id: string;
  /** Run containers that were ended. */
  runsStopped: number;
  /** Its containers, files and run records are gone (verified). */
  destroyed: boolean;
}

export interface WorkspaceImage {
  id: string;
  tags: string[];
  digests: string[];
  size: number;
  /** A Unix time. */
  created?: number;
  inUse: boolean;
}

export interface WorkspaceImages {
  images: WorkspaceImage[];
  /** The image ID pinned in config.json ("" for none). */
  pinned: string;
  /** The image this app runs workspaces on. */
  running: string;
  restartRequired: boolean;
  overriddenByEnv: boolean;
}

export interface WorkspaceRuntime {
  /** workspaceRuntime in config.json ("" for the Engine's default). */
  saved: string;
  /** What this app runs workspaces with. */
  running: string;
  runtimes: { name: string; default: boolean; noNetwork: boolean }[];
  engineError?: string;
  restartRequired: boolean;
  overriddenByEnv: boolean;
}

export class ApiError extends Error {
  constructor(
    public code: string,
    message: string,
    public status = 0,
  ) {
    super(message);
  }
}

type Bound = Record<string, (...args: unknown[]) => Promise<unknown>>;

interface WailsWindow {
  go?: { app?: { API?: Bound } };
  runtime?: { EventsOn(name: string, cb: (data: unknown) => void): () => void };
}

function bound(): Bound | undefined {
  return (window as unknown as WailsWindow).go?.app?.API;
}

/** Waits briefly for the Wails bindings; false means we are in a browser. */
export async function detectDesktop(timeoutMs = 1500): Promise<boolean> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (bound()) return true;
    // The Wails runtime script sets window.go before our module runs in
    // production builds; the wait only covers slow starts.
    if (!("wails" in window) && !(window as unknown as WailsWindow).runtime) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !!bound();
}

let csrf: string | undefined;

/** What the browser says when the app does not answer at all. */
export const notRunningMessage =
  "Sluice isn't running. Start it again with `sluice serve` in a terminal (or open the Sluice app); this page reconnects by itself.";

// Whether the last request found the app answering. Only the browser can
// lose it: in the desktop window the UI and the app are one process.
let down = false;
const connectionListeners = new Set<(down: boolean) => void>();

function setDown(d: boolean) {
  if (d === down) return;
  down = d;
  connectionListeners.forEach((cb) => cb(d));
}

/** Calls cb whenever the app stops or starts answering; returns an unsubscribe. */
export function onConnection(cb: (down: boolean) => void): () => void {
  connectionListeners.add(cb);
  return () => connectionListeners.delete(cb);
}

/** True when the last request found no app answering. */
export function isDown(): boolean {
  return down;
}

function toApiError(e: unknown, status = 0): ApiError {
  if (e instanceof ApiError) return e;
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const o = e as { code: string; message: string };
    return new ApiError(o.code, o.message, status);
  }
  if (typeof e === "string") {
    try {
      return toApiError(JSON.parse(e), status);
    } catch {
      return new ApiError("internal", e, status);
    }
  }
  return new ApiError("internal", String(e), status);
}

async function http<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method === "POST") {
    if (!csrf) {
      const s = await http<{ csrf: string }>("GET", "/api/session");
      csrf = s.csrf;
    }
    headers["X-Sluice-CSRF"] = csrf;
    headers["Content-Type"] = "application/json";
  }
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    // fetch rejects only when nothing answered: the app is not running
    // (or was stopped), which a person should read in those words.
    setDown(true);
    throw new ApiError("not_running", notRunningMessage, 0);
  }
  setDown(false);
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw toApiError((data as { error?: unknown }).error ?? res.statusText, res.status);
  return data as T;
}

interface Route {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
}

/**
 * Calls the Wails binding `binding` with `args` in the desktop window, or
 * the HTTP route in the browser. The two are described separately because
 * they differ: a binding takes positional arguments, a route puts some of
 * them in the path or the query.
 */
async function call<T>(binding: string, args: unknown[], route: Route): Promise<T> {
  const b = bound();
  if (b) {
    try {
      return (await b[binding](...args)) as T;
    } catch (e) {
      throw toApiError(e);
    }
  }
  return http<T>(route.method, route.path, route.body);
}

const get = (path: string): Route => ({ method: "GET", path });
const post = (path: string, body?: unknown): Route => ({ method: "POST", path, body });
const seg = encodeURIComponent;

/** The query string of a history search; empty filters are left out. */
export function historyQueryString(q: HistoryQuery): string {
  const p = new URLSearchParams();
  for (const k of ["agent", "repo", "state", "text"] as const) {
    const v = q[k]?.trim();
    if (v) p.set(k, v);
  }
  if (q.limit && q.limit > 0) p.set("limit", String(q.limit));
  const s = p.toString();
  return s ? `?${s}` : "";
}

export interface GrantRequest {
  id: string;
  secretName?: string;
  secretValue?: string;
  revokeSecret?: string;
  egress?: string[];
}

/** What a person can change in a rule made from a card. */
export interface RuleInput {
  name: string;
  refs: string[];
  paths: string[];
  maxRisk: string;
  /** "hour", "today" or "always". */
  expiry: string;
  /** Opts in to a rule for an agent that only declared its name: it trusts any program calling itself so. */
  trustDeclaredName: boolean;
}

/**
 * The kind of identity a rule trusts an agent's name as: "session" (a
 * confined session Sluice started), "token" (an HTTP token's or
 * connector's name), "declared" (only the name a program gave itself), or
 * "" (a rule written by hand without one: any).
 */
export type RuleIdentity = "session" | "token" | "declared" | "";

/** The rule "Approve and trust similar" would save, before the person edits it. */
export interface RuleDraft extends RuleInput {
  agent: string;
  identity: RuleIdentity;
  /** The card's repository (and any other it pins): the rule approves there only. */
  repos: string[];
  ops: string[];
  fromProposal: string;
  policyFile: string;
  createsFile: boolean;
  notes: string[];
}

export interface RuleView {
  name: string;
  agent: string;
  identity: RuleIdentity;
  /** Empty (a rule written by hand) means any repository. */
  repos: string[];
  ops: string[];
  refs: string[];
  paths: string[];
  maxRisk: string;
  expiresAt: string;
  expired: boolean;
  createdAt: string;
  fromProposal: string;
  inAgentEntry: boolean;
  /** Proposals this rule approved since it was made. */
  approved: number;
  lastApproved: string;
}

export interface RulesView {
  policyFile: string;
  configured: boolean;
  rules: RuleView[];
}

export interface TrustResult {
  card: Card;
  rule: RuleView;
}

/** A proposal a rule approved without a person. */
export interface AutoApproval {
  id: string;
  rule: string;
  agent: string;
  op: string;
  repo: string;
  repoName: string;
  reason: string;
  state: ProposalState;
  at: string;
  /** Undoes it through restore; empty until it ran, and when it never did. */
  restorePoint: string;
}

export const api = {
  status: () => call<Status>("Status", [], get("/api/status")),
  ready: () => call<boolean>("Ready", [], post("/api/ready")),
  /** Tells the app which pending cards are on screen now. */
  shown: (screen: "pending" | "proposal", ids: string[]) =>
    call<boolean>("Shown", [screen, ids], post("/api/shown", { screen, ids })),

  pending: () => call<Card[]>("Pending", [], get("/api/proposals")),
  history: (q: HistoryQuery) =>
    call<Card[]>("History", [{ agent: "", repo: "", state: "", text: "", limit: 0, ...q }], get(`/api/history${historyQueryString(q)}`)),
  proposal: (id: string) => call<Card>("Proposal", [id], get(`/api/proposals/${seg(id)}`)),
  proposalDiff: (id: string, offset: number) =>
    call<DiffChunk>("ProposalDiff", [id, offset], get(`/api/proposals/${seg(id)}/diff?offset=${offset}`)),
  /** Where path's part of the diff starts, to load it however far down it is. */
  proposalDiffFile: (id: string, path: string) =>
    call<DiffFileAt>("ProposalDiffFile", [id, path], get(`/api/proposals/${seg(id)}/diff/file?path=${seg(path)}`)),
  /** A PNG, JPEG, GIF or WebP blob of the sealed outcome as a data: URL (see proposalImageSrc). */
  proposalImage: (id: string, blob: string) =>
    call<ImagePreview>("ProposalImage", [id, blob], get(`/api/proposals/${seg(id)}/image?blob=${seg(blob)}`)),
  proposalAudit: (id: string) => call<AuditEntry[]>("ProposalAudit", [id], get(`/api/proposals/${seg(id)}/audit`)),
  approve: (d: DecisionRequest) =>
    call<Card>(
      "Approve",
      [{ id: d.id, digest: d.digest, note: d.note, confirm: d.confirm ?? "" }],
      post(`/api/proposals/${seg(d.id)}/approve`, { digest: d.digest, note: d.note, confirm: d.confirm ?? "" }),
    ),
  /** Removes exactly these lock files, each only if unchanged since shown. */
  removeLocks: (id: string, locks: GitLock[]) =>
    call<LockRemoval>("RemoveLocks", [{ id, locks }], post(`/api/proposals/${seg(id)}/locks/remove`, { locks })),
  preflight: (id: string) => call<Preflight>("Preflight", [id], get(`/api/proposals/${seg(id)}/preflight`)),
  /** Runs again a failure that changed nothing, bound to the digest shown. */
  retry: (d: DecisionRequest) =>
    call<Card>(
      "Retry",
      [{ id: d.id, digest: d.digest, note: d.note, confirm: d.confirm ?? "" }],
      post(`/api/proposals/${seg(d.id)}/retry`, { digest: d.digest, note: d.note, confirm: d.confirm ?? "" }),
    ),
  sendBack: (d: DecisionRequest) =>
    call<Card>(
      "SendBack",
      [{ id: d.id, digest: d.digest, note: d.note, confirm: "" }],
      post(`/api/proposals/${seg(d.id)}/send-back`, { digest: d.digest, note: d.note }),
    ),
  reject: (d: DecisionRequest) =>
    call<Card>(
      "Reject",
      [{ id: d.id, digest: d.digest, note: d.note, comments: d.comments }],
      post(`/api/proposals/${seg(d.id)}/reject`, { digest: d.digest, note: d.note, comments: d.comments }),
    ),

  /** The rule "Approve and trust similar" would create from a pending card. */
  suggestRule: (id: string) => call<RuleDraft>("SuggestRule", [id], get(`/api/proposals/${seg(id)}/rule`)),
  trustSimilar: (d: DecisionRequest, rule: RuleInput) =>
    call<TrustResult>(
      "TrustSimilar",
      [{ id: d.id, digest: d.digest, note: d.note, confirm: "", rule }],
      post(`/api/proposals/${seg(d.id)}/trust`, { digest: d.digest, note: d.note, rule }),
    ),
  rules: () => call<RulesView>("Rules", [], get("/api/rules")),
  /** The newest proposals rules approved, newest first. */
  autoApprovals: () => call<AutoApproval[]>("AutoApprovals", [], get("/api/rules/approvals")),
  revokeRule: (agent: string, name: string) =>
    call<RulesView>("RevokeRule", [{ agent, name }], post("/api/rules/revoke", { agent, name })),

  audit: () => call<AuditView>("Audit", [], get("/api/audit")),
  /** Desktop window only, opened while `sluice serve` runs: opens that one in the browser. */
  openRunning: () => call<string>("OpenRunning", [], post("/api/open-running")),
  verifyAudit: () => call<AuditReport>("VerifyAudit", [], post("/api/audit/verify")),

  timeline: (repo: string) => call<Timeline>("Timeline", [repo], get(`/api/timeline?repo=${seg(repo)}`)),
  restorePreview: (repo: string, restorePoint: string) =>
    call<RestorePreview>(
      "RestorePreview",
      [repo, restorePoint],
      get(`/api/restore-preview?repo=${seg(repo)}&restorePoint=${seg(restorePoint)}`),
    ),
  restore: (r: RestoreRequest) => call<RestoreResult>("Restore", [r], post("/api/restore", r)),

  settings: () => call<Settings>("Settings", [], get("/api/settings")),
  saveSettings: (s: SettingsInput) => call<Settings>("SaveSettings", [s], post("/api/settings", s)),
  /** Allows agents to name repositories under dir (saved in config.json). */
  addRoot: (dir: string) => call<Settings>("AddRoot", [dir], post("/api/roots", { dir })),

  clients: () => call<Client[]>("Clients", [], get("/api/connect")),
  connect: (c: ConnectRequest) => call<ConnectResult>("Connect", [c], post("/api/connect", c)),

  workspaces: () => call<Workspace[]>("Workspaces", [], get("/api/workspaces")),
  sessions: () => call<AgentSession[]>("Sessions", [], get("/api/sessions")),
  /** Stops a running confined session; what its agent left is offered as a card. */
  stopSession: (id: string) => call<boolean>("StopSession", [id], post(`/api/sessions/${seg(id)}/stop`)),
  /** Offers an ended session's kept changes again as a new card. */
  offerSessionChanges: (id: string) =>
    call<SessionOffer>("OfferSessionChanges", [id], post(`/api/sessions/${seg(id)}/offer`)),
  workspaceImages: () => call<WorkspaceImages>("WorkspaceImages", [], get("/api/workspace-images")),
  /** Pins a local image (by name or ID) in config.json for every sidecar. */
  useWorkspaceImage: (ref: string) =>
    call<WorkspaceImages>("UseWorkspaceImage", [ref], post("/api/workspace-images", { ref })),
  workspaceRuntime: () => call<WorkspaceRuntime>("WorkspaceRuntime", [], get("/api/workspace-runtime")),
  /** Saves the OCI runtime workspace runs use ("" for the Engine's default) in config.json. */
  useWorkspaceRuntime: (name: string) =>
    call<WorkspaceRuntime>("UseWorkspaceRuntime", [name], post("/api/workspace-runtime", { name })),
  /** Ends the commands running in a workspace; the workspace and its files stay. */
  stopWorkspace: (id: string) => call<WorkspaceEnded>("StopWorkspace", [id], post(`/api/workspaces/${seg(id)}/stop`)),
  /** Removes a workspace with its files and runs; refused while its changes are an open card. */
  destroyWorkspace: (id: string) =>
    call<WorkspaceEnded>("DestroyWorkspace", [id], post(`/api/workspaces/${seg(id)}/destroy`)),
  /** A person's grant: a secret for the workspace's runs, or the hosts they may reach. */
  grantWorkspace: (g: GrantRequest) =>
    call<boolean>("GrantWorkspace", [g], post(`/api/workspaces/${encodeURIComponent(g.id)}/grants`, { ...g, id: undefined })),
};

/**
 * What an <img> shows for a blob of a proposal's sealed outcome: in the
 * browser the app's own route, which serves the bytes only as one of four
 * image types sniffed from them; in the desktop window, which has no such
 * route, the same image as a data: URL from the binding. It fails for
 * anything that is not such an image.
 */
export async function proposalImageSrc(id: string, blob: string): Promise<string> {
  if (bound()) return (await api.proposalImage(id, blob)).dataUrl;
  return `/api/proposals/${seg(id)}/blob/${seg(blob)}`;
}

export interface AuditView {
  keyId: string;
  signed: boolean;
  entries: Record<string, unknown>[];
}

export interface AuditReport {
  ok: boolean;
  problem?: string;
  entries: number;
  chained: number;
  legacy: number;
  signed: number;
  unsigned: number;
  segments: number;
  firstSequence: number;
  lastSequence: number;
  checkpointUsed: string;
  /** The ledger's last entry as SEQ:HASH, an anchor to keep elsewhere. */
  head?: string;
  /** The app's own last entry, which the ledger must still hold. */
  expectedHead?: string;
}

/**
 * Subscribes to the app's live events; returns an unsubscribe function.
 * In the browser the stream reconnects by itself after a drop; events sent
 * while it was down are lost, so a reconnect is reported as
 * "proposals:resync" (when subscribed) for the screen to re-read.
 */
// Events only the desktop app emits (through Wails, never on
// /api/events): in a browser, listening for them opens no stream.
const desktopOnlyEvents = new Set(["ui:focus"]);

export function onEvents(names: string[], cb: (name: string, data: unknown) => void): () => void {
  const rt = (window as unknown as WailsWindow).runtime;
  if (bound() && rt) {
    const offs = names.map((n) => rt.EventsOn(n, (d) => cb(n, d)));
    return () => offs.forEach((off) => off());
  }
  const streamed = names.filter((n) => !desktopOnlyEvents.has(n));
  if (streamed.length === 0 || typeof EventSource === "undefined") return () => {};
  const sub: Subscriber = { names: streamed, cb };
  if (!stream) {
    keepNoStreamInPageCache();
    openStream(new Set([sub]));
  } else {
    stream.subs.add(sub);
    listen(stream, streamed);
    // The stream opened before this screen read its data: what changed
    // in between is asked for again, as a new stream's first open does.
    const s = stream;
    if (s.open && streamed.includes("proposals:resync")) {
      queueMicrotask(() => {
        if (s.subs.has(sub)) cb("proposals:resync", undefined);
      });
    }
  }
  return () => {
    const s = stream;
    if (!s?.subs.delete(sub) || s.subs.size > 0) return;
    s.es.close();
    stream = null;
  };
}

interface Subscriber {
  names: string[];
  cb: (name: string, data: unknown) => void;
}

/**
 * The page's one stream of the app's events, shared by every screen and
 * counter that listens. A browser opens at most six connections to the
 * app, and a page kept in its back/forward cache keeps its streams: with
 * a stream per listener (three on Pending), the page opened again after
 * two such pages waited a minute for a connection before it drew anything.
 */
let stream: { es: EventSource; subs: Set<Subscriber>; open: boolean; listening: Set<string> } | null = null;

function openStream(subs: Set<Subscriber>) {
  const s = { es: new EventSource("/api/events"), subs, open: false, listening: new Set<string>() };
  stream = s;
  for (const sub of subs) listen(s, sub.names);
  // Whatever changed before the stream opened (the screen read its data
  // first) or while it was down never reaches it: each open asks for a
  // resync.
  s.es.onopen = () => {
    s.open = true;
    for (const sub of [...s.subs]) if (sub.names.includes("proposals:resync")) sub.cb("proposals:resync", undefined);
  };
  // A dropped stream is how an open tab first learns the app stopped: ask
  // once, so that the page says so instead of going quiet.
  s.es.onerror = () => {
    s.open = false;
    if (!down) http("GET", "/api/status").catch(() => {});
  };
}

function listen(s: NonNullable<typeof stream>, names: string[]) {
  for (const n of names) {
    if (s.listening.has(n)) continue;
    s.listening.add(n);
    s.es.addEventListener(n, (ev) => {
      let data: unknown;
      try {
        data = JSON.parse((ev as MessageEvent).data);
      } catch {
        data = undefined;
      }
      for (const sub of [...s.subs]) if (sub.names.includes(n)) sub.cb(n, data);
    });
  }
}

let watchingPageCache = false;

/** Closes the stream while the page sits in the back/forward cache, and opens it again (with a resync) when the page comes back. */
function keepNoStreamInPageCache() {
  if (watchingPageCache || typeof window === "undefined") return;
  watchingPageCache = true;
  window.addEventListener("pagehide", (ev) => {
    if (!ev.persisted || !stream) return;
    stream.es.close();
    stream.open = false;
  });
  window.addEventListener("pageshow", (ev) => {
    if (ev.persisted && stream) openStream(stream.subs);
  });
}
