import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { card, diffRoutes, sampleDiff, status, stubEventSource, stubFetch, opFacts } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

async function renderPending() {
  const { PendingView } = await import("./PendingView");
  return render(<PendingView status={status} />);
}

const tree1 = "a".repeat(40);
const tree2 = "b".repeat(40);

const hardReset = card({
  id: "r1",
  op: "reset", label: "reset", subjectBranch: "", opFacts: opFacts(),
  risk: "destructive",
  riskWhy: "throws away uncommitted work in 1 modified file and makes 1 commit unreachable",
  destructive: true,
  confirmWord: "main",
  args: { mode: "hard", target: "HEAD~1", branch: "main" },
  sealed: {
    effect: "loses",
    before: tree1,
    after: tree2,
    lost: { count: 1, commits: [{ sha: "c".repeat(40), subject: "Add the draft" }] },
    uncommitted: ["notes.md"],
    work: [{ status: "modified", path: "notes.md", size: 120 }],
    files: [
      { status: "modified", path: "notes.md", size: 120 },
      { status: "deleted", path: "draft.txt", size: 30 },
    ],
    moves: [{ ref: "refs/heads/main", from: "c".repeat(40), to: "d".repeat(40) }],
  },
});

const commit = card({
  id: "c1",
  op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }),
  risk: "high",
  riskWhy: "adds an executable file (run.sh)",
  args: { message: "Add files", paths: ["run.sh", "catalog.bin", "link"] },
  sealed: {
    effect: "lands",
    before: tree1,
    after: tree2,
    files: [
      { status: "added", path: "run.sh", mode: "100755", size: 20 },
      { status: "added", path: "catalog.bin", mode: "100644", size: 3_670_016, binary: true },
      { status: "added", path: "link", mode: "120000", size: 6 },
      { status: "renamed", path: "new.txt", oldPath: "old.txt", mode: "100644", oldMode: "100644", size: 4 },
    ],
    moves: [{ ref: "refs/heads/main", from: "c".repeat(40) }],
  },
});

describe("SealedOutcome", () => {
  it("shows a hard reset's losses first, in words, never as additions", async () => {
    stubFetch({
      "GET /api/proposals": { body: [hardReset] },
      "GET /api/proposals/r1/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes("r1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /reset in shop/i });
    const q = within(el);
    const losses = q.getByRole("region", { name: "What is lost" });
    expect(losses.textContent).toContain("Lost if approved");
    expect(losses.textContent).toContain("1 commit becomes unreachable");
    expect(losses.textContent).toContain("Uncommitted changes to 1 modified file are thrown away: notes.md");
    expect(losses.textContent).toContain("Add the draft");
    expect(losses.textContent).toContain("notes.md");
    expect(el.querySelector('tr[data-path="draft.txt"] .status')?.textContent).toBe("lost");
    expect(q.getByText(/throws away uncommitted work/).textContent).toContain("throws away");
    expect(el.textContent).not.toContain("unknown until executed");
  });

  it("flags executable, binary, symlink and rename on a commit", async () => {
    stubFetch({
      "GET /api/proposals": { body: [commit] },
      "GET /api/proposals/c1/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes("c1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /commit in shop/i });
    expect(el.querySelector('tr[data-path="run.sh"] .exec')?.textContent).toBe("executable");
    expect(el.querySelector('tr[data-path="catalog.bin"] .binary')?.textContent).toBe("binary 3.5 MB");
    expect(el.querySelector('tr[data-path="link"] .symlink')).toBeTruthy();
    expect(el.querySelector('tr[data-path="new.txt"]')?.textContent).toContain("from old.txt");
    expect(el.querySelector(".risk-why")?.textContent).toContain("adds an executable file (run.sh)");
    expect(el.querySelector(".moves")?.textContent).toContain("the commit made on approval");
  });

  it("says when the person's own git shows the repository otherwise", async () => {
    const note =
      "this repository has grafts (info/grafts): git log here shows other parents than the commits have; Sluice shows the real history";
    const grafted = { ...hardReset, id: "g1", sealed: { ...hardReset.sealed, indirections: [note] } };
    stubFetch({
      "GET /api/proposals": { body: [grafted] },
      "GET /api/proposals/g1/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes("g1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /reset in shop/i });
    expect(within(el).getByRole("note", { name: /shows this repository otherwise/ }).textContent).toBe(note);
  });

  it("marks a card stale from its preflight, disables Approve and offers send back", async () => {
    const calls = stubFetch({
      "GET /api/proposals": { body: [commit] },
      "GET /api/proposals/c1/preflight": {
        body: {
          stale: true,
          moved: [{ ref: "refs/heads/main", from: "1".repeat(40), to: "2".repeat(40) }],
          changed: [],
          notes: [],
        },
      },
      "POST /api/proposals/c1/send-back": { body: { ...commit, state: "rejected" } },
      ...diffRoutes("c1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /commit in shop/i });
    await waitFor(() => expect(el.querySelector(".stale")?.textContent).toContain("main moved from 1111111111"));
    const approve = within(el).getByRole("button", { name: "Approve" }) as HTMLButtonElement;
    expect(approve.disabled).toBe(true);
    fireEvent.click(within(el).getByRole("button", { name: "Send back to the agent" }));
    await waitFor(() => expect(calls.some((c) => c.method === "POST" && c.url === "/api/proposals/c1/send-back")).toBe(true));
  });

  it("shows workspace evidence apart from the agent's words, red when a run failed", async () => {
    const ws = card({
      id: "w1",
      reason: "All tests pass, trust me",
      evidence: {
        workspaceId: "ws1",
        failed: true,
        failedRuns: 1,
        lastFailed: true,
        runs: [
          {
            id: "r1",
            argv: ["sh", "test.sh"],
            exitCode: 1,
            oomKilled: false,
            durationMs: 1200,
            truncated: false,
            running: false,
            interrupted: false,
            timedOut: false,
            outputStopped: false,
            verdict: "",
            ociRuntime: "",
            stdout: "FAIL add",
            stderr: "",
            tests: { passed: 0, failed: 1, skipped: 0, format: "junit" },
          },
        ],
      },
    });
    stubFetch({
      "GET /api/proposals": { body: [ws] },
      "GET /api/proposals/w1/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes("w1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /merge in shop/i });
    const ev = within(el).getByRole("region", { name: "Workspace evidence" });
    expect(ev.dataset.failed).toBe("true");
    expect(ev.textContent).toContain("Recorded by Sluice");
    expect(ev.textContent).toContain("tests: 0 passed, 1 failed, 0 skipped (junit)");
    expect(ev.textContent).not.toContain("trust me");
    expect(ev.querySelector("details pre")?.textContent).toBe("FAIL add");
  });

  it("says when a committed file was edited after the proposal, without blocking", async () => {
    stubFetch({
      "GET /api/proposals": { body: [commit] },
      "GET /api/proposals/c1/preflight": {
        body: { stale: false, moved: [], changed: [], notes: ["run.sh changed on disk since it was proposed"] },
      },
      ...diffRoutes("c1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /commit in shop/i });
    await waitFor(() => expect(el.querySelector(".preflight-note")?.textContent).toContain("run.sh changed"));
    // Approve waits for the diff to be on screen, then the note does not
    // hold it back.
    await waitFor(() => expect(el.querySelector(".d2h-file-wrapper")).not.toBeNull());
    await waitFor(() => expect((within(el).getByRole("button", { name: "Approve" }) as HTMLButtonElement).disabled).toBe(false));
    expect(el.querySelector(".preflight-note")?.textContent).toContain("run.sh changed");
  });
});

describe("SealedOutcome of a confined session's commit", () => {
  const sealed = {
    effect: "lands" as const,
    before: tree1,
    after: tree2,
    files: [
      { status: "modified" as const, path: "src/cart.go", size: 40 },
      { status: "added" as const, path: "src/tax.go", size: 20 },
      { status: "modified" as const, path: "README.md", size: 10 },
    ],
    moves: [{ ref: "refs/heads/main", from: "c".repeat(40) }],
    checkout: ["src/cart.go", "src/tax.go"],
    keeps: ["README.md: you have uncommitted changes to it; it stays as it is, so after the commit it shows as your change against it"],
  };

  it("lists the files of the checkout it writes apart from the ones it leaves as they are", async () => {
    const { SealedOutcome } = await import("./SealedOutcome");
    render(<SealedOutcome sealed={sealed} facts={opFacts({ writesCheckoutWhenConfined: true })} confined />);
    const box = screen.getByRole("region", { name: "Your checkout" });
    expect(within(box).getByRole("heading", { name: "Your checkout" })).toBeTruthy();
    expect(box.querySelector(".checkout-writes")?.textContent).toBe(
      "Approving writes these 2 files of your checkout with the committed content: src/cart.go, src/tax.go",
    );
    const kept = box.querySelector(".checkout-keeps")!;
    expect(kept.textContent).toMatch(/^Not written, because you have work of your own in it:/);
    expect(within(kept as HTMLElement).getByText("README.md", { selector: "code" })).toBeTruthy();
    expect(kept.textContent).toContain("README.md: you have uncommitted changes to it; it stays as it is");
    // The keeps are said once, in the checkout's words, not as "Left alone".
    expect(document.querySelector(".keeps")).toBeNull();
    expect(document.body.textContent).not.toContain("Left alone");
  });

  it("names the files it leaves alone when it writes none", async () => {
    const { SealedOutcome } = await import("./SealedOutcome");
    render(<SealedOutcome sealed={{ ...sealed, checkout: [] }} facts={opFacts({ writesCheckoutWhenConfined: true })} confined />);
    const box = screen.getByRole("region", { name: "Your checkout" });
    expect(box.querySelector(".checkout-writes")).toBeNull();
    expect(box.querySelector(".checkout-keeps")?.textContent).toContain("README.md");
  });

  it("keeps an ordinary operation's keeps as they were", async () => {
    const { SealedOutcome } = await import("./SealedOutcome");
    render(<SealedOutcome sealed={{ keeps: ["feature (not merged)"] }} facts={opFacts()} />);
    expect(screen.queryByRole("region", { name: "Your checkout" })).toBeNull();
    expect(document.querySelector(".keeps")?.textContent).toBe("Left alone: feature (not merged)");
  });

  it("shows the section on a confined card", async () => {
    const c = card({
      id: "s1",
      op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }),
      origin: { session: "x1", runtime: "bubblewrap" },
      confinement: "confined session (bubblewrap; network: none), session 6b794f95",
      sealed,
    });
    stubFetch({
      "GET /api/proposals": { body: [c] },
      "GET /api/proposals/s1/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes("s1", [sampleDiff]),
    });
    await renderPending();
    const el = await screen.findByRole("article", { name: /commit in shop/i });
    expect(within(el).getByRole("region", { name: "Your checkout" }).textContent).toContain("src/tax.go");
  });
});
