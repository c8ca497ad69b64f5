// What the UI says of an operation is what the app says of it: the label,
// the branch a row is called by and the facts its outcome is said with
// come from the operation's definition in Go, never from a table here.
import { cleanup, render, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { QueueRow, subjectOf } from "./QueueRow";
import { SealedOutcome } from "./SealedOutcome";
import { card, diffOnScreen, diffRoutes, opFacts, sampleDiff, status, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

describe("an operation's words", () => {
  it("shows the label the app gives, not one made of the op's name", () => {
    const c = card({
      op: "branch_delete",
      label: "tidy-up of branches",
      subjectBranch: "",
      opFacts: opFacts({ deletesBranches: true }),
      args: { branches: ["old-1"] },
      reason: "",
    });
    const { container } = render(<QueueRow card={c} open={false} stale={false} onOpen={() => {}} />);
    expect(container.querySelector(".op")?.textContent).toBe("tidy-up of branches");
    expect(container.textContent).not.toContain("branch delete");
    // With no message, no branch the app names and no reason, the row is
    // called by the label.
    expect(subjectOf(c)).toBe("tidy-up of branches");
    // The branch the app names calls the row, whatever the arguments hold.
    expect(subjectOf({ ...c, subjectBranch: "old-1 and more" })).toBe("old-1 and more");
  });

  it("says the outcome's commits with the app's facts, whatever the op is called", () => {
    const sealed = { effect: "lands" as const, commits: { count: 2, commits: [{ sha: "a".repeat(40), subject: "One" }, { sha: "b".repeat(40), subject: "Two" }] } };
    const { container, rerender } = render(<SealedOutcome sealed={sealed} facts={opFacts({ sendsCommits: true })} tense="future" />);
    expect(container.querySelector(".incoming-commits p")?.textContent).toBe("2 commits the remote receives:");
    rerender(<SealedOutcome sealed={{ ...sealed, fastForward: true }} facts={opFacts({ replaysCommits: true })} tense="past" />);
    expect(container.querySelector(".incoming-commits p")?.textContent).toBe("2 commits replayed onto the new base:");
    expect(container.querySelector(".ff")?.textContent).toBe("Fast-forward: the branch only moved forward; no commit was rewritten.");
  });

  it("names a plan's steps by the labels the app gives them", async () => {
    const plan = card({
      id: "p5",
      op: "plan",
      label: "plan of two",
      stepLabels: ["first step", "second step"],
      subjectBranch: "feature",
      opFacts: opFacts(),
      args: {
        steps: [
          { op: "rebase", args: { branch: "feature", onto: "main" } },
          { op: "merge", args: { source: "feature", target: "main", strategy: "merge" } },
        ],
      },
    });
    stubFetch({ "GET /api/proposals": { body: [plan] }, ...diffRoutes("p5", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const el = await waitFor(() => {
      const e = document.getElementById("card-p5");
      if (!e) throw new Error("no card yet");
      return e;
    });
    await diffOnScreen("p5");
    expect(Array.from(el.querySelectorAll(".steps > li > strong")).map((s) => s.textContent)).toEqual(["first step", "second step"]);
    expect(el.querySelector(".op")?.textContent).toBe("plan of two");
  });
});
