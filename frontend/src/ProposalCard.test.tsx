import { cleanup, fireEvent, render, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { card, diffOnScreen, diffRoutes, sampleDiff, status, stubEventSource, stubFetch, opFacts } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

describe("the confirmation word of a destructive card", () => {
  it("is accepted only as typed: a space before or after it, or a hidden character, keeps Approve disabled", async () => {
    const destructive = card({
      id: "p9",
      op: "reset", label: "reset", subjectBranch: "", opFacts: opFacts(),
      risk: "destructive",
      destructive: true,
      confirmWord: "main",
      args: { mode: "hard", target: "HEAD~2", branch: "main" },
      pinned: { refs: { "refs/heads/main": "3333333333333333333333333333333333333333" } },
    });
    stubFetch({ "GET /api/proposals": { body: [destructive] }, ...diffRoutes("p9", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const el = await waitFor(() => {
      const e = document.getElementById("card-p9");
      if (!e) throw new Error("no card yet");
      return e;
    });
    await diffOnScreen("p9");
    const approve = el.querySelector<HTMLButtonElement>(".approve")!;
    const input = el.querySelector<HTMLInputElement>(".confirm-input")!;
    for (const typed of ["main ", " main", " main ", "main\t", "main\u200b", "MAIN"]) {
      fireEvent.change(input, { target: { value: typed } });
      expect(approve.disabled, JSON.stringify(typed)).toBe(true);
      expect(input.getAttribute("aria-invalid")).toBe("true");
    }
    fireEvent.change(input, { target: { value: "main" } });
    expect(approve.disabled).toBe(false);
  });
});
