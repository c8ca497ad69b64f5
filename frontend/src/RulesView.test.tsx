import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RuleDraft, RulesView } from "./api";
import { card, diffRoutes, findEl, stubFetch, opFacts } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const rules: RulesView = {
  policyFile: "/home/me/.config/sluice/policy.json",
  configured: true,
  rules: [
    {
      name: "readme-greetings",
      agent: "claude-code",
      identity: "token",
      repos: ["/home/me/src/webshop"],
      ops: ["commit"],
      refs: ["agent/*"],
      paths: ["docs"],
      maxRisk: "low",
      expiresAt: "",
      expired: false,
      createdAt: "2026-12-01T10:00:00Z",
      fromProposal: "p1",
      inAgentEntry: false,
      approved: 3,
      lastApproved: "2026-12-01T11:00:00Z",
    },
    {
      name: "hand-made",
      agent: "*",
      identity: "",
      repos: [],
      ops: ["branch"],
      refs: [],
      paths: [],
      maxRisk: "low",
      expiresAt: "2026-12-01T09:00:00Z",
      expired: true,
      createdAt: "",
      fromProposal: "",
      inAgentEntry: true,
      approved: 0,
      lastApproved: "",
    },
  ],
};

describe("RulesView", () => {
  it("shows what each rule allows, where it came from and its count, and revokes after asking", async () => {
    const calls = stubFetch({
      "GET /api/rules": { body: rules },
      "GET /api/rules/approvals": { body: [] },
      "POST /api/rules/revoke": { body: { ...rules, rules: rules.rules.slice(1) } },
    });
    const { RulesView } = await import("./RulesView");
    render(<RulesView />);
    const row = await findEl("#rule-readme-greetings");
    expect(row.textContent).toContain("commit up to low risk");
    expect(row.textContent).toContain("on agent/* · under docs");
    expect(row.querySelector(".rule-count")!.textContent).toMatch(/^3/);
    expect(row.textContent).toContain("never");
    expect(within(row).getByRole("link", { name: "this card" }).getAttribute("href")).toBe("#/proposal/p1");
    const other = document.getElementById("rule-hand-made")!;
    expect(other.textContent).toContain("every agent");
    expect(other.textContent).toContain("on any branch · any file");
    expect(other.textContent).toContain("expired");
    expect(other.textContent).toContain("by hand, in the agent's entry");

    fireEvent.click(within(row).getByRole("button", { name: "Revoke" }));
    const dialog = screen.getByRole("dialog", { name: "Revoke rule readme-greetings?" });
    fireEvent.click(dialog.querySelector(".revoke-confirm")!);
    expect(await screen.findByText(/Rule readme-greetings revoked/)).toBeTruthy();
    expect(document.getElementById("rule-readme-greetings")).toBeNull();
    const post = calls.find((c) => c.method === "POST" && c.url === "/api/rules/revoke")!;
    expect(post.body).toEqual({ agent: "claude-code", name: "readme-greetings" });
  });

  it("says how to make the first rule", async () => {
    stubFetch({ "GET /api/rules": { body: { policyFile: "/p.json", configured: false, rules: [] } } });
    const { RulesView } = await import("./RulesView");
    render(<RulesView />);
    expect((await screen.findByText(/No rules\./)).textContent).toContain("Approve and trust similar");
    expect(screen.getByText(/the first rule creates/)).toBeTruthy();
  });
});

const draft: RuleDraft = {
  name: "claude-code-commit",
  agent: "claude-code",
  identity: "token",
  repos: ["/home/me/src/webshop"],
  trustDeclaredName: false,
  ops: ["commit"],
  refs: [],
  paths: ["README.md"],
  maxRisk: "low",
  expiry: "today",
  fromProposal: "p1",
  policyFile: "/home/me/.config/sluice/policy.json",
  createsFile: true,
  notes: ["this proposal does not name its branch"],
};

describe("TrustSimilar", () => {
  it("shows the exact rule, lets the person edit it, and approves with it", async () => {
    const c = card({ op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }) });
    const calls = stubFetch({
      "GET /api/proposals/p1/rule": { body: draft },
      "POST /api/proposals/p1/trust": { body: { card: { ...c, state: "approved" }, rule: rules.rules[0] } },
    });
    const { TrustSimilar } = await import("./TrustSimilar");
    const decided = vi.fn();
    // Inside a card's own form, as on the Pending screen: confirming the
    // dialog must not submit (approve) the card by itself.
    const cardSubmit = vi.fn((e: { preventDefault(): void }) => e.preventDefault());
    render(
      <form onSubmit={cardSubmit}>
        <TrustSimilar card={c} note="ok" enabled onDecided={decided} />
      </form>,
    );
    fireEvent.click(screen.getByRole("button", { name: "Approve and trust similar…" }));
    const dialog = await screen.findByRole("dialog", { name: "Approve and trust similar" });
    const name = (await within(dialog).findByLabelText("Rule name")) as HTMLInputElement;
    await waitFor(() => expect(document.activeElement).toBe(name));
    const preview = dialog.querySelector(".rule-preview")!;
    expect(JSON.parse(preview.textContent!.replace('"at the end of today"', '"x"'))).toEqual({
      name: "claude-code-commit",
      agent: "claude-code",
      identity: "token",
      repos: ["/home/me/src/webshop"],
      ops: ["commit"],
      paths: ["README.md"],
      maxRisk: "low",
      expiresAt: "x",
      fromProposal: "this card",
    });
    expect(dialog.textContent).toContain("Creates the policy file /home/me/.config/sluice/policy.json");
    expect(dialog.textContent).toContain("does not name its branch");

    fireEvent.change(name, { target: { value: "greetings" } });
    fireEvent.change(within(dialog).getByLabelText(/Branches/), { target: { value: "main, agent/*" } });
    fireEvent.change(within(dialog).getByLabelText(/Paths/), { target: { value: "README.md, docs/" } });
    fireEvent.change(within(dialog).getByLabelText("For how long"), { target: { value: "always" } });
    expect(JSON.parse(preview.textContent!)).toEqual({
      name: "greetings",
      agent: "claude-code",
      identity: "token",
      repos: ["/home/me/src/webshop"],
      ops: ["commit"],
      refs: ["main", "agent/*"],
      paths: ["README.md", "docs/"],
      maxRisk: "low",
      fromProposal: "this card",
    });
    fireEvent.click(within(dialog).getByRole("button", { name: "Approve and save rule" }));
    await waitFor(() => expect(decided).toHaveBeenCalledTimes(1));
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(cardSubmit).not.toHaveBeenCalled();
    const post = calls.find((x) => x.method === "POST")!;
    expect(post.url).toBe("/api/proposals/p1/trust");
    expect(post.body).toEqual({
      digest: c.digest,
      note: "ok",
      rule: {
        name: "greetings",
        refs: ["main", "agent/*"],
        paths: ["README.md", "docs/"],
        maxRisk: "low",
        expiry: "always",
        trustDeclaredName: false,
      },
    });
  });

  it("keeps the dialog open with the server's reason when the rule is refused", async () => {
    const c = card({ op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }) });
    stubFetch({
      "GET /api/proposals/p1/rule": { body: draft },
      "POST /api/proposals/p1/trust": {
        status: 409,
        body: { error: { code: "policy_changed", message: "the policy file changed since it was read" } },
      },
    });
    const { TrustSimilar } = await import("./TrustSimilar");
    const decided = vi.fn();
    render(<TrustSimilar card={c} note="" enabled onDecided={decided} />);
    fireEvent.click(screen.getByRole("button", { name: "Approve and trust similar…" }));
    const dialog = await screen.findByRole("dialog");
    fireEvent.click(await within(dialog).findByRole("button", { name: "Approve and save rule" }));
    expect((await within(dialog).findByRole("alert")).textContent).toMatch(/changed since it was read/);
    expect(decided).not.toHaveBeenCalled();
    fireEvent.keyDown(dialog, { key: "Escape" });
    expect(screen.queryByRole("dialog")).toBeNull();
  });

  it("is disabled on a destructive card and says why", async () => {
    stubFetch({});
    const { TrustSimilar, destructiveWhy } = await import("./TrustSimilar");
    render(<TrustSimilar card={card({ destructive: true, risk: "destructive" })} note="" enabled />);
    const b = screen.getByRole("button", { name: "Approve and trust similar…" }) as HTMLButtonElement;
    expect(b.disabled).toBe(true);
    expect(document.getElementById(b.getAttribute("aria-describedby")!)!.textContent).toBe(destructiveWhy);
  });
});

describe("History and rules", () => {
  it("marks a proposal a rule approved with the rule's name", async () => {
    const auto = card({
      id: "h9",
      state: "completed",
      approvedByRule: "readme-greetings",
      decision: { by: "policy:readme-greetings", approved: true, auto: true, at: "2026-12-01T11:00:00.000Z" },
    });
    const byHand = card({ id: "h8", state: "completed", decision: { by: "owner:web", approved: true, at: "2026-12-01T10:00:00.000Z" } });
    stubFetch({ "GET /api/history?limit=200": { body: [auto, byHand] } });
    const { HistoryView } = await import("./HistoryView");
    render(<HistoryView />);
    const row = await findEl("#history-h9");
    expect(row.querySelector(".rule-mark")!.textContent).toBe("by rule readme-greetings");
    expect(row.querySelector<HTMLAnchorElement>(".rule-mark a")!.getAttribute("href")).toBe("#/rules");
    expect(document.querySelector("#history-h8 .rule-mark")).toBeNull();
  });

  it("names the rule on the proposal's card", async () => {
    const auto = card({
      state: "completed",
      approvedByRule: "readme-greetings",
      decision: { by: "policy:readme-greetings", approved: true, auto: true, at: "2026-12-01T11:00:00.000Z" },
    });
    stubFetch({ ...diffRoutes("p1", []) });
    const { ProposalCard } = await import("./ProposalCard");
    render(<ProposalCard card={auto} />);
    const decision = await findEl(".decision");
    expect(decision.textContent).toMatch(/^Approved automatically by rule readme-greetings/);
    expect(decision.querySelector("a")!.getAttribute("href")).toBe("#/rules");
  });
});
