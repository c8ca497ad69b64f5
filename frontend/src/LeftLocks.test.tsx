import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { GitLock } from "./api";
import { card, diffRoutes, sampleDiff, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const repo = "/home/pat/src/shop";
const lock = (path: string, over: Partial<GitLock> = {}): GitLock => ({
  repo,
  path,
  shown: ".git/" + path,
  size: 0,
  modTime: "2026-12-01T10:00:00.123456789Z",
  what: "git locks the index",
  inUse: false,
  leftover: true,
  ...over,
});

describe("git lock files on a card needing reconciliation", () => {
  it("names each lock and removes exactly the leftovers after confirmation", async () => {
    const index = lock("index.lock");
    const head = lock("HEAD.lock");
    const old = lock("packed-refs.lock", { leftover: false });
    const c = card({ state: "needs_reconciliation", locks: [index, head, old] });
    const calls = stubFetch({
      "GET /api/proposals/p1": { body: { ...c, locks: [old] } },
      "POST /api/proposals/p1/locks/remove": {
        body: { removed: [index], kept: [{ lock: head, reason: "it changed since it was shown: another git wrote it" }] },
      },
      ...diffRoutes("p1", [sampleDiff]),
    });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={c} onReload={() => {}} />);
    const section = screen.getByRole("region", { name: "git lock files" });
    for (const shown of [".git/index.lock", ".git/HEAD.lock", ".git/packed-refs.lock"]) {
      expect(within(section).getByText(shown)).toBeTruthy();
    }
    expect(within(section).getByText(/not Sluice's/)).toBeTruthy();

    fireEvent.click(within(section).getByRole("button", { name: "Remove these 2 lock files" }));
    const dialog = screen.getByRole("dialog");
    expect(within(dialog).getByText(".git/index.lock")).toBeTruthy();
    expect(within(dialog).queryByText(".git/packed-refs.lock")).toBeNull();
    expect(calls.some((x) => x.url.endsWith("/locks/remove"))).toBe(false);
    fireEvent.click(within(dialog).getByRole("button", { name: "Remove" }));

    expect(await screen.findByText("Removed .git/index.lock.")).toBeTruthy();
    expect(screen.getByText(/Kept/).textContent).toContain("changed since it was shown");
    const sent = calls.find((x) => x.url === "/api/proposals/p1/locks/remove");
    expect(sent?.method).toBe("POST");
    expect(sent?.body).toEqual({ locks: [index, head] });
  });

  it("offers no removal when git is running there", async () => {
    const c = card({ state: "needs_reconciliation", locks: [lock("index.lock", { inUse: true, leftover: false })] });
    stubFetch({ ...diffRoutes("p1", [sampleDiff]) });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={c} />);
    const section = screen.getByRole("region", { name: "git lock files" });
    expect(within(section).getByText(/A git process is working/)).toBeTruthy();
    expect(within(section).queryByRole("button")).toBeNull();
  });

  it("shows nothing on a card without locks", async () => {
    stubFetch({ ...diffRoutes("p1", [sampleDiff]) });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={card({ state: "needs_reconciliation" })} />);
    expect(screen.queryByRole("region", { name: "git lock files" })).toBeNull();
  });
});
