import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Card } from "./api";
import { card, diffRoutes, stubEventSource, stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
  window.location.hash = "";
});

const done = card({
  id: "h1",
  state: "completed",
  agent: "claude-code",
  outcome: { message: "merged into main", restorePoint: "rp1", at: "2026-01-01T10:01:00.000Z" },
  decision: { by: "owner:web", note: "looks right", approved: true, approvedDigest: "sha256:01", at: "2026-01-01T10:00:30.000Z" },
  history: [
    { version: 1, to: "pending", at: "2026-01-01T10:00:00.000Z", by: "claude-code" },
    { version: 2, from: "pending", to: "approved", at: "2026-01-01T10:00:30.000Z", by: "owner:web", note: "looks right" },
    { version: 3, from: "approved", to: "executing", at: "2026-01-01T10:00:31.000Z", by: "executor" },
    { version: 4, from: "executing", to: "completed", at: "2026-01-01T10:01:00.000Z", by: "executor" },
  ],
});
const failed = card({
  id: "h2",
  state: "failed",
  agent: "cursor",
  repo: "/home/me/src/blog",
  repoName: "blog",
  reason: "Fix the typo",
  outcome: { code: "stale_base", message: "main moved", at: "2026-01-01T09:00:00.000Z" },
});

describe("HistoryView", () => {
  it("lists every proposal and builds the query from the search and filters", async () => {
    const calls = stubFetch({
      "GET /api/history?limit=200": { body: [done, failed] },
      "GET /api/history?agent=cursor&limit=200": { body: [failed] },
      "GET /api/history?agent=cursor&state=failed&limit=200": { body: [failed] },
      "GET /api/history?agent=cursor&repo=%2Fhome%2Fme%2Fsrc%2Fblog&state=failed&limit=200": { body: [failed] },
      "GET /api/history?agent=cursor&repo=%2Fhome%2Fme%2Fsrc%2Fblog&state=failed&text=typo+fix&limit=200": { body: [] },
    });
    const { HistoryView } = await import("./HistoryView");
    render(<HistoryView />);
    expect(await screen.findByText("merged into main")).toBeTruthy();
    expect(screen.getByText("main moved")).toBeTruthy();
    expect(screen.getByText("2 proposals")).toBeTruthy();

    fireEvent.change(screen.getByLabelText("Agent"), { target: { value: "cursor" } });
    await waitFor(() => expect(screen.queryByText("merged into main")).toBeNull());
    fireEvent.change(screen.getByLabelText("State"), { target: { value: "failed" } });
    fireEvent.change(screen.getByLabelText("Repository"), { target: { value: "/home/me/src/blog" } });
    fireEvent.change(screen.getByLabelText("Search"), { target: { value: "typo fix" } });
    expect(await screen.findByText("Nothing matches these filters.")).toBeTruthy();

    const urls = calls.map((c) => c.url);
    expect(urls[0]).toBe("/api/history?limit=200");
    expect(urls).toContain("/api/history?agent=cursor&limit=200");
    expect(urls[urls.length - 1]).toBe(
      "/api/history?agent=cursor&repo=%2Fhome%2Fme%2Fsrc%2Fblog&state=failed&text=typo+fix&limit=200",
    );
    // The agents seen before filtering stay selectable.
    expect(within(screen.getByLabelText("Agent")).getAllByRole("option").map((o) => o.textContent)).toEqual([
      "All agents",
      "claude-code",
      "cursor",
    ]);
  });

  it("marks each row with how its agent ran, in words", async () => {
    const confined = card({
      id: "h3",
      state: "completed",
      origin: { session: "s1", runtime: "bubblewrap", network: ["api.anthropic.com"] },
      confinement: "confined session (bubblewrap; network: api.anthropic.com), session 6b794f95",
      outcome: { message: "committed", at: "2026-01-01T11:00:00.000Z" },
    });
    stubFetch({ "GET /api/history?limit=200": { body: [confined, failed] } });
    const { HistoryView } = await import("./HistoryView");
    render(<HistoryView />);
    await screen.findByText("committed");
    const mark = (id: string) => document.querySelector<HTMLElement>(`#history-${id} .origin-mark`)!;
    expect(mark("h3").textContent).toBe("ran confined");
    expect(mark("h3").dataset.confined).toBe("true");
    expect(mark("h3").title).toBe("confined session (bubblewrap; network: api.anthropic.com), session 6b794f95");
    expect(mark("h2").textContent).toBe("ran as your account");
    expect(mark("h2").dataset.confined).toBe("false");
    expect(mark("h2").classList.contains("warn")).toBe(true);
    // The mark sits in the Agent column: the row keeps its seven cells.
    expect(mark("h2").closest("td")?.textContent).toBe("cursorran as your account");
    expect(document.querySelectorAll("#history-h2 > td")).toHaveLength(7);
  });

  it("shows older proposals a page at a time, after the last row shown", async () => {
    const page = Array.from({ length: 200 }, (_, i) => card({ id: `p${i}`, state: "completed", reason: `Change ${i}` }));
    const older = [card({ id: "p200", state: "failed", reason: "The oldest change" })];
    const calls = stubFetch({
      "GET /api/history?limit=200": { body: page },
      "GET /api/history?limit=200&after=p199": { body: older },
    });
    const { HistoryView } = await import("./HistoryView");
    render(<HistoryView />);
    expect(await screen.findByText("200+ proposals")).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Show older proposals" }));
    expect(await screen.findByText("The oldest change")).toBeTruthy();
    expect(screen.getByText("201 proposals")).toBeTruthy();
    expect(document.querySelectorAll("tbody tr")).toHaveLength(201);
    // A short page is the last: nothing more to ask for.
    expect(screen.queryByRole("button", { name: "Show older proposals" })).toBeNull();
    expect(calls.map((c) => c.url)).toEqual(["/api/history?limit=200", "/api/history?limit=200&after=p199"]);
  });

  it("opens a proposal's page from its row", async () => {
    stubFetch({ "GET /api/history?limit=200": { body: [done] } });
    const { HistoryView } = await import("./HistoryView");
    render(<HistoryView />);
    fireEvent.click(await screen.findByText("merged into main"));
    expect(window.location.hash).toBe("#/proposal/h1");
  });
});

describe("ProposalPage", () => {
  it("shows the whole lifecycle, the decision, the outcome and the audit entries", async () => {
    stubEventSource();
    const audit = [
      { id: "e1", sequence: 7, timestamp: 1767261600000, event_type: "proposal_created", session_id: "claude-code", result: "ok", data: { op: "merge" } },
      { id: "e2", sequence: 8, timestamp: 1767261630000, event_type: "proposal_approved", approval: "owner:web", result: "ok", data: { from: "pending", to: "approved" } },
    ];
    stubFetch({
      "GET /api/proposals/h1": { body: done as Card },
      "GET /api/proposals/h1/audit": { body: audit },
      ...diffRoutes("h1", []),
    });
    const { ProposalPage } = await import("./ProposalPage");
    render(<ProposalPage id="h1" />);
    const el = await waitFor(() => {
      const c = document.getElementById("card-h1");
      if (!c) throw new Error("no card");
      return c;
    });
    expect(el.dataset.state).toBe("completed");
    expect(within(el).getByText(/Approved/).textContent).toMatch(/Approved by owner:web/);
    expect(within(el).getAllByText("looks right").length).toBeGreaterThan(0);
    expect(within(el).getByText(/merged into main/)).toBeTruthy();
    expect(el.querySelector(".approve")).toBeNull();
    expect(el.querySelector("#card-confinement")?.getAttribute("data-confined")).toBe("false");
    expect(el.querySelector("#card-confinement")?.textContent).toMatch(/runs as your account: it could write to the repository without asking/);

    const steps = document.querySelectorAll(".lifecycle li");
    expect(steps).toHaveLength(4);
    expect(steps[1].textContent).toMatch(/pending → .*approved by owner:web/);
    expect(steps[3].textContent).toMatch(/executing → .*completed/);

    expect(await screen.findByText("proposal_approved")).toBeTruthy();
    expect(screen.getByText("proposal_created")).toBeTruthy();
    expect(screen.getByText("from: pending · to: approved")).toBeTruthy();
  });
});
