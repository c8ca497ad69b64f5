import { afterEach, describe, expect, it, vi } from "vitest";
import { onEvents } from "./api";

describe("onEvents in a browser", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("opens a stream for the server's events, and none for desktop-only ones", () => {
    const opened: string[] = [];
    class FakeEventSource {
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
});
