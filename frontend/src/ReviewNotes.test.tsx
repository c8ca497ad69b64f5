import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Preflight } from "./api";
import { card, diffRoutes, sampleDiff, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
  localStorage.clear();
});

const clear: Preflight = { stale: false, moved: [], changed: [], notes: [], blockers: [], notices: [] };

// sampleDiff changes line 2 of src/checkout.go: old line 2 is deleted, new
// line 2 added.
async function renderCard(extra = {}) {
  const c = card({ files: ["src/checkout.go"], filesKnown: true });
  const calls = stubFetch({
    "GET /api/proposals/p1/preflight": { body: clear },
    ...diffRoutes("p1", [sampleDiff]),
    "POST /api/proposals/p1/reject": { body: { ...c, state: "rejected" } },
    ...extra,
  });
  const { ProposalCard } = await import("./ProposalCard");
  const view = render(<ProposalCard card={c} />);
  await waitFor(() => expect(document.querySelector(".diff-body .d2h-file-wrapper")).toBeTruthy());
  return { calls, view };
}

/** The line-number cell of line n on one side of a side-by-side diff. */
function sideCell(side: 0 | 1, n: number): HTMLElement {
  const table = document.querySelectorAll(".d2h-file-side-diff")[side];
  const cell = Array.from(table.querySelectorAll<HTMLElement>(".d2h-code-side-linenumber")).find(
    (c) => c.textContent?.trim() === String(n),
  );
  if (!cell) throw new Error(`no line ${n} on side ${side}`);
  return cell;
}

function write(text: string) {
  const editor = document.querySelector<HTMLElement>(".note-editor")!;
  fireEvent.change(editor.querySelector("textarea")!, { target: { value: text } });
  fireEvent.click(screen.getByRole("button", { name: "Add note" }));
}

describe("notes for the agent on a card's diff", () => {
  it("adds notes to lines and to a file, shows them inline and above Reject, and Reject sends them", async () => {
    const { calls } = await renderCard();

    // The added line, on the right (the new file).
    fireEvent.click(sideCell(1, 2));
    expect(screen.getByRole("group", { name: "Note on src/checkout.go, line 2" })).toBeTruthy();
    write("Total must stay 1: the tests say so");
    // The deleted line, on the left (the old file).
    fireEvent.click(sideCell(0, 2));
    expect(screen.getByRole("group", { name: "Note on src/checkout.go, old line 2" })).toBeTruthy();
    write("keep this one");
    // An unchanged line on the left is named in the new file.
    fireEvent.click(sideCell(0, 3));
    expect(screen.getByRole("group", { name: "Note on src/checkout.go, line 3" })).toBeTruthy();
    fireEvent.keyDown(document.querySelector(".note-editor")!, { key: "Escape" });
    expect(document.querySelector(".note-editor")).toBeNull();
    // The whole file, from its header's Note button.
    fireEvent.click(screen.getByRole("button", { name: "Add a note on src/checkout.go for the agent" }));
    write("explain the change in the commit message");

    // Inline, each where it belongs: the line's note in its own side, a
    // hidden twin in the other side keeping the two tables in line.
    const inline = Array.from(document.querySelectorAll<HTMLElement>(".review-note-inline"))
      .filter((b) => b.style.visibility !== "hidden")
      .map((b) => b.textContent);
    // In the page's order: under the file's header, then the old file's
    // table on the left, then the new file's on the right.
    expect(inline).toEqual([
      "Note: explain the change in the commit message",
      "Note: keep this one",
      "Note: Total must stay 1: the tests say so",
    ]);
    const rightRows = document.querySelectorAll(".d2h-file-side-diff")[1].querySelectorAll("tr");
    const leftRows = document.querySelectorAll(".d2h-file-side-diff")[0].querySelectorAll("tr");
    expect(rightRows.length).toBe(leftRows.length);
    expect(document.querySelector(".review-note-file")?.previousElementSibling?.classList).toContain("d2h-file-header");

    // Listed in the decision form, above Reject.
    const list = screen.getByRole("region", { name: "3 notes for the agent, sent with Reject" });
    expect(Array.from(list.querySelectorAll("li")).map((li) => li.querySelector(".review-note-where")!.textContent)).toEqual([
      "src/checkout.go, line 2",
      "src/checkout.go, old line 2",
      "src/checkout.go",
    ]);
    expect(list.compareDocumentPosition(document.querySelector("#card-p1 .reject")!) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();

    fireEvent.change(document.querySelector(".note-input")!, { target: { value: "not like this" } });
    fireEvent.click(document.querySelector<HTMLButtonElement>("#card-p1 .reject")!);
    await waitFor(() => expect(calls.some((c) => c.url === "/api/proposals/p1/reject")).toBe(true));
    expect(calls.find((c) => c.url === "/api/proposals/p1/reject")!.body).toEqual({
      digest: card().digest,
      note: "not like this",
      comments: [
        { path: "src/checkout.go", line: 2, side: "new", note: "Total must stay 1: the tests say so" },
        { path: "src/checkout.go", line: 2, side: "old", note: "keep this one" },
        { path: "src/checkout.go", line: 0, note: "explain the change in the commit message" },
      ],
    });
    // Sent: the card's notes are gone.
    const { reviewNotes } = await import("./ReviewNotes");
    expect(reviewNotes("p1")).toEqual([]);
  });

  it("keeps the notes through a redraw, takes a line from a file's editor, and removes a note", async () => {
    await renderCard();
    fireEvent.click(sideCell(1, 2));
    write("first");
    // Line by line redraws the diff: the note is drawn again, in one table.
    fireEvent.click(screen.getByRole("button", { name: "Line by line" }));
    await waitFor(() => expect(document.querySelector(".d2h-file-side-diff")).toBeNull());
    await waitFor(() => expect(document.querySelectorAll(".review-note-inline")).toHaveLength(1));
    const row = document.querySelector(".review-note-row")!.previousElementSibling!;
    expect(row.querySelector(".line-num2")?.textContent).toBe("2");

    // A deleted line, in line-by-line layout, is in the old file.
    const deleted = Array.from(document.querySelectorAll<HTMLElement>(".d2h-code-linenumber")).find(
      (c) => c.querySelector(".line-num1")?.textContent === "2" && c.querySelector(".line-num2")?.textContent === "",
    )!;
    fireEvent.click(deleted);
    expect(screen.getByRole("group", { name: "Note on src/checkout.go, old line 2" })).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Cancel" }));

    // From the file's editor, by keyboard: a line and its side.
    fireEvent.click(screen.getByRole("button", { name: "Add a note on src/checkout.go for the agent" }));
    fireEvent.change(document.querySelector(".note-line-input")!, { target: { value: "1" } });
    fireEvent.change(document.querySelector(".note-side-input")!, { target: { value: "old" } });
    write("why touch the package line?");
    const { reviewNotes } = await import("./ReviewNotes");
    expect(reviewNotes("p1")).toEqual([
      { path: "src/checkout.go", line: 2, side: "new", note: "first" },
      { path: "src/checkout.go", line: 1, side: "old", note: "why touch the package line?" },
    ]);

    fireEvent.click(screen.getByRole("button", { name: "Remove the note on src/checkout.go, line 2" }));
    expect(reviewNotes("p1")).toEqual([{ path: "src/checkout.go", line: 1, side: "old", note: "why touch the package line?" }]);
    await waitFor(() => expect(document.querySelectorAll(".review-note-inline")).toHaveLength(1));
  });

  it("refuses a blank note, one over 2,000 bytes and a line that is not a number", async () => {
    await renderCard();
    fireEvent.click(screen.getByRole("button", { name: "Add a note on src/checkout.go for the agent" }));
    const save = screen.getByRole("button", { name: "Add note" }) as HTMLButtonElement;
    const text = document.querySelector<HTMLTextAreaElement>(".note-editor textarea")!;
    fireEvent.change(text, { target: { value: "  \n" } });
    expect(save.disabled).toBe(true);
    fireEvent.change(text, { target: { value: "é".repeat(1001) } });
    expect(save.disabled).toBe(true);
    expect(screen.getByRole("alert").textContent).toBe("The note is 2002 bytes; at most 2000.");
    fireEvent.change(text, { target: { value: "é".repeat(1000) } });
    expect(save.disabled).toBe(false);
    fireEvent.change(document.querySelector(".note-line-input")!, { target: { value: "two" } });
    expect(save.disabled).toBe(true);
    const { reviewNotes } = await import("./ReviewNotes");
    expect(reviewNotes("p1")).toEqual([]);
  });

  it("takes no notes on a card that is not pending, and a rejected card lists the notes it sent", async () => {
    const c = card({
      state: "rejected",
      decision: {
        by: "owner:web",
        approved: false,
        at: new Date().toISOString(),
        comments: [
          { path: "src/checkout.go", line: 2, side: "old", note: "keep this one" },
          { path: "src/checkout.go", line: 0, note: "explain it" },
        ],
      },
    });
    stubFetch({ ...diffRoutes("p1", [sampleDiff]) });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={c} />);
    await waitFor(() => expect(document.querySelector(".diff-body .d2h-file-wrapper")).toBeTruthy());
    expect(document.querySelector(".review-note-add")).toBeNull();
    fireEvent.click(sideCell(1, 2));
    expect(document.querySelector(".note-editor")).toBeNull();
    const sent = screen.getByRole("list", { name: "Notes sent to the agent" });
    expect(Array.from(sent.querySelectorAll("li")).map((li) => li.textContent)).toEqual([
      "src/checkout.go, old line 2 keep this one",
      "src/checkout.go explain it",
    ]);
  });

  it("sends the notes with a reject made with the r key, after its undo window", async () => {
    localStorage.setItem("sluice.rejectUndoMs", "600000");
    const c = card({ files: ["src/checkout.go"], filesKnown: true });
    let rejected = false;
    const calls = stubFetch({
      "GET /api/proposals": () => ({ body: rejected ? [] : [c] }),
      "GET /api/proposals/p1/preflight": { body: clear },
      ...diffRoutes("p1", [sampleDiff]),
      "POST /api/proposals/p1/reject": () => ((rejected = true), { body: { ...c, state: "rejected" } }),
      "GET /api/proposals/p1": { body: { ...c, state: "rejected" } },
    });
    const { PendingView } = await import("./PendingView");
    const { status } = await import("./testing");
    render(<PendingView status={status} />);
    await waitFor(() => expect(document.querySelector("#card-p1 .diff-body .d2h-file-wrapper")).toBeTruthy());
    await waitFor(() => expect(document.querySelector("#card-p1 .review-note-add")).toBeTruthy());
    fireEvent.click(screen.getByRole("button", { name: "Add a note on src/checkout.go for the agent" }));
    write("explain it");
    fireEvent.keyDown(document.body, { key: "r" });
    fireEvent.click(await screen.findByRole("button", { name: "Reject now" }));
    await waitFor(() => expect(calls.some((x) => x.url === "/api/proposals/p1/reject")).toBe(true));
    expect(calls.find((x) => x.url === "/api/proposals/p1/reject")!.body).toEqual({
      digest: c.digest,
      note: "",
      comments: [{ path: "src/checkout.go", line: 0, note: "explain it" }],
    });
  });
});
