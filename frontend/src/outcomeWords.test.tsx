// Each sentence a card and History say about a sealed outcome, against
// fixtures shaped as the app seals them (core/apply/sentences_test.go
// checks the same sentences from real repositories).
import { cleanup, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Sealed } from "./api";
import { count, filesChangedTitle, sealedDiffFiles, workKinds } from "./outcomeWords";
import { SealedOutcome } from "./SealedOutcome";
import { card, diffRoutes, sampleDiff, secondDiff, stubEventSource, stubFetch, opFacts } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const sha = (c: string) => c.repeat(40);

// A hard reset of main to base: README.md holds one uncommitted line; the
// dropped commit added five files. The reset changes six files; the work
// it throws away is in one.
const hardReset: Sealed = {
  effect: "loses",
  before: sha("a"),
  after: sha("b"),
  files: [
    { status: "modified", path: "README.md", size: 30 },
    ...[1, 2, 3, 4, 5].map((i) => ({ status: "deleted" as const, path: `c${i}.txt`, size: 7 })),
  ],
  uncommitted: ["README.md"],
  work: [{ status: "modified", path: "README.md", size: 30 }],
  lost: { count: 1, commits: [{ sha: sha("c"), subject: "five files" }] },
  moves: [{ ref: "refs/heads/main", from: sha("c"), to: sha("d") }],
};

// A discard of every kind of work.
const discardAll: Sealed = {
  effect: "loses",
  before: sha("a"),
  after: sha("b"),
  files: [],
  uncommitted: ["README.md", "new.txt", "gone.txt"],
  untracked: ["u1.txt", "u2.txt"],
  work: [
    { status: "modified", path: "README.md", size: 30 },
    { status: "added", path: "new.txt", size: 9 },
    { status: "deleted", path: "gone.txt", size: 0 },
    { status: "added", path: "u1.txt", size: 3 },
    { status: "added", path: "u2.txt", size: 3 },
  ],
};

const mergedDelete: Sealed = {
  moves: ["done-1", "done-2", "done-3"].map((b) => ({ ref: `refs/heads/${b}`, from: sha("e"), delete: true })),
};

function losses(el: HTMLElement) {
  return within(el).getByRole("region", { name: "What is lost" });
}

describe("what is lost, by kind", () => {
  it("counts a hard reset's work in one file as one modified file, and its commit apart", () => {
    const { container } = render(<SealedOutcome sealed={hardReset} facts={opFacts()} tense="future" />);
    const l = losses(container);
    expect(l.querySelector("h3")!.textContent).toBe("Lost if approved");
    const work = l.querySelectorAll(".lost-work");
    expect(work).toHaveLength(1);
    expect(work[0].textContent).toBe("Uncommitted changes to 1 modified file are thrown away: README.md");
    expect(l.querySelector(".lost-commits")!.textContent).toContain("1 commit becomes unreachable from the branch");
    expect(l.textContent).not.toMatch(/6 file|file\(s\)|commit\(s\)/);
  });

  it("lists modified, new, deleted and untracked files apart, each with its count", () => {
    const { container } = render(<SealedOutcome sealed={discardAll} facts={opFacts()} tense="future" />);
    const lines = Array.from(losses(container).querySelectorAll(".lost-work")).map((p) => p.textContent);
    expect(lines).toEqual([
      "Uncommitted changes to 1 modified file are thrown away: README.md",
      "1 new file, never committed, is removed: new.txt",
      "1 file you deleted without a commit comes back: gone.txt",
      "2 untracked files are deleted or overwritten: u1.txt, u2.txt",
    ]);
  });

  it("speaks in the past once the proposal landed, and conditionally when it never ran", () => {
    const { container, rerender } = render(<SealedOutcome sealed={hardReset} facts={opFacts()} tense="past" />);
    let l = losses(container);
    expect(l.querySelector("h3")!.textContent).toBe("Lost");
    expect(l.querySelector(".lost-work")!.textContent).toBe("Uncommitted changes to 1 modified file were thrown away: README.md");
    expect(l.querySelector(".lost-commits")!.textContent).toContain("1 commit became unreachable from the branch");
    rerender(<SealedOutcome sealed={hardReset} facts={opFacts()} tense="unrealized" />);
    l = losses(container);
    expect(l.querySelector("h3")!.textContent).toBe("Would have been lost");
    expect(l.querySelector(".lost-work")!.textContent).toContain("would have been thrown away");
  });

  it("reads an outcome sealed before kinds were recorded as changed files", () => {
    const old: Sealed = { ...hardReset, work: undefined };
    expect(workKinds(old)).toEqual([{ kind: "changed", what: "changed file", paths: ["README.md"] }]);
  });
});

describe("branch deletion and fast-forwards", () => {
  it("says a merged branch deletion loses nothing, and has no loss section", () => {
    const { container, rerender } = render(<SealedOutcome sealed={mergedDelete} facts={opFacts({ deletesBranches: true })} tense="future" />);
    expect(within(container).queryByRole("region", { name: "What is lost" })).toBeNull();
    expect(container.querySelector(".nothing-lost")!.textContent).toMatch(/^Nothing is lost: every commit on these branches/);
    rerender(<SealedOutcome sealed={mergedDelete} facts={opFacts({ deletesBranches: true })} tense="past" />);
    expect(container.querySelector(".nothing-lost")!.textContent).toMatch(/^Nothing was lost/);
  });

  it("says a fast-forward rebase rewrites nothing", () => {
    const ff: Sealed = { effect: "lands", fastForward: true, moves: [{ ref: "refs/heads/feature", from: sha("1"), to: sha("2") }] };
    const { container } = render(<SealedOutcome sealed={ff} facts={opFacts({ replaysCommits: true })} tense="future" />);
    expect(container.querySelector(".ff")!.textContent).toBe(
      "Fast-forward: the branch only moves forward; no commit is rewritten.",
    );
    expect(container.textContent).not.toMatch(/rewrites/);
  });

  it("asks no word for a merged branch deletion, and the branch's name for a discard", async () => {
    const del = card({
      id: "d1",
      op: "branch_delete", label: "branch delete", subjectBranch: "done-1, done-2, done-3", opFacts: opFacts({ deletesBranches: true }),
      risk: "medium",
      riskWhy:
        "deletes 3 branches (done-1, done-2 and done-3); every commit on them is in the checked-out branch or in an upstream, so nothing is lost",
      args: { branches: ["done-1", "done-2", "done-3"] },
      sealed: mergedDelete,
      tense: "future",
    });
    const discard = card({
      id: "d2",
      op: "discard", label: "discard", subjectBranch: "", opFacts: opFacts(),
      risk: "destructive",
      destructive: true,
      confirmWord: "main",
      confirmWhat: "the name of the branch whose checkout this changes",
      riskWhy: "throws away uncommitted work in 1 modified file, 1 new file, 1 deleted file and 2 untracked files",
      args: { paths: ["."], untracked: true },
      pinned: { refs: { HEAD: sha("1") } },
      sealed: discardAll,
      tense: "future",
    });
    stubFetch({
      "GET /api/proposals": { body: [del, discard] },
      "GET /api/proposals/d1/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      "GET /api/proposals/d2/preflight": { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes("d1", []),
      ...diffRoutes("d2", [sampleDiff]),
    });
    const { ProposalCard } = await import("./ProposalCard");
    const { container, rerender } = render(<ProposalCard card={del} />);
    expect(container.querySelector(".confirm-input")).toBeNull();
    expect(container.querySelector(".approve")!.textContent).not.toMatch(/destructive/i);
    expect(container.querySelector(".risk-why")!.textContent).toContain("so nothing is lost");
    rerender(<ProposalCard card={discard} />);
    await waitFor(() => expect(container.querySelector(".confirm-input")).toBeTruthy());
    const why = container.querySelector(`#card-d2-confirm-why`)!.textContent!;
    expect(why).toContain("main, the name of the branch whose checkout this changes, here.");
    expect(why).not.toMatch(/discard|operation/);
  });
});

describe("counts are final before they are shown", () => {
  it("writes counts as a person reads them", () => {
    expect(count(1, "file")).toBe("1 file");
    expect(count(1000, "file")).toBe("1,000 files");
    expect(count(3, "branch")).toBe("3 branches");
  });

  it("takes the diff's file count from the sealed outcome", () => {
    expect(sealedDiffFiles(hardReset)).toBe(6);
    expect(sealedDiffFiles({ steps: [hardReset, { effect: "lands", files: [{ status: "added", path: "x", size: 1 }] }] })).toBe(7);
    expect(sealedDiffFiles({ kept: [{ status: "modified", path: "k", size: 1 }], files: [] })).toBe(1);
    expect(sealedDiffFiles(undefined)).toBeUndefined();
    expect(filesChangedTitle(56, 1000, false)).toBe("Files changed (1,000) · 56 listed so far");
    expect(filesChangedTitle(1000, 1000, true)).toBe("Files changed (1,000)");
    expect(filesChangedTitle(56, undefined, false)).toBe("Files changed (56 so far)");
  });

  it("shows the sealed count in the diff's file list while the diff streams", async () => {
    stubFetch(diffRoutes("big", [sampleDiff, secondDiff]));
    const { DiffView } = await import("./DiffView");
    const { container } = render(<DiffView proposalId="big" files={1000} />);
    await waitFor(() => expect(container.querySelector(".d2h-file-list-title")).toBeTruthy(), { timeout: 10_000 });
    // One file of the first chunk is in; the count is the whole diff's.
    expect(container.querySelector(".d2h-file-list-title")!.textContent).toBe("Files changed (1,000) · 1 listed so far");
  });
});

describe("History", () => {
  it("says what a landed proposal lost, in the past tense", async () => {
    const landed = card({
      id: "h9",
      op: "reset", label: "reset", subjectBranch: "", opFacts: opFacts(),
      state: "completed",
      risk: "destructive",
      destructive: true,
      tense: "past",
      riskWhy: "threw away uncommitted work in 1 modified file and made 1 commit unreachable",
      lossWhy: "threw away uncommitted work in 1 modified file and made 1 commit unreachable",
      losses: { modified: 1, added: 0, deleted: 0, untracked: 0, changed: 0, commits: 1 },
      sealed: hardReset,
      outcome: { message: "reset main to base", at: "2026-01-01T10:01:00.000Z" },
    });
    stubFetch({ "GET /api/history?limit=200": { body: [landed] } });
    const { HistoryView } = await import("./HistoryView");
    render(<HistoryView />);
    const line = await screen.findByText("Threw away uncommitted work in 1 modified file and made 1 commit unreachable.");
    expect(line.className).toBe("loss-why");
  });
});
