import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import type { Card } from "./api";
import { FakeEventSource, card, diffOnScreen, diffRoutes, findEl, sampleDiff, status, stubEventSource, stubFetch, opFacts } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

// A fresh module graph per test: the API module caches the CSRF token.
async function renderPending() {
  const { PendingView } = await import("./PendingView");
  return render(<PendingView status={status} />);
}

function noticeEl(id: string): HTMLElement {
  const el = document.getElementById(`decided-${id}`);
  if (!el) throw new Error(`no notice for ${id}`);
  return el;
}

function rowEl(id: string): HTMLElement {
  const el = document.querySelector<HTMLElement>(`.queue-item[data-id='${id}'] .queue-row`);
  if (!el) throw new Error(`no row ${id}`);
  return el;
}

function cardEl(id: string): HTMLElement {
  const el = document.getElementById(`card-${id}`);
  if (!el) throw new Error(`no card ${id}`);
  return el;
}

const destructive = card({
  id: "p9",
  op: "reset", label: "reset", subjectBranch: "", opFacts: opFacts(),
  risk: "destructive",
  destructive: true,
  confirmWord: "main",
  reason: "Drop the broken commits",
  args: { mode: "hard", target: "HEAD~2", branch: "main" },
  pinned: { refs: { "refs/heads/main": "3333333333333333333333333333333333333333" } },
});

describe("PendingView", () => {
  it("renders every field of a card", async () => {
    const c = card({
      collisions: [{ proposalId: "p7", agent: "cursor", files: ["src/cart.go"] }],
      pinned: {
        refs: { "refs/heads/main": "1111111111111111111111111111111111111111" },
        worktreeFingerprint: "wt:abcdefabcdefabcdef",
      },
    });
    stubFetch({ "GET /api/proposals": { body: [c] }, ...diffRoutes("p1", [sampleDiff]) });
    await renderPending();

    const el = await screen.findByRole("article", { name: /merge in shop/i });
    expect(el.id).toBe("card-p1");
    expect(el.dataset.state).toBe("pending");
    const q = within(el);
    expect(q.getByText("claude-code")).toBeTruthy();
    expect(q.getByText("shop").getAttribute("title")).toBe("/home/me/src/shop");
    expect(q.getByText("merge", { selector: ".op" })).toBeTruthy();
    expect(q.getByText("medium").closest(".badge")?.textContent).toBe("Risk: medium");
    expect(q.getByText("Merge the checkout fix into main")).toBeTruthy();
    const sha = q.getByText("1111111111");
    expect(sha.getAttribute("title")).toBe("1111111111111111111111111111111111111111");
    expect(q.getByRole("button", { name: "Copy full SHA of refs/heads/main" })).toBeTruthy();
    expect(q.getByText("wt:abcdefa")).toBeTruthy();
    expect(q.getByText("0123456789ab").getAttribute("title")).toBe(c.digest);
    expect(q.getByText("src/checkout.go")).toBeTruthy();
    expect(q.getByText(/from/, { selector: "li" }).textContent).toMatch(/p7 from cursor, also touching src\/cart\.go/);
    expect(q.getByText(/^expires in 1[34]m/)).toBeTruthy();
    expect(q.getByText("source")).toBeTruthy();
    // The diff is there, drawn by diff2html.
    await waitFor(() => expect(el.querySelector(".diff-view .d2h-file-wrapper")).toBeTruthy());
    expect(el.querySelector(".approve")).toBeTruthy();
    expect(el.querySelector(".reject")).toBeTruthy();
    expect(el.querySelector(".note-input")).toBeTruthy();
    expect(el.querySelector(".confirm-input")).toBeNull();
    // Its row in the queue says what (the branches it merges: it has no
    // message), who, where, how many files, the risk and that it collides.
    const row = document.querySelector<HTMLElement>(".queue-item[data-id='p1'] .queue-row")!;
    expect(row.getAttribute("aria-expanded")).toBe("true");
    expect(row.textContent).toMatch(/^fix → main, merge in shop· claude-code· 2 files Risk: medium\s*collides ×1 1m ago$/);
  });

  it("says files are unknown until executed when the op cannot know them", async () => {
    stubFetch({ "GET /api/proposals": { body: [card({ files: [], filesKnown: false })] }, ...diffRoutes("p1", []) });
    await renderPending();
    expect(await screen.findByText("unknown until executed")).toBeTruthy();
  });

  it("shows the teaching empty state when nothing waits", async () => {
    stubFetch({ "GET /api/proposals": { body: [] } });
    await renderPending();
    expect((await screen.findByRole("heading", { level: 1 })).id).toBe("empty-title");
  });

  it("keeps Approve disabled on a destructive card until the confirmation word is typed, and sends it", async () => {
    const calls = stubFetch({
      "GET /api/proposals": { body: [destructive] },
      ...diffRoutes("p9", [sampleDiff]),
      "POST /api/proposals/p9/approve": { body: { ...destructive, state: "approved" } },
    });
    await renderPending();
    const el = await waitFor(() => cardEl("p9"));
    await diffOnScreen("p9");
    const approve = el.querySelector<HTMLButtonElement>(".approve")!;
    const input = el.querySelector<HTMLInputElement>(".confirm-input")!;
    expect(within(el).getByText("main", { selector: "code.confirm-word" })).toBeTruthy();
    expect(approve.disabled).toBe(true);
    // Why Approve is disabled, and what the word is.
    const why = document.getElementById(approve.getAttribute("aria-describedby")!)!;
    expect(why.textContent).toMatch(/Approve stays disabled until you type main, the name of the branch this rewrites/);

    fireEvent.change(input, { target: { value: "mai" } });
    expect(approve.disabled).toBe(true);
    fireEvent.change(input, { target: { value: "main " } });
    expect(approve.disabled).toBe(true);
    fireEvent.change(input, { target: { value: "main" } });
    expect(approve.disabled).toBe(false);
    fireEvent.change(el.querySelector(".note-input")!, { target: { value: "ok, drop them" } });
    fireEvent.click(approve);

    const decision = (c: { method: string; url: string }) => c.method === "POST" && c.url !== "/api/shown";
    await waitFor(() => expect(calls.some(decision)).toBe(true));
    const post = calls.find(decision)!;
    expect(post.url).toBe("/api/proposals/p9/approve");
    expect(post.body).toEqual({ digest: destructive.digest, note: "ok, drop them", confirm: "main" });
    expect(post.headers.get("X-Sluice-CSRF")).toBe("csrf-token");
    // The decided card leaves the queue; a notice says what became of it.
    await waitFor(() => expect(noticeEl("p9").dataset.state).toBe("approved"));
    expect(document.getElementById("card-p9")).toBeNull();
    expect(noticeEl("p9").textContent).toMatch(/reset in shop from claude-code: approved/);
  });

  it("moves with j/k, approves with a, rejects with r and the typed note, one card open at a time", async () => {
    localStorage.setItem("sluice.rejectUndoMs", "600000");
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z", reason: "first" });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z", reason: "second" });
    const c = { ...destructive, id: "c3", createdAt: "2026-01-01T12:00:00.000Z" };
    const decided = new Set<string>();
    const calls = stubFetch({
      "GET /api/proposals": () => ({ body: [a, b, c].filter((x) => !decided.has(x.id)) }),
      ...diffRoutes("a1", []),
      ...diffRoutes("b2", []),
      ...diffRoutes("c3", []),
      "POST /api/proposals/a1/approve": () => (decided.add("a1"), { body: { ...a, state: "approved" } }),
      "POST /api/proposals/b2/reject": () => (decided.add("b2"), { body: { ...b, state: "rejected" } }),
      "GET /api/proposals/a1": { body: { ...a, state: "approved" } },
      "GET /api/proposals/b2": { body: { ...b, state: "rejected" } },
    });
    const decisions = () => calls.filter((x) => x.method === "POST" && x.url !== "/api/shown");
    await renderPending();
    await waitFor(() => expect(cardEl("a1").classList).toContain("selected"));
    const openCards = () => Array.from(document.querySelectorAll("article.card")).map((e) => e.id);
    expect(openCards()).toEqual(["card-a1"]);
    expect(document.querySelectorAll(".queue-row")).toHaveLength(3);

    fireEvent.keyDown(document.body, { key: "j" });
    expect(openCards()).toEqual(["card-b2"]);
    expect(rowEl("b2").getAttribute("aria-expanded")).toBe("true");
    expect(rowEl("a1").getAttribute("aria-expanded")).toBe("false");
    expect(document.activeElement).toBe(cardEl("b2"));
    fireEvent.keyDown(document.body, { key: "j" });
    expect(openCards()).toEqual(["card-c3"]);
    fireEvent.keyDown(document.body, { key: "j" });
    expect(openCards()).toEqual(["card-c3"]);

    // On a destructive card, a only focuses the confirmation input.
    fireEvent.keyDown(document.body, { key: "a" });
    expect(document.activeElement).toBe(cardEl("c3").querySelector(".confirm-input"));
    // Keys typed into an input are text, not shortcuts.
    fireEvent.keyDown(document.activeElement!, { key: "k" });
    expect(openCards()).toEqual(["card-c3"]);
    expect(decisions()).toHaveLength(0);

    fireEvent.keyDown(document.body, { key: "k" });
    fireEvent.keyDown(document.body, { key: "k" });
    expect(openCards()).toEqual(["card-a1"]);
    await diffOnScreen("a1");
    fireEvent.keyDown(document.body, { key: "a" });
    await waitFor(() => expect(calls.some((x) => x.url === "/api/proposals/a1/approve")).toBe(true));

    // The approved card leaves the queue with a notice; the next waiting
    // card is open and has the focus.
    await waitFor(() => expect(noticeEl("a1").dataset.state).toBe("approved"));
    expect(document.querySelector(".queue-item[data-id='a1']")).toBeNull();
    expect(openCards()).toEqual(["card-b2"]);
    expect(document.activeElement).toBe(cardEl("b2"));

    // r holds the reject back: the card leaves, the next one opens, and
    // nothing is sent while it can be undone.
    fireEvent.change(cardEl("b2").querySelector(".note-input")!, { target: { value: "not now" } });
    fireEvent.keyDown(document.body, { key: "r" });
    expect(document.querySelector(".undo-notice")?.textContent).toMatch(/Rejecting merge in shop from claude-code with your note/);
    expect(openCards()).toEqual(["card-c3"]);
    expect(document.activeElement).toBe(cardEl("c3"));
    expect(decisions().filter((x) => x.url.includes("b2"))).toHaveLength(0);
    // u undoes it: the card is back, open, with its note.
    fireEvent.keyDown(document.body, { key: "u" });
    expect(document.querySelector(".undo-notice")).toBeNull();
    expect(openCards()).toEqual(["card-b2"]);
    expect(cardEl("b2").querySelector<HTMLTextAreaElement>(".note-input")!.value).toBe("not now");
    expect(decisions().filter((x) => x.url.includes("b2"))).toHaveLength(0);

    // r again, then moving on (here: "Reject now") sends it with the note.
    fireEvent.keyDown(document.body, { key: "r" });
    fireEvent.click(screen.getByRole("button", { name: "Reject now" }));
    await waitFor(() => expect(calls.some((x) => x.url === "/api/proposals/b2/reject")).toBe(true));
    expect(calls.find((x) => x.url === "/api/proposals/b2/reject")!.body).toEqual({ digest: b.digest, note: "not now" });
    await waitFor(() => expect(noticeEl("b2").dataset.state).toBe("rejected"));
    expect(document.querySelector(".queue-item[data-id='b2']")).toBeNull();
    localStorage.removeItem("sluice.rejectUndoMs");
  });

  it("sends a held reject when its undo window passes, and when the person approves the next card", async () => {
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z" });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z" });
    const c = card({ id: "c3", createdAt: "2026-01-01T12:00:00.000Z" });
    const decided = new Set<string>();
    const calls = stubFetch({
      "GET /api/proposals": () => ({ body: [a, b, c].filter((x) => !decided.has(x.id)) }),
      ...diffRoutes("a1", []),
      ...diffRoutes("b2", []),
      ...diffRoutes("c3", []),
      "POST /api/proposals/a1/reject": () => (decided.add("a1"), { body: { ...a, state: "rejected" } }),
      "POST /api/proposals/b2/reject": () => (decided.add("b2"), { body: { ...b, state: "rejected" } }),
      "POST /api/proposals/c3/approve": () => (decided.add("c3"), { body: { ...c, state: "approved" } }),
      "GET /api/proposals/c3": { body: { ...c, state: "approved" } },
    });
    // A window long enough that the first reject waits for the person.
    localStorage.setItem("sluice.rejectUndoMs", "600000");
    await renderPending();
    await waitFor(() => expect(cardEl("a1")).toBeTruthy());
    fireEvent.keyDown(document.body, { key: "r" });
    expect(cardEl("b2")).toBeTruthy();
    // Approving the next card is moving on: the held reject is sent first.
    fireEvent.keyDown(document.body, { key: "j" });
    await diffOnScreen("c3");
    fireEvent.keyDown(document.body, { key: "a" });
    await waitFor(() => expect(calls.some((x) => x.url === "/api/proposals/a1/reject")).toBe(true));
    await waitFor(() => expect(calls.some((x) => x.url === "/api/proposals/c3/approve")).toBe(true));
    expect(calls.findIndex((x) => x.url === "/api/proposals/a1/reject")).toBeLessThan(
      calls.findIndex((x) => x.url === "/api/proposals/c3/approve"),
    );
    // A short window passes by itself and the reject is sent.
    localStorage.setItem("sluice.rejectUndoMs", "20");
    await waitFor(() => expect(cardEl("b2")).toBeTruthy());
    fireEvent.keyDown(document.body, { key: "r" });
    await waitFor(() => expect(calls.some((x) => x.url === "/api/proposals/b2/reject")).toBe(true));
    await waitFor(() => expect(noticeEl("b2").dataset.state).toBe("rejected"));
    localStorage.removeItem("sluice.rejectUndoMs");
  });

  it("keeps an expired card in the queue, saying so", async () => {
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z" });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z" });
    let expired = false;
    stubFetch({
      "GET /api/proposals": () => ({ body: expired ? [a] : [a, b] }),
      ...diffRoutes("a1", []),
      ...diffRoutes("b2", []),
      "GET /api/proposals/b2": { body: { ...b, state: "expired" } },
    });
    await renderPending();
    await waitFor(() => expect(rowEl("b2")).toBeTruthy());
    expired = true;
    act(() => FakeEventSource.emit("proposal:updated", { id: "b2", state: "expired", version: 2 }));
    await waitFor(() => expect(document.querySelector(".queue-item[data-id='b2']")?.getAttribute("data-state")).toBe("expired"));
    expect(rowEl("b2").textContent).toMatch(/expired/);
    expect(document.getElementById("pending-title")?.textContent).toBe("1 proposal waiting");
    fireEvent.click(rowEl("b2"));
    expect(cardEl("b2").querySelector(".gone-note")?.textContent).toMatch(/^This proposal expired at .+ before anyone decided\. Nothing was changed/);
    fireEvent.click(within(cardEl("b2")).getByRole("button", { name: "Dismiss" }));
    expect(document.querySelector(".queue-item[data-id='b2']")).toBeNull();
  });

  it("shows a new proposal live when the app announces it", async () => {
    let list: Card[] = [];
    const calls = stubFetch({ "GET /api/proposals": () => ({ body: list }), ...diffRoutes("p1", [sampleDiff]) });
    await renderPending();
    expect(await screen.findByText("No proposals waiting")).toBeTruthy();
    expect(FakeEventSource.instances[0].url).toBe("/api/events");

    list = [card()];
    act(() => FakeEventSource.emit("proposal:created", { id: "p1", agent: "claude-code", op: "merge", state: "pending", version: 1 }));
    await waitFor(() => expect(document.getElementById("card-p1")).toBeTruthy());
    expect(calls.filter((c) => c.url === "/api/proposals")).toHaveLength(2);
  });

  it("follows a decided card to its final state through events", async () => {
    const c = card();
    let state = "approved";
    stubFetch({
      "GET /api/proposals": () => ({ body: state === "pending" ? [c] : [] }),
      ...diffRoutes("p1", [sampleDiff]),
      "POST /api/proposals/p1/approve": { body: { ...c, state: "approved" } },
      "GET /api/proposals/p1": () => ({
        body: {
          ...c,
          state,
          outcome: state === "completed" ? { message: "merged into main", restorePoint: "rp1", at: c.createdAt } : undefined,
        },
      }),
    });
    state = "pending";
    await renderPending();
    await diffOnScreen("p1");
    fireEvent.click(await waitFor(() => cardEl("p1").querySelector<HTMLButtonElement>(".approve")!));
    state = "approved";
    await waitFor(() => expect(noticeEl("p1").dataset.state).toBe("approved"));
    // Nothing waits any more, and the page says so above the notice.
    expect(document.getElementById("empty-title")?.textContent).toBe("No proposals waiting");
    expect(document.getElementById("card-p1")).toBeNull();

    state = "executing";
    act(() => FakeEventSource.emit("proposal:updated", { id: "p1", state: "executing", version: 3 }));
    await waitFor(() => expect(noticeEl("p1").dataset.state).toBe("executing"));
    state = "completed";
    act(() => FakeEventSource.emit("proposal:updated", { id: "p1", state: "completed", version: 4 }));
    await waitFor(() => expect(noticeEl("p1").dataset.state).toBe("completed"));
    expect(within(noticeEl("p1")).getByText(/merged into main/)).toBeTruthy();
    expect(within(noticeEl("p1")).getByRole("link", { name: "restore point" }).getAttribute("href")).toBe(
      "#/timeline?repo=%2Fhome%2Fme%2Fsrc%2Fshop&rp=rp1",
    );
    expect(within(noticeEl("p1")).getByRole("link", { name: "Details of p1" }).getAttribute("href")).toBe("#/proposal/p1");

    fireEvent.click(within(noticeEl("p1")).getByRole("button", { name: "Dismiss notice about p1" }));
    expect(await screen.findByText("No proposals waiting")).toBeTruthy();
    expect(document.getElementById("decided-p1")).toBeNull();
  });

  it("marks a card stale when approving it fails with digest_mismatch", async () => {
    stubFetch({
      "GET /api/proposals": { body: [card()] },
      ...diffRoutes("p1", [sampleDiff]),
      "POST /api/proposals/p1/approve": {
        status: 409,
        body: { error: { code: "digest_mismatch", message: "the proposal is not the one shown on the card; reload and decide again" } },
      },
    });
    await renderPending();
    await diffOnScreen("p1");
    fireEvent.click(await waitFor(() => cardEl("p1").querySelector<HTMLButtonElement>(".approve")!));
    const banner = await waitFor(() => {
      const b = cardEl("p1").querySelector(".stale");
      if (!b) throw new Error("no stale banner");
      return b;
    });
    expect(banner.textContent).toMatch(/not the one shown on the card/);
    expect(cardEl("p1").dataset.stale).toBe("true");
    expect(cardEl("p1").querySelector<HTMLButtonElement>(".approve")!.disabled).toBe(true);
    expect(cardEl("p1").querySelector<HTMLButtonElement>(".reject")!.disabled).toBe(false);
  });

  it("shows a proposal whose base moved as stale", async () => {
    const c = card({ outcome: { code: "stale_base", message: "refs/heads/main moved to 9999999", at: "2026-01-01T00:00:00.000Z" } });
    stubFetch({ "GET /api/proposals": { body: [c] }, ...diffRoutes("p1", [sampleDiff]) });
    await renderPending();
    await waitFor(() => expect(cardEl("p1").querySelector(".stale")?.textContent).toMatch(/main moved to 9999999/));
    expect(cardEl("p1").querySelector<HTMLButtonElement>(".approve")!.disabled).toBe(true);
  });

  it("asks for the confirmation word again when the server requires it", async () => {
    stubFetch({
      "GET /api/proposals": { body: [destructive] },
      ...diffRoutes("p9", []),
      "POST /api/proposals/p9/approve": {
        status: 400,
        body: { error: { code: "confirmation_required", message: "type the confirmation word to approve it" } },
      },
    });
    await renderPending();
    const el = await waitFor(() => cardEl("p9"));
    await diffOnScreen("p9");
    fireEvent.change(el.querySelector(".confirm-input")!, { target: { value: "main" } });
    fireEvent.click(el.querySelector(".approve")!);
    expect(await within(el).findByText(/type the confirmation word/)).toBeTruthy();
    expect(document.activeElement).toBe(el.querySelector(".confirm-input"));
  });
});

describe("how the agent ran", () => {
  const origin = { session: "s1", runtime: "bubblewrap", network: ["api.anthropic.com"] };

  async function renderCard(c: Card) {
    stubFetch({
      [`GET /api/proposals/${c.id}/preflight`]: { body: { stale: false, moved: [], changed: [], notes: [] } },
      ...diffRoutes(c.id, [sampleDiff]),
    });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={c} />);
    return document.getElementById("card-confinement")!;
  }

  it("says calmly that a confined agent ran confined, beside its name", async () => {
    const line = await renderCard(
      card({ origin, confinement: "confined session (bubblewrap; network: api.anthropic.com), session 6b794f95" }),
    );
    expect(line.dataset.confined).toBe("true");
    expect(line.previousElementSibling?.classList.contains("byline")).toBe(true);
    expect(line.textContent).toBe("Confined: confined session (bubblewrap; network: api.anthropic.com), session 6b794f95");
    expect(line.classList.contains("unconfined")).toBe(false);
    expect(line.querySelector(".badge.confined")?.textContent).toBe("Confined");
  });

  it("warns, in words, when the agent ran as the person's account", async () => {
    const line = await renderCard(card());
    expect(line.dataset.confined).toBe("false");
    expect(line.classList.contains("unconfined")).toBe(true);
    expect(line.textContent).toBe(
      "⚠ Not confined: runs as your account: it could write to the repository without asking",
    );
  });

  it("says a leftover card holds what a session left and never proposed", async () => {
    const line = await renderCard(
      card({
        origin: { ...origin, leftover: true },
        confinement: "confined session (bubblewrap; network: none), session 6b794f95: changes it left and never proposed",
      }),
    );
    expect(line.dataset.confined).toBe("true");
    expect(line.textContent).toBe(
      "Confined: confined session (bubblewrap; network: none), session 6b794f95: changes it left and never proposed",
    );
  });

  it("shows the line on the open card in the queue", async () => {
    stubFetch({ "GET /api/proposals": { body: [card({ origin, confinement: "confined session (bubblewrap; network: none), session 6b794f95" })] }, ...diffRoutes("p1", [sampleDiff]) });
    await renderPending();
    const el = await waitFor(() => cardEl("p1"));
    expect(el.querySelector("#card-confinement")?.getAttribute("data-confined")).toBe("true");
  });
});

describe("the review layout", () => {
  afterEach(() => {
    localStorage.removeItem("sluice.replacedPauseMs");
  });

  const decisionPosts = (calls: { method: string; url: string }[]) =>
    calls.filter((x) => x.method === "POST" && x.url !== "/api/shown" && x.url !== "/api/ready");

  it("puts the list and the open card side by side, the decision bar inside the card", async () => {
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Fix the cart total\n\nlong body" } });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z", op: "branch", label: "branch", subjectBranch: "agent/b", opFacts: opFacts(), args: { name: "agent/b", startPoint: "abc" } });
    stubFetch({ "GET /api/proposals": { body: [a, b] }, ...diffRoutes("a1", []), ...diffRoutes("b2", []) });
    await renderPending();
    await waitFor(() => cardEl("a1"));
    const list = document.querySelector(".review-body > .review-list")!;
    const cardCol = document.querySelector(".review-body > .review-card")!;
    expect(list.querySelectorAll(".queue-row")).toHaveLength(2);
    // The card is not inside the list any more: it is the column beside it.
    expect(list.querySelector("article.card")).toBeNull();
    expect(cardCol.querySelector("article.card")?.id).toBe("card-a1");
    expect(rowEl("a1").querySelector(".q-subject")?.textContent).toBe("Fix the cart total,");
    expect(rowEl("b2").querySelector(".q-subject")?.textContent).toBe("agent/b,");
    const bar = cardEl("a1").querySelector("form.decision-bar")!;
    expect(bar.getAttribute("aria-label")).toBe("Decision");
    expect(bar.querySelector(".approve")).toBeTruthy();
    expect(bar.querySelector(".reject")).toBeTruthy();
  });

  it("marks stale rows from the card's own stale field, saying why", async () => {
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z" });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z", stale: true, staleWhy: "main moved and changed src/cart.go" });
    let list = [a, b];
    stubFetch({ "GET /api/proposals": () => ({ body: list }), ...diffRoutes("a1", []), ...diffRoutes("b2", []) });
    await renderPending();
    await waitFor(() => expect(rowEl("b2").querySelector(".mark-stale")).toBeTruthy());
    expect(rowEl("b2").querySelector(".mark-stale")!.getAttribute("title")).toBe("main moved and changed src/cart.go");
    expect(rowEl("a1").querySelector(".mark-stale")).toBeNull();
    expect(document.querySelector(".queue-counts")?.textContent).toBe("1 stale");
    // The mark follows the app's events: re-sealed, it is no longer stale.
    list = [a, { ...b, stale: false, staleWhy: undefined, digest: "sha256:feed" }];
    act(() => FakeEventSource.emit("proposal:updated", { id: "b2", state: "pending", version: 2 }));
    await waitFor(() => expect(rowEl("b2").querySelector(".mark-stale")).toBeNull());
    expect(document.querySelector(".queue-counts")).toBeNull();
  });

  it("says so when the open card is withdrawn, and a waits until the person has seen the next one", async () => {
    // The pause is long and the clock is moved past it by hand, so a slow
    // run cannot let it pass before the keys pressed at once are tried.
    localStorage.setItem("sluice.replacedPauseMs", "600000");
    vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
    onTestFinished(() => void vi.useRealTimers());
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add a.txt" } });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add b.txt" } });
    let list = [a, b];
    const calls = stubFetch({
      "GET /api/proposals": () => ({ body: list }),
      ...diffRoutes("a1", []),
      ...diffRoutes("b2", []),
      "GET /api/proposals/a1": { body: { ...a, state: "cancelled" } },
      "POST /api/proposals/b2/approve": { body: { ...b, state: "approved" } },
    });
    await renderPending();
    await waitFor(() => expect(cardEl("a1").classList).toContain("selected"));

    list = [b];
    act(() => FakeEventSource.emit("proposal:updated", { id: "a1", state: "cancelled", version: 2 }));
    const notice = await findEl("#replaced-notice");
    expect(notice.textContent).toMatch(/^The card you had open \(Add a\.txt\) was withdrawn by the agent; this is another card\./);
    expect(notice.dataset.holding).toBe("true");
    expect(document.querySelector("article.card")?.id).toBe("card-b2");
    // The notice is in the new card's decision bar, next to Approve.
    expect(notice.closest("form.decision-bar")).toBe(cardEl("b2").querySelector("form.decision-bar"));
    // The withdrawn card stays in the list, saying so.
    expect(rowEl("a1").textContent).toMatch(/withdrawn by the agent before anyone decided/);

    // a at once is not an approval of the card that took its place.
    fireEvent.keyDown(document.body, { key: "a" });
    fireEvent.keyDown(document.body, { key: "r" });
    expect(decisionPosts(calls)).toHaveLength(0);
    expect(document.querySelector(".undo-notice")).toBeNull();
    // After the pause, one key press lets the keys act again; that press
    // itself decides nothing.
    act(() => void vi.advanceTimersByTime(600_000));
    await waitFor(() => expect(notice.textContent).toMatch(/Press any key, then decide on this one\./));
    fireEvent.keyDown(document.body, { key: "a" });
    expect(decisionPosts(calls)).toHaveLength(0);
    expect(document.getElementById("replaced-notice")?.dataset.holding).toBe("false");
    fireEvent.keyDown(document.body, { key: "a" });
    await waitFor(() => expect(decisionPosts(calls).map((c) => c.url)).toEqual(["/api/proposals/b2/approve"]));
  });

  it("says so when the open card is re-sealed with the same changes, and a approves the re-sealed digest", async () => {
    localStorage.setItem("sluice.replacedPauseMs", "600000");
    const a = card({ id: "a1", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add a.txt" } });
    let list = [a];
    const calls = stubFetch({ "GET /api/proposals": () => ({ body: list }), ...diffRoutes("a1", []) });
    await renderPending();
    await waitFor(() => cardEl("a1"));
    list = [
      {
        ...a,
        digest: "sha256:" + "f".repeat(64),
        resealed: { from: a.digest, to: "sha256:" + "f".repeat(64), moves: [], branch: "refs/heads/main", base: "9".repeat(40), at: "2026-01-01T12:00:00Z" },
      },
    ];
    act(() => FakeEventSource.emit("proposal:updated", { id: "a1", state: "pending", version: 2 }));
    const notice = await findEl("#replaced-notice");
    expect(notice.textContent).toMatch(/^The card you had open \(Add a\.txt\) was re-sealed on main at 9999999999: same changes\./);
    expect(notice.getAttribute("data-holding")).toBe("false");
    await findEl(`#card-a1 code[title='sha256:${"f".repeat(64)}']`);
    fireEvent.keyDown(document.body, { key: "a" });
    await waitFor(() => expect(decisionPosts(calls).map((c) => c.url)).toEqual(["/api/proposals/a1/approve"]));
    expect((calls.find((c) => c.url === "/api/proposals/a1/approve")?.body as { digest: string }).digest).toBe("sha256:" + "f".repeat(64));
  });

  it("a digest that changed without a re-seal of the same changes makes a wait", async () => {
    localStorage.setItem("sluice.replacedPauseMs", "600000");
    const a = card({ id: "a1", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add a.txt" } });
    let list = [a];
    const calls = stubFetch({ "GET /api/proposals": () => ({ body: list }), ...diffRoutes("a1", []) });
    await renderPending();
    await waitFor(() => cardEl("a1"));
    list = [{ ...a, digest: "sha256:" + "f".repeat(64) }];
    act(() => FakeEventSource.emit("proposal:updated", { id: "a1", state: "pending", version: 2 }));
    const notice = await findEl("#replaced-notice");
    expect(notice.getAttribute("data-holding")).toBe("true");
    fireEvent.keyDown(document.body, { key: "a" });
    expect(decisionPosts(calls)).toHaveLength(0);
    // Dismissing it with the mouse is having seen it.
    fireEvent.click(screen.getByRole("button", { name: "Dismiss notice about the replaced card" }));
    expect(document.getElementById("replaced-notice")).toBeNull();
  });

  it("checks a re-sealed card again at once: it is stale no longer", async () => {
    localStorage.setItem("sluice.replacedPauseMs", "1");
    const a = card({ id: "a1", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add a.txt" } });
    const resealed = { ...a, digest: "sha256:" + "e".repeat(64), shortDigest: "eeeeeeeeeeee" };
    let list = [a];
    stubFetch({
      "GET /api/proposals": () => ({ body: list }),
      ...diffRoutes("a1", []),
      // What moved, said of the digest the card was sealed with; the
      // re-sealed digest is not stale.
      "GET /api/proposals/a1/preflight": () => ({
        body:
          list[0].digest === a.digest
            ? { stale: true, moved: [{ ref: "HEAD", from: "1".repeat(40), to: "2".repeat(40) }], changed: [], notes: [], blockers: [], notices: [] }
            : { stale: false, moved: [], changed: [], notes: [], blockers: [], notices: [] },
      }),
    });
    await renderPending();
    await waitFor(() => expect(cardEl("a1").dataset.stale).toBe("true"));
    await waitFor(() => expect(rowEl("a1").querySelector(".mark-stale")).toBeTruthy());
    list = [resealed];
    act(() => FakeEventSource.emit("proposal:updated", { id: "a1", state: "pending", version: 2 }));
    // From the moment the card shows the new digest, the old answer is
    // not said of it.
    await findEl(`#card-a1 code[title='${resealed.digest}']`);
    expect(cardEl("a1").dataset.stale).toBeUndefined();
    expect(rowEl("a1").querySelector(".mark-stale")).toBeNull();
    await waitFor(() => expect(document.querySelectorAll(".preflight-notes, .stale")).toHaveLength(0));
  });

  it("says why a cannot approve a stale card, and s sends it back", async () => {
    const a = card({ id: "a1" });
    const calls = stubFetch({
      "GET /api/proposals": { body: [a] },
      ...diffRoutes("a1", []),
      "GET /api/proposals/a1/preflight": {
        body: {
          stale: true,
          moved: [{ ref: "refs/heads/main", from: "1".repeat(40), to: "9".repeat(40) }],
          changed: [],
          notes: [],
          blockers: [],
          notices: [],
        },
      },
      "POST /api/proposals/a1/send-back": { body: { ...a, state: "rejected", outcome: { code: "stale_base", at: a.createdAt } } },
    });
    await renderPending();
    await waitFor(() => expect(cardEl("a1").dataset.stale).toBe("true"));
    fireEvent.keyDown(document.body, { key: "a" });
    const why = cardEl("a1").querySelector(".decision-bar .refusal")!;
    expect(why.textContent).toBe(
      "This card cannot be approved: it is stale (main moved from 111111111111 to 999999999999). Send it back (s) so that the agent proposes it again on what is there now.",
    );
    expect(decisionPosts(calls)).toHaveLength(0);
    fireEvent.keyDown(document.body, { key: "s" });
    await waitFor(() => expect(decisionPosts(calls).map((c) => c.url)).toEqual(["/api/proposals/a1/send-back"]));
    await waitFor(() => expect(noticeEl("a1").textContent).toMatch(/sent back to the agent as stale/));
  });

  it("lists the keys on ?, and / searches by subject, repository, agent and file names", async () => {
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Fix the cart" }, files: ["src/cart.go"] });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Write docs" }, files: ["docs/index.md"], agent: "codex" });
    const c = card({ id: "c3", createdAt: "2026-01-01T12:00:00.000Z", repo: "/home/me/src/site", repoName: "site", op: "branch", label: "branch", subjectBranch: "agent/theme", opFacts: opFacts(), args: { name: "agent/theme" }, files: [] });
    stubFetch({ "GET /api/proposals": { body: [a, b, c] }, ...diffRoutes("a1", []), ...diffRoutes("b2", []), ...diffRoutes("c3", []) });
    await renderPending();
    await waitFor(() => cardEl("a1"));

    fireEvent.keyDown(document.body, { key: "?" });
    const dialog = screen.getByRole("dialog", { name: "Keyboard shortcuts" });
    for (const k of ["j", "k", "a", "r", "u", "s", "/", "?"]) expect(within(dialog).getByText(k, { selector: "kbd" })).toBeTruthy();
    fireEvent.keyDown(document.activeElement!, { key: "Escape" });
    expect(screen.queryByRole("dialog")).toBeNull();

    const visible = () => Array.from(document.querySelectorAll<HTMLElement>(".queue-item")).map((e) => e.dataset.id);
    fireEvent.keyDown(document.body, { key: "/" });
    const search = screen.getByRole("searchbox", { name: "Search proposals" });
    expect(document.activeElement).toBe(search);
    fireEvent.change(search, { target: { value: "index.md" } });
    expect(visible()).toEqual(["b2"]);
    expect(document.querySelector("article.card")?.id).toBe("card-b2");
    fireEvent.change(search, { target: { value: "codex" } });
    expect(visible()).toEqual(["b2"]);
    fireEvent.change(search, { target: { value: "site" } });
    expect(visible()).toEqual(["c3"]);
    fireEvent.change(search, { target: { value: "cart" } });
    expect(visible()).toEqual(["a1"]);
    fireEvent.change(search, { target: { value: "nothing like it" } });
    expect(visible()).toEqual([]);
    expect(screen.getByRole("status", { name: "" }).textContent).toMatch(/Nothing matches/);
    fireEvent.change(search, { target: { value: "theme" } });
    expect(visible()).toEqual(["c3"]);
    // Esc leaves the box for the keys, keeping what it found.
    fireEvent.keyDown(search, { key: "Escape" });
    expect(document.activeElement).toBe(cardEl("c3"));
    expect(visible()).toEqual(["c3"]);
  });

  it("dismisses every notice together, and keeps them in the log", async () => {
    localStorage.setItem("sluice.replacedPauseMs", "600000");
    const a = card({ id: "a1", createdAt: "2026-01-01T10:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add a.txt" } });
    const b = card({ id: "b2", createdAt: "2026-01-01T11:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add b.txt" } });
    const c = card({ id: "c3", createdAt: "2026-01-01T12:00:00.000Z", op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }), args: { message: "Add c.txt" } });
    let list = [a, b, c];
    stubFetch({
      "GET /api/proposals": () => ({ body: list }),
      ...diffRoutes("a1", []),
      ...diffRoutes("b2", []),
      ...diffRoutes("c3", []),
      "POST /api/proposals/a1/approve": () => ((list = [b, c]), { body: { ...a, state: "approved" } }),
      "GET /api/proposals/a1": { body: { ...a, state: "approved" } },
      "GET /api/proposals/b2": { body: { ...b, state: "expired" } },
      "GET /api/rules/approvals": {
        body: [
          {
            id: "r9",
            rule: "docs",
            agent: "codex",
            op: "commit",
            label: "commit",
            repo: "/home/me/src/shop",
            repoName: "shop",
            reason: "Fix a typo",
            state: "completed",
            at: new Date().toISOString(),
            restorePoint: "rp9",
          },
        ],
      },
    });
    const { clearNoticeLog } = await import("./NoticeLog");
    clearNoticeLog();
    await renderPending();
    await diffOnScreen("a1");
    fireEvent.click(await waitFor(() => cardEl("a1").querySelector<HTMLButtonElement>(".approve")!));
    await waitFor(() => noticeEl("a1"));
    // The last decision's notice is in the open card's decision bar.
    expect(noticeEl("a1").closest("form.decision-bar")).toBe(cardEl("b2").querySelector("form.decision-bar"));
    list = [c];
    act(() => FakeEventSource.emit("proposal:updated", { id: "b2", state: "expired", version: 2 }));
    await findEl("#replaced-notice");
    await findEl("#auto-r9");

    fireEvent.click(screen.getByRole("button", { name: "Dismiss all" }));
    expect(document.getElementById("decided-a1")).toBeNull();
    await waitFor(() => expect(document.getElementById("auto-r9")).toBeNull());
    // A notice that still holds the keys back stays until it is seen.
    expect(document.getElementById("replaced-notice")).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Dismiss notice about the replaced card" }));
    expect(screen.queryByRole("button", { name: "Dismiss all" })).toBeNull();

    fireEvent.click(screen.getByRole("button", { name: /^Notices \(3\)$/ }));
    const log = screen.getByRole("region", { name: "Notices" });
    const entries = Array.from(log.querySelectorAll("li")).map((e) => e.textContent);
    expect(entries).toHaveLength(3);
    expect(entries.some((t) => /Approved by a rule: commit in shop from codex: approved automatically by rule docs/.test(t ?? ""))).toBe(true);
    expect(entries.some((t) => /Card replaced: commit in shop \(Add b\.txt\) expired before anyone decided\./.test(t ?? ""))).toBe(true);
    expect(entries.some((t) => /Decided here: commit in shop from claude-code \(Add a\.txt\): approved/.test(t ?? ""))).toBe(true);
  });

  it("says how many wait in all when the list holds only the oldest 500", async () => {
    const cards = Array.from({ length: 500 }, (_, i) => card({ id: `q${i}`, reason: `Change ${i}` }));
    stubFetch({ "GET /api/proposals": { body: cards }, ...diffRoutes("q0", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} total={812} />);
    expect((await screen.findByRole("heading", { level: 1 })).textContent).toBe("812 proposals waiting");
    expect(screen.getByRole("note", { name: "" }).textContent).toContain("The oldest 500 are listed");
  });

  it("says nothing of a cut when all that wait are listed", async () => {
    stubFetch({ "GET /api/proposals": { body: [card({})] }, ...diffRoutes("p1", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} total={1} />);
    expect((await screen.findByRole("heading", { level: 1 })).textContent).toBe("1 proposal waiting");
    expect(document.querySelector(".queue-cut")).toBeNull();
  });
});
