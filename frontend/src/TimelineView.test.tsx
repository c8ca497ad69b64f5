import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Timeline } from "./api";
import { card, status, stubFetch, type Call } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
  window.location.hash = "";
});

const repo = "/home/me/src/shop";
const timeline: Timeline = {
  repo,
  restorePoints: [
    {
      id: "rp1",
      label: "before merge of fix into main by claude-code",
      proposalId: "p1",
      op: "merge",
      createdAt: "2026-01-01T10:00:00.000Z",
      refs: [{ ref: "refs/heads/main", sha: "1111111111111111111111111111111111111111" }],
      hasWorktreeSnapshot: false,
    },
    {
      id: "rp2",
      label: "before hard reset of main to HEAD~1 by codex",
      proposalId: "p2",
      op: "reset",
      createdAt: "2026-01-01T12:00:00.000Z",
      refs: [{ ref: "refs/heads/main", sha: "2222222222222222222222222222222222222222" }],
      hasWorktreeSnapshot: true,
    },
  ],
  events: [
    { time: "2026-01-01T10:00:00.000Z", kind: "restore_point", restorePointId: "rp1", message: "" },
    {
      time: "2026-01-01T10:00:01.000Z",
      kind: "ref_move",
      ref: "refs/heads/main",
      from: "1111111111111111111111111111111111111111",
      to: "2222222222222222222222222222222222222222",
      message: "merge fix into main (p1)",
    },
    { time: "2026-01-01T12:00:00.000Z", kind: "restore_point", restorePointId: "rp2", message: "" },
  ],
};

async function renderTimeline(routes: Parameters<typeof stubFetch>[0]) {
  const calls = stubFetch({
    "GET /api/history?limit=500": { body: [card()] },
    [`GET /api/timeline?repo=${encodeURIComponent(repo)}`]: { body: timeline },
    [`GET /api/restore-preview?repo=${encodeURIComponent(repo)}&restorePoint=rp1`]: {
      body: {
        label: "before merge of fix into main by claude-code",
        refs: [
          { ref: "refs/heads/main", now: "3333333333333333333333333333333333333333", after: "1111111111111111111111111111111111111111", leaving: 2 },
          { ref: "refs/heads/topic", now: "4444444444444444444444444444444444444444", after: "4444444444444444444444444444444444444444", leaving: 0 },
        ],
        worktree: false,
        conflicts: [{ kind: "ref", ref: "refs/heads/main", message: "refs/heads/main moved after the operation (2222222 → 3333333)" }],
      },
    },
    [`GET /api/restore-preview?repo=${encodeURIComponent(repo)}&restorePoint=rp2`]: {
      body: { label: "x", refs: [], worktree: true, conflicts: [] },
    },
    ...routes,
  });
  const { TimelineView } = await import("./TimelineView");
  render(<TimelineView status={status} repo={repo} />);
  await waitFor(() => expect(document.getElementById("rp-rp1")).toBeTruthy());
  return calls;
}

function restoreCalls(calls: Call[]) {
  return calls.filter((c) => c.url === "/api/restore").map((c) => c.body);
}

describe("TimelineView", () => {
  it("shows restore points and ref movements as one timeline, newest first", async () => {
    await renderTimeline({});
    const items = Array.from(document.querySelectorAll(".timeline > li"));
    expect(items.map((li) => li.id)).toEqual(["rp-rp2", "", "rp-rp1"]);
    expect(items[1].textContent).toMatch(/ref moved/);
    expect(items[1].textContent).toMatch(/merge fix into main \(p1\)/);
    expect(items[0].textContent).toMatch(/snapshot of the index and working tree/);
    expect(items[0].querySelector(".restore")).toBeTruthy();
    expect(items[0].querySelector(".rp-label")?.textContent).toBe("before hard reset of main to HEAD~1 by codex");
    expect(items[2].querySelector(".rp-label")?.textContent).toBe("before merge of fix into main by claude-code");
  });

  it("restores after a confirmation", async () => {
    const calls = await renderTimeline({
      "POST /api/restore": {
        body: { restored: [{ ref: "refs/heads/main", from: "2222222222222222222222222222222222222222", to: "1111111111111111111111111111111111111111" }], worktreeRestored: false },
      },
    });
    fireEvent.click(document.querySelector("#rp-rp1 .restore")!);
    const dialog = screen.getByRole("dialog", { name: "Restore this point?" });
    // The safe choice has the focus.
    expect(document.activeElement?.textContent).toBe("Cancel");
    // The dialog says what changes compared with the repository now.
    await waitFor(() => expect(dialog.querySelector(".restore-changes")).toBeTruthy());
    const changes = Array.from(dialog.querySelectorAll(".restore-change")).map((li) => li.textContent);
    expect(changes).toEqual(["main moves from 3333333333 back to 1111111111: 2 commits leave it"]);
    expect(dialog.textContent).toContain("before merge of fix into main by claude-code");
    expect(dialog.querySelector(".restore-conflicts")?.textContent).toContain("refs/heads/main moved after the operation");
    fireEvent.click(dialog.querySelector(".confirm-restore")!);
    expect(await screen.findByText("Restored: before merge of fix into main by claude-code.")).toBeTruthy();
    expect(restoreCalls(calls)).toEqual([{ repo, restorePoint: "rp1", force: false }]);
    expect(screen.queryByRole("dialog")).toBeNull();
  });

  it("offers Restore anyway after a restore_conflict and re-sends with force after a second confirmation", async () => {
    const calls = await renderTimeline({
      "POST /api/restore": (c) =>
        (c.body as { force: boolean }).force
          ? { body: { restored: [{ ref: "refs/heads/main", from: "3333333333", to: "2222222222222222222222222222222222222222" }], worktreeRestored: true } }
          : { status: 409, body: { error: { code: "restore_conflict", message: "main moved since the restore point (now 3333333)" } } },
    });
    fireEvent.click(document.querySelector("#rp-rp2 .restore")!);
    fireEvent.click(screen.getByRole("dialog").querySelector(".confirm-restore")!);

    const conflict = await screen.findByRole("alert");
    expect(conflict.textContent).toMatch(/main moved since the restore point/);
    expect(screen.queryByRole("dialog")).toBeNull();

    fireEvent.click(within(conflict).getByRole("button", { name: "Restore anyway…" }));
    const second = screen.getByRole("dialog", { name: "Restore anyway?" });
    // Cancelling the second confirmation sends nothing.
    fireEvent.keyDown(second, { key: "Escape" });
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(restoreCalls(calls)).toHaveLength(1);

    fireEvent.click(within(screen.getByRole("alert")).getByRole("button", { name: "Restore anyway…" }));
    fireEvent.click(screen.getByRole("dialog", { name: "Restore anyway?" }).querySelector(".confirm-restore")!);
    expect(await screen.findByText("Restored: before hard reset of main to HEAD~1 by codex.")).toBeTruthy();
    expect(screen.getByText("The working tree was restored too.")).toBeTruthy();
    expect(restoreCalls(calls)).toEqual([
      { repo, restorePoint: "rp2", force: false },
      { repo, restorePoint: "rp2", force: true },
    ]);
  });

  it("lets the person pick a repository seen in proposals", async () => {
    stubFetch({ "GET /api/history?limit=500": { body: [card()] } });
    const { TimelineView } = await import("./TimelineView");
    render(<TimelineView status={status} repo="" />);
    const chip = await screen.findByRole("link", { name: "shop" });
    expect(chip.getAttribute("href")).toBe("#/timeline?repo=%2Fhome%2Fme%2Fsrc%2Fshop");
    fireEvent.change(screen.getByLabelText("Repository"), { target: { value: "/home/me/src/blog" } });
    fireEvent.click(screen.getByRole("button", { name: "Show" }));
    expect(window.location.hash).toBe("#/timeline?repo=%2Fhome%2Fme%2Fsrc%2Fblog");
  });
});
