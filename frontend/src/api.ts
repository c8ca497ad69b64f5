// The one module the front end imports to talk to Sluice's Go side. The
// calls and every type they carry are generated from Go (api.gen.ts, by
// `go generate ./app`); the transport under them, Wails binding or HTTP,
// is transport.ts. What is here is what Go does not declare: the image
// route an <img> loads, and the shared stream of the app's events.

import { api, desktopOnlyEvents, type EventName, type EventPayloads } from "./api.gen";
import { bound, http, isDown, seg, type WailsWindow } from "./transport";

export * from "./api.gen";
export { ApiError, detectDesktop, isDown, notRunningMessage, onConnection } from "./transport";
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

/**
 * Subscribes to the app's live events; returns an unsubscribe function.
 * In the browser the stream reconnects by itself after a drop; events sent
 * while it was down are lost, so a reconnect is reported as
 * "proposals:resync" (when subscribed) for the screen to re-read.
 * Each event comes with what it carries (EventPayloads, declared in Go).
 * Listening for an event only the desktop app emits (desktopOnlyEvents)
 * opens no stream in a browser.
 */
export function onEvents<K extends EventName>(
  names: readonly K[],
  listener: (name: K, data: NoInfer<EventPayloads[K]>) => unknown,
): () => void {
  const cb = listener as (name: string, data: unknown) => void;
  const rt = (window as unknown as WailsWindow).runtime;
  if (bound() && rt) {
    const offs = names.map((n) => rt.EventsOn(n, (d) => cb(n, d)));
    return () => offs.forEach((off) => off());
  }
  const streamed: string[] = names.filter((n) => !desktopOnlyEvents.includes(n));
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
    if (!isDown()) http("GET", "/api/status").catch(() => {});
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
