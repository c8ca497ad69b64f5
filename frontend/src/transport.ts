// How the front end reaches Sluice's Go side, for the calls written in
// api.gen.ts. In the desktop window the calls go through Wails bindings
// (window.go.app.API); in `sluice serve` they go to the JSON API under
// /api/ with the session cookie and CSRF header. Components never know
// which: they use api.ts.

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

export interface WailsWindow {
  go?: { app?: { API?: Bound } };
  runtime?: { EventsOn(name: string, cb: (data: unknown) => void): () => void };
}

export function bound(): Bound | undefined {
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

export async function http<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
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

export interface Route {
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
export async function call<T>(binding: string, args: unknown[], route: Route): Promise<T> {
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

/** A path segment or query value, escaped. */
export function seg(v: unknown): string {
  return encodeURIComponent(String(v ?? ""));
}

/** o without the fields the route's path carries. */
export function omit<T extends object>(o: T, keys: string[]): Partial<T> {
  const out: Record<string, unknown> = { ...(o as Record<string, unknown>) };
  for (const k of keys) delete out[k];
  return out as Partial<T>;
}

/** The query string of o's fields named by keys; empty ones are left out. */
export function queryOf(o: object, keys: string[]): string {
  const p = new URLSearchParams();
  const v = o as Record<string, unknown>;
  for (const k of keys) {
    const x = typeof v[k] === "string" ? (v[k] as string).trim() : v[k];
    if (x === undefined || x === null || x === "" || x === 0 || x === false) continue;
    p.set(k, String(x));
  }
  const s = p.toString();
  return s ? `?${s}` : "";
}
