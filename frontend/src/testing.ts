// Test helpers: a fetch stub that routes like the Go server and records
// what the UI sent, an EventSource stub the tests can fire events through,
// and sample data in the API's shapes.
import { vi } from "vitest";
import type { AgentSession, Card, OutcomeFacts, Status } from "./api";

export interface Call {
  method: string;
  url: string;
  body: unknown;
  headers: Headers;
}

type Reply = { status?: number; body: unknown } | ((call: Call) => { status?: number; body: unknown });

/**
 * Stubs fetch. Routes are keyed "GET /api/x" or "POST /api/x" (query
 * included when present); an unknown route answers 404 like the server.
 */
export function stubFetch(routes: Record<string, Reply>): Call[] {
  const calls: Call[] = [];
  const all: Record<string, Reply> = { "GET /api/session": { body: { csrf: "csrf-token" } }, ...routes };
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input);
      const method = init?.method ?? "GET";
      const call: Call = {
        method,
        url,
        body: typeof init?.body === "string" ? JSON.parse(init.body) : undefined,
        headers: new Headers(init?.headers),
      };
      calls.push(call);
      let r = all[`${method} ${url}`];
      if (!r) r = { status: 404, body: { error: { code: "not_found", message: `no route ${method} ${url}` } } };
      const out = typeof r === "function" ? r(call) : r;
      return new Response(JSON.stringify(out.body), {
        status: out.status ?? 200,
        headers: { "Content-Type": "application/json" },
      });
    }),
  );
  return calls;
}

export class FakeEventSource {
  static instances: FakeEventSource[] = [];
  listeners = new Map<string, ((ev: MessageEvent) => void)[]>();
  onopen: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(public url: string) {
    FakeEventSource.instances.push(this);
  }
  addEventListener(name: string, fn: (ev: MessageEvent) => void) {
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), fn]);
  }
  close() {
    this.closed = true;
  }
  emit(name: string, data: unknown) {
    for (const fn of this.listeners.get(name) ?? []) fn(new MessageEvent(name, { data: JSON.stringify(data) }));
  }
  /** Fires an event on every open stream. */
  static emit(name: string, data: unknown) {
    for (const es of FakeEventSource.instances) if (!es.closed) es.emit(name, data);
  }
}

export function stubEventSource() {
  FakeEventSource.instances = [];
  vi.stubGlobal("EventSource", FakeEventSource);
}

export const status: Status = {
  version: "1.2.3",
  ui: "web",
  gatewayAddr: "127.0.0.1:4000",
  pending: 1,
  allowedRoots: ["/home/me/src"],
  sidecarPath: "/opt/sluice/sluice-sidecar",
  startedAt: "2026-01-01T00:00:00Z",
};

/** What the app says of an operation's outcome: nothing applies unless given. */
export function opFacts(over: Partial<OutcomeFacts> = {}): OutcomeFacts {
  return { deletesBranches: false, replaysCommits: false, sendsCommits: false, writesCheckoutWhenConfined: false, ...over };
}

/**
 * A pending merge's card as the app sends it. Give label, subjectBranch
 * and opFacts with op and args: the app computes them from the
 * operation's definition, and the UI shows what it is given.
 */
export function card(over: Partial<Card> = {}): Card {
  const created = new Date(Date.now() - 60_000).toISOString();
  const expires = new Date(Date.now() + 14 * 60_000).toISOString();
  return {
    id: "p1",
    op: "merge",
    label: "merge",
    subjectBranch: "fix → main",
    opFacts: opFacts(),
    agent: "claude-code",
    repo: "/home/me/src/shop",
    repoName: "shop",
    reason: "Merge the checkout fix into main",
    state: "pending",
    risk: "medium",
    riskWhy: "merges fix into main",
    destructive: false,
    tense: "future",
    digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    shortDigest: "0123456789ab",
    pinned: {
      refs: {
        "refs/heads/main": "1111111111111111111111111111111111111111",
        "refs/heads/fix": "2222222222222222222222222222222222222222",
      },
    },
    args: { source: "fix", target: "main", strategy: "merge" },
    files: ["src/checkout.go", "src/cart.go"],
    filesKnown: true,
    collisions: [],
    createdAt: created,
    expiresAt: expires,
    history: [{ version: 1, to: "pending", at: created, by: "claude-code" }],
    retryable: false,
    confinement: "runs as your account: it could write to the repository without asking",
    stale: false,
    invisible: [],
    invisibleContent: [],
    invisibleContentMore: 0,
    ...over,
  };
}

/** A confined session as GET /api/sessions lists it: running, nothing proposed yet. */
export function agentSession(over: Partial<AgentSession> = {}): AgentSession {
  return {
    id: "s1",
    agent: "claude-code",
    repo: "/home/me/src/shop",
    repoName: "shop",
    runtime: "bubblewrap",
    network: ["api.anthropic.com", "proxy.golang.org"],
    granted: ["proxy.golang.org"],
    state: "running",
    startedAt: new Date(Date.now() - 5 * 60_000).toISOString(),
    proposals: 0,
    canOffer: false,
    ...over,
  };
}

export const sampleDiff = `diff --git a/src/checkout.go b/src/checkout.go
index 1111111..2222222 100644
--- a/src/checkout.go
+++ b/src/checkout.go
@@ -1,3 +1,3 @@
 package shop
-func Total() int { return 1 }
+func Total() int { return 2 }
 // end
`;

export const secondDiff = `diff --git a/src/cart.go b/src/cart.go
index 3333333..4444444 100644
--- a/src/cart.go
+++ b/src/cart.go
@@ -1,2 +1,2 @@
 package shop
-var Items = 1
+var Items = 2
`;

/** A whole diff served in the given chunks, like GET /api/proposals/{id}/diff. */
export function diffRoutes(id: string, chunks: string[]): Record<string, Reply> {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const routes: Record<string, Reply> = {};
  let offset = 0;
  chunks.forEach((text, i) => {
    const next = offset + text.length;
    routes[`GET /api/proposals/${id}/diff?offset=${offset}`] = {
      body: { text, offset, nextOffset: next, totalBytes: total, done: i === chunks.length - 1, notices: [] },
    };
    offset = next;
  });
  if (chunks.length === 0) {
    routes[`GET /api/proposals/${id}/diff?offset=0`] = {
      body: { text: "", offset: 0, nextOffset: 0, totalBytes: 0, done: true, notices: [], compared: "no file changes" },
    };
  }
  return routes;
}

/** Waits for `selector` to match inside `root` (document by default). */
export async function findEl<T extends Element = HTMLElement>(selector: string, root: ParentNode = document): Promise<T> {
  const { waitFor } = await import("@testing-library/react");
  return waitFor(() => {
    const el = root.querySelector<T & Element>(selector);
    if (!el) throw new Error(`nothing matches ${selector}`);
    return el as T;
  });
}

/**
 * Waits until the card's diff is on screen: while any of it is loading,
 * Approve is disabled and says so.
 */
export async function diffOnScreen(id: string) {
  const { waitFor } = await import("@testing-library/react");
  await waitFor(() => {
    const card = document.getElementById(`card-${id}`);
    if (!card || card.querySelector(".approve-wait")) throw new Error(`the diff of ${id} is still loading`);
  });
}
