import { cleanup, render, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { card, diffRoutes, sampleDiff, status, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

describe("hidden characters on a card", () => {
  it("names every field that held one, escaped", async () => {
    const c = card({
      reason: "Rename ⟨U+202E⟩txt.exe",
      invisible: [
        { field: "reason", shown: "Rename ⟨U+202E⟩txt.exe" },
        { field: "args.message", shown: "Greet⟨U+200B⟩ the world" },
      ],
    });
    stubFetch({ "GET /api/proposals": { body: [c] }, ...diffRoutes("p1", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const el = await screen.findByRole("article", { name: /merge in shop/i });
    const alert = within(el).getByText("Hidden characters:").closest("[role=alert]") as HTMLElement;
    expect(alert).toBeTruthy();
    expect(within(alert).getByText("args.message:")).toBeTruthy();
    expect(within(alert).getByText("Greet⟨U+200B⟩ the world")).toBeTruthy();
  });

  it("shows nothing for a card without any", async () => {
    stubFetch({ "GET /api/proposals": { body: [card({ invisible: [] })] }, ...diffRoutes("p1", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    await screen.findByRole("article", { name: /merge in shop/i });
    expect(screen.queryByText("Hidden characters:")).toBeNull();
  });
});
