import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { QueueRow, filesWords, matchesSearch, subjectOf } from "./QueueRow";
import { card, opFacts } from "./testing";

afterEach(() => cleanup());

describe("a queue row's subject", () => {
  it("is the commit message's first line", () => {
    expect(subjectOf(card({ op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "\nFix the cart total\n\nThe total forgot the tax." } }))).toBe(
      "Fix the cart total",
    );
    // A plan says the message of its first step that has one.
    expect(
      subjectOf(
        card({
          op: "plan", label: "plan", stepLabels: ["branch", "commit"], subjectBranch: "agent/x", opFacts: opFacts(),
          args: { steps: [{ op: "branch", args: { name: "agent/x" } }, { op: "commit", args: { message: "Add x" } }] },
        }),
      ),
    ).toBe("Add x");
    // A sealed single commit (a workspace's, a push's) says its subject.
    expect(
      subjectOf(
        card({ op: "push", label: "push", subjectBranch: "main", opFacts: opFacts({ sendsCommits: true }), args: { remote: "origin", branch: "main" }, sealed: { commits: { count: 1, commits: [{ sha: "a", subject: "Ship it" }] } } }),
      ),
    ).toBe("Ship it");
  });

  it("is the branch when there is no message", () => {
    expect(subjectOf(card({ op: "branch", label: "branch", subjectBranch: "agent/b", opFacts: opFacts(), args: { name: "agent/b", startPoint: "abc" } }))).toBe("agent/b");
    expect(subjectOf(card({ op: "merge", label: "merge", subjectBranch: "fix → main", opFacts: opFacts(), args: { source: "fix", target: "main", strategy: "merge" } }))).toBe("fix → main");
    expect(subjectOf(card({ op: "branch_delete", label: "branch delete", subjectBranch: "old-1, old-2", opFacts: opFacts({ deletesBranches: true }), args: { branches: ["old-1", "old-2"] } }))).toBe("old-1, old-2");
    expect(subjectOf(card({ op: "rebase", label: "rebase", subjectBranch: "feature", opFacts: opFacts({ replaysCommits: true }), args: { branch: "feature", onto: "main" } }))).toBe("feature");
  });

  it("is the first words of the reason when nothing else names the change", () => {
    expect(subjectOf(card({ op: "patch", label: "patch", subjectBranch: "", opFacts: opFacts(), args: { patch: "…", target: "worktree" }, reason: "Tidy the README" }))).toBe(
      "Tidy the README",
    );
    // The branch a reset or patch names is only the one checked out.
    expect(subjectOf(card({ op: "reset", label: "reset", subjectBranch: "", opFacts: opFacts(), args: { mode: "hard", target: "HEAD", branch: "main" }, reason: "Drop the experiment." }))).toBe(
      "Drop the experiment.",
    );
    expect(
      subjectOf(
        card({
          op: "discard", label: "discard", subjectBranch: "", opFacts: opFacts(),
          args: { paths: ["a"] },
          reason: "Throw away the scratch files I made while testing the parser yesterday evening",
        }),
      ),
    ).toBe("Throw away the scratch files I made while…");
    expect(subjectOf(card({ op: "patch", label: "patch", subjectBranch: "", opFacts: opFacts(), args: { patch: "…" }, reason: "Two lines\nof reason" }))).toBe("Two lines…");
  });
});

describe("a queue row", () => {
  it("counts the files, from the sealed outcome when there is one", () => {
    expect(filesWords(card({ files: ["a"] }))).toBe("1 file");
    expect(filesWords(card({ files: [], filesKnown: false }))).toBe("files unknown");
    expect(
      filesWords(
        card({
          files: ["a"],
          sealed: { files: ["a", "b", "c"].map((path) => ({ status: "added" as const, path, size: 1 })) },
        }),
      ),
    ).toBe("3 files");
  });

  it("matches every word searched in its subject, repository, agent or files", () => {
    const c = card({ op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Fix the cart" }, agent: "codex", files: ["src/cart.go", "docs/tax.md"] });
    expect(matchesSearch(c, "")).toBe(true);
    expect(matchesSearch(c, "CART")).toBe(true);
    expect(matchesSearch(c, "shop codex")).toBe(true);
    expect(matchesSearch(c, "tax.md")).toBe(true);
    expect(matchesSearch(c, "codex gemini")).toBe(false);
  });

  it("marks a stale card with what moved, a colliding one, and one that left", () => {
    const { container, rerender } = render(
      <QueueRow
        card={card({ collisions: [{ proposalId: "p7", agent: "cursor", files: ["src/cart.go"] }] })}
        open={false}
        stale
        staleWhy="main moved"
        onOpen={() => {}}
      />,
    );
    expect(container.querySelector(".mark-stale")?.getAttribute("title")).toBe("main moved");
    expect(container.querySelector(".mark-collision")?.textContent).toBe("collides ×1");
    rerender(<QueueRow card={card({ state: "expired" })} open={false} stale onOpen={() => {}} />);
    // A card no longer waiting is not marked stale; it says what became of it.
    expect(container.querySelector(".mark-stale")).toBeNull();
    expect(container.querySelector(".q-gone")?.textContent).toBe("expired before anyone decided");
  });
});
