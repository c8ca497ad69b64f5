import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AutoApproval, RulesView } from "./api";
import { FakeEventSource, findEl, status, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

function approval(over: Partial<AutoApproval> = {}): AutoApproval {
  return {
    id: "a1",
    rule: "readme-webshop",
    agent: "gemini-cli",
    op: "commit",
    label: "commit",
    repo: "/home/me/src/webshop",
    repoName: "webshop",
    reason: "Update the readme",
    state: "completed",
    at: new Date(Date.now() - 60_000).toISOString(),
    restorePoint: "rp-1",
    ...over,
  };
}

describe("Pending: automatic approvals", () => {
  it("shows a recent one with its rule and undoes it through its restore point", async () => {
    const old = approval({ id: "a0", at: new Date(Date.now() - 60 * 60_000).toISOString() });
    const calls = stubFetch({
      "GET /api/proposals": { body: [] },
      "GET /api/rules/approvals": { body: [approval(), old] },
      "POST /api/restore": { body: { restored: [{ ref: "refs/heads/main", from: "b", to: "a" }], worktreeRestored: false, undoPoint: "rp-2" } },
    });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const notice = await findEl("#auto-a1");
    expect(notice.textContent).toContain("commit in webshop from gemini-cli: approved automatically by rule readme-webshop");
    expect(within(notice).getByRole("link", { name: "readme-webshop" }).getAttribute("href")).toBe("#/rules");
    // Only for a while: an hour-old approval is not a notice any more.
    expect(document.getElementById("auto-a0")).toBeNull();
    // Nothing waits, and the screen still says so.
    expect(screen.getByRole("heading", { name: "No proposals waiting" })).toBeTruthy();

    fireEvent.click(within(notice).getByRole("button", { name: "Undo" }));
    await waitFor(() => expect(notice.textContent).toContain("Undone: webshop is back as it was before."));
    const post = calls.find((c) => c.method === "POST" && c.url === "/api/restore")!;
    expect(post.body).toEqual({ repo: "/home/me/src/webshop", restorePoint: "rp-1", force: false });
    expect(within(notice).queryByRole("button", { name: "Undo" })).toBeNull();
  });

  it("appears when a rule approves while the screen is open, and says why an undo failed", async () => {
    let list: AutoApproval[] = [];
    stubFetch({
      "GET /api/proposals": { body: [] },
      "GET /api/rules/approvals": () => ({ body: list }),
      "POST /api/restore": {
        status: 409,
        body: { error: { code: "restore_conflict", message: "README.md changed after the restore point" } },
      },
    });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    await waitFor(() => expect(FakeEventSource.instances.length).toBeGreaterThan(0));
    expect(document.getElementById("auto-a1")).toBeNull();
    list = [approval()];
    act(() => FakeEventSource.emit("proposal:created", { id: "a1", state: "approved", version: 1 }));
    const notice = await findEl("#auto-a1");
    fireEvent.click(within(notice).getByRole("button", { name: "Undo" }));
    expect((await within(notice).findByRole("alert")).textContent).toContain("Undo failed: README.md changed after the restore point");
    fireEvent.click(within(notice).getByRole("button", { name: "Dismiss notice about a1" }));
    expect(document.getElementById("auto-a1")).toBeNull();
  });

  it("draws nothing from an answer that is not a list, and the screen stays", async () => {
    const calls = stubFetch({
      "GET /api/proposals": { body: [] },
      "GET /api/rules/approvals": { body: true },
    });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    expect(await screen.findByRole("heading", { name: "No proposals waiting" })).toBeTruthy();
    await waitFor(() => expect(calls.some((c) => c.url === "/api/rules/approvals")).toBe(true));
    // Every answer has arrived and been drawn (a crash would surface here).
    await act(async () => {
      await Promise.all(vi.mocked(fetch).mock.results.map((r) => r.value));
    });
    expect(document.querySelector(".auto-approved-list")).toBeNull();
    expect(screen.getByRole("heading", { name: "No proposals waiting" })).toBeTruthy();
  });

  it("has no Undo before the change ran", async () => {
    stubFetch({
      "GET /api/proposals": { body: [] },
      "GET /api/rules/approvals": { body: [approval({ state: "executing", restorePoint: "" })] },
    });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const notice = await findEl("#auto-a1");
    expect(within(notice).queryByRole("button", { name: "Undo" })).toBeNull();
  });
});

describe("Rules: the feed of automatic approvals", () => {
  it("lists what each rule approved, newest first, with where and from whom", async () => {
    const rules: RulesView = { policyFile: "/p.json", configured: true, rules: [] };
    stubFetch({
      "GET /api/rules": { body: rules },
      "GET /api/rules/approvals": {
        body: [approval({ id: "a2", rule: "docs", repoName: "docs-site", repo: "/home/me/src/docs-site" }), approval()],
      },
    });
    const { RulesView } = await import("./RulesView");
    render(<RulesView />);
    const feed = await screen.findByRole("region", { name: "Approved by rules" });
    const items = await within(feed).findAllByRole("listitem");
    expect(items.map((li) => li.id)).toEqual(["auto-feed-a2", "auto-feed-a1"]);
    expect(items[1].textContent).toContain("commit in webshop from gemini-cli, by rule readme-webshop");
    expect(within(items[1]).getByRole("link", { name: "details" }).getAttribute("href")).toBe("#/proposal/a1");
  });

  it("says when no rule approved anything yet", async () => {
    stubFetch({
      "GET /api/rules": { body: { policyFile: "/p.json", configured: false, rules: [] } },
      "GET /api/rules/approvals": { body: [] },
    });
    const { RulesView } = await import("./RulesView");
    render(<RulesView />);
    expect(await screen.findByText("No proposal has been approved by a rule yet.")).toBeTruthy();
  });
});
