import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Preflight } from "./api";
import { card, diffOnScreen, diffRoutes, sampleDiff, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const dirty =
  "the target branch main is checked out in /home/me/src/shop, which has uncommitted changes (src/cart.go); Sluice moves a checkout only when it is clean: commit or stash them, and this card can be approved";

const preflight = (over: Partial<Preflight> = {}): Preflight => ({
  stale: false,
  moved: [],
  changed: [],
  notes: [],
  blockers: [],
  notices: [],
  ...over,
});

describe("a card that cannot land now", () => {
  it("says why before anyone decides, and Approve stays disabled with that reason", async () => {
    const c = card();
    const calls = stubFetch({
      "GET /api/proposals/p1/preflight": { body: preflight({ blockers: [dirty], notices: ["your pre-commit hook will run: Sluice commits with your own git, as you would"] }) },
      ...diffRoutes("p1", [sampleDiff]),
    });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={c} />);
    const why = await screen.findByText(dirty);
    const block = why.closest(".blocked")!;
    expect(block.getAttribute("role")).toBe("alert");
    expect(block.textContent).toContain("Cannot land now");
    const approve = document.querySelector<HTMLButtonElement>("#card-p1 .approve")!;
    expect(approve.disabled).toBe(true);
    expect(approve.getAttribute("aria-describedby")).toBe(block.id);
    expect(approve.title).toContain("src/cart.go");
    expect(screen.getByText(/your pre-commit hook will run/)).toBeTruthy();
    fireEvent.click(approve);
    expect(calls.some((x) => x.url.endsWith("/approve"))).toBe(false);
  });

  it("enables Approve once the preflight finds nothing in the way, and a hook is only a notice", async () => {
    stubFetch({
      "GET /api/proposals/p1/preflight": { body: preflight({ notices: ["your pre-commit hook will run"] }) },
      ...diffRoutes("p1", [sampleDiff]),
    });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={card()} />);
    await screen.findByText("your pre-commit hook will run");
    await diffOnScreen("p1");
    expect(document.querySelector<HTMLButtonElement>("#card-p1 .approve")!.disabled).toBe(false);
    expect(document.querySelector(".blocked")).toBeNull();
  });
});

describe("a failure that changed nothing", () => {
  const failed = () =>
    card({
      state: "failed",
      retryable: true,
      decision: { by: "owner:web", approved: true, approvedDigest: card().digest, at: new Date().toISOString() },
      outcome: { code: "dirty_worktree", message: dirty, at: new Date().toISOString() },
    });

  it("offers Retry, disabled with the reason while the cause is there", async () => {
    stubFetch({
      "GET /api/proposals/p1/preflight": { body: preflight({ blockers: [dirty] }) },
      ...diffRoutes("p1", [sampleDiff]),
    });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={failed()} />);
    const block = await waitFor(() => {
      const b = document.querySelector("#card-p1 .blocked");
      if (!b) throw new Error("no blockers shown yet");
      return b;
    });
    expect(block.textContent).toContain(dirty);
    const retry = screen.getByRole("button", { name: "Retry" }) as HTMLButtonElement;
    expect(retry.disabled).toBe(true);
    expect(retry.getAttribute("aria-describedby")).toBe(block.id);
    expect(document.querySelector("#card-p1 .approve")).toBeNull();
  });

  it("retries it, bound to the digest shown, once the cause is fixed", async () => {
    const c = failed();
    const calls = stubFetch({
      "GET /api/proposals/p1/preflight": { body: preflight() },
      "POST /api/proposals/p1/retry": { body: { ...c, state: "approved", retryable: false, outcome: undefined } },
      ...diffRoutes("p1", [sampleDiff]),
    });
    const decided = vi.fn();
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={c} onDecided={decided} />);
    const retry = (await screen.findByRole("button", { name: "Retry" })) as HTMLButtonElement;
    await waitFor(() => expect(retry.disabled).toBe(false));
    fireEvent.click(retry);
    await waitFor(() => expect(decided).toHaveBeenCalled());
    const sent = calls.find((x) => x.url === "/api/proposals/p1/retry");
    expect(sent?.method).toBe("POST");
    expect(sent?.body).toEqual({ digest: c.digest, note: "", confirm: "" });
    expect(decided.mock.calls[0][0].state).toBe("approved");
  });

  it("offers no Retry for a failure that may have changed the repository", async () => {
    stubFetch({ ...diffRoutes("p1", [sampleDiff]) });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={card({ state: "failed", retryable: false, outcome: { code: "hook_failed", message: "refused", restorePoint: "p1", at: new Date().toISOString() } })} />);
    expect(screen.queryByRole("button", { name: /Retry/ })).toBeNull();
  });
});
