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
});
