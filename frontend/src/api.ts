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
  const res = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw toApiError((data as { error?: unknown }).error ?? res.statusText, res.status);
  return data as T;
}

async function call<T>(method: string, httpMethod: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const b = bound();
  if (b) {
    try {
      return (await b[method](...(body === undefined ? [] : [body]))) as T;
    } catch (e) {
      throw toApiError(e);
    }
  }
  return http<T>(httpMethod, path, body);
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
}

export const api = {
  status: () => call<Status>("Status", "GET", "/api/status"),
  ready: () => call<boolean>("Ready", "POST", "/api/ready"),
  audit: () => call<AuditView>("Audit", "GET", "/api/audit"),
  verifyAudit: () => call<AuditReport>("VerifyAudit", "POST", "/api/audit/verify"),
};

/** Subscribes to the app's live events; returns an unsubscribe function. */
export function onEvents(names: string[], cb: (name: string, data: unknown) => void): () => void {
  const rt = (window as unknown as WailsWindow).runtime;
  if (bound() && rt) {
    const offs = names.map((n) => rt.EventsOn(n, (d) => cb(n, d)));
    return () => offs.forEach((off) => off());
  }
  if (typeof EventSource === "undefined") return () => {};
  const es = new EventSource("/api/events");
  for (const n of names) {
    es.addEventListener(n, (ev) => {
      let data: unknown;
      try {
        data = JSON.parse((ev as MessageEvent).data);
      } catch {
        data = undefined;
      }
      cb(n, data);
    });
  }
  return () => es.close();
}
