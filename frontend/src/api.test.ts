import { afterEach, describe, expect, it, vi } from "vitest";
import { onEvents } from "./api";

describe("onEvents in a browser", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("opens a stream for the server's events, and none for desktop-only ones", () => {
    const opened: string[] = [];
    class FakeEventSource {
      onopen: (() => void) | null = null;
      constructor(url: string) {
        opened.push(url);
      }
      addEventListener() {}
      close() {}
    }
    vi.stubGlobal("EventSource", FakeEventSource);
    onEvents(["ui:focus"], () => {})();
    expect(opened).toEqual([]);
    onEvents(["proposal:updated", "ui:focus"], () => {})();
    expect(opened).toEqual(["/api/events"]);
  });

  it("asks for a resync each time the stream opens, the first time included", () => {
    const streams: { onopen: (() => void) | null }[] = [];
    class FakeEventSource {
      onopen: (() => void) | null = null;
      constructor() {
        streams.push(this);
      }
      addEventListener() {}
      close() {}
    }
    vi.stubGlobal("EventSource", FakeEventSource);
    const seen: string[] = [];
    const off = onEvents(["proposal:updated", "proposals:resync"], (name) => seen.push(name));
    streams[0].onopen!();
    streams[0].onopen!(); // reconnected after a drop
    expect(seen).toEqual(["proposals:resync", "proposals:resync"]);
    off();
  });
  class SharedFake {
    static made: SharedFake[] = [];
    listeners = new Map<string, ((ev: MessageEvent) => void)[]>();
    onopen: (() => void) | null = null;
    onerror: (() => void) | null = null;
    closed = false;
    constructor(public url: string) {
      SharedFake.made.push(this);
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
  }

  function pageEvent(type: "pagehide" | "pageshow", persisted: boolean) {
    const ev = new Event(type);
    Object.defineProperty(ev, "persisted", { value: persisted });
    window.dispatchEvent(ev);
  }

  it("shares one stream among every listener of the page and closes it when the last one leaves", () => {
    SharedFake.made = [];
    vi.stubGlobal("EventSource", SharedFake);
    const a: unknown[] = [];
    const b: unknown[] = [];
    const offA = onEvents(["proposal:updated"], (n, d) => a.push([n, d]));
    const offB = onEvents(["proposal:updated", "proposal:created"], (n, d) => b.push([n, d]));
    expect(SharedFake.made).toHaveLength(1);
    SharedFake.made[0].emit("proposal:updated", { id: "p1" });
    SharedFake.made[0].emit("proposal:created", { id: "p2" });
    expect(a).toEqual([["proposal:updated", { id: "p1" }]]);
    expect(b).toEqual([
      ["proposal:updated", { id: "p1" }],
      ["proposal:created", { id: "p2" }],
    ]);
    offA();
    expect(SharedFake.made[0].closed).toBe(false);
    SharedFake.made[0].emit("proposal:updated", { id: "p3" });
    expect(a).toHaveLength(1);
    offB();
    expect(SharedFake.made[0].closed).toBe(true);
    onEvents(["proposal:updated"], () => {})();
    expect(SharedFake.made).toHaveLength(2);
  });

  it("asks a listener that joins an open stream for a resync", async () => {
    SharedFake.made = [];
    vi.stubGlobal("EventSource", SharedFake);
    const first: string[] = [];
    const offFirst = onEvents(["proposals:resync"], (n) => first.push(n));
    SharedFake.made[0].onopen!();
    const later: string[] = [];
    const offLater = onEvents(["proposal:updated", "proposals:resync"], (n) => later.push(n));
    await Promise.resolve();
    expect(SharedFake.made).toHaveLength(1);
    expect(first).toEqual(["proposals:resync"]);
    expect(later).toEqual(["proposals:resync"]);
    offFirst();
    offLater();
  });

  it("closes the stream while the page is in the back/forward cache and opens it again with a resync", () => {
    SharedFake.made = [];
    vi.stubGlobal("EventSource", SharedFake);
    const seen: string[] = [];
    const off = onEvents(["proposal:updated", "proposals:resync"], (n) => seen.push(n));
    SharedFake.made[0].onopen!();
    pageEvent("pagehide", false); // a page that is unloaded for good keeps it to the end
    expect(SharedFake.made[0].closed).toBe(false);
    pageEvent("pagehide", true);
    expect(SharedFake.made[0].closed).toBe(true);
    pageEvent("pageshow", true);
    expect(SharedFake.made).toHaveLength(2);
    SharedFake.made[1].onopen!();
    SharedFake.made[1].emit("proposal:updated", { id: "p1" });
    expect(seen).toEqual(["proposals:resync", "proposals:resync", "proposal:updated"]);
    off();
    expect(SharedFake.made[1].closed).toBe(true);
  });
});
