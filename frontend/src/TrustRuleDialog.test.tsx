import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RuleDraft } from "./api";
import { card, stubFetch, opFacts } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

function draftFor(identity: RuleDraft["identity"], notes: string[] = []): RuleDraft {
  return {
    name: "gemini-cli-commit",
    agent: "gemini-cli",
    identity,
    repos: ["/home/me/src/webshop"],
    ops: ["commit"],
    refs: [],
    paths: ["README.md"],
    maxRisk: "low",
    expiry: "today",
    trustDeclaredName: false,
    fromProposal: "p1",
    policyFile: "/home/me/.config/sluice/policy.json",
    createsFile: false,
    notes,
  };
}

async function openDialog(d: RuleDraft) {
  const c = card({ op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }) });
  const calls = stubFetch({
    "GET /api/proposals/p1/rule": { body: d },
    "POST /api/proposals/p1/trust": { body: { card: { ...c, state: "approved" }, rule: {} } },
  });
  const { TrustSimilar } = await import("./TrustSimilar");
  const decided = vi.fn();
  render(<TrustSimilar card={c} note="" enabled onDecided={decided} />);
  fireEvent.click(screen.getByRole("button", { name: "Approve and trust similar…" }));
  const dialog = await screen.findByRole("dialog", { name: "Approve and trust similar" });
  await within(dialog).findByLabelText("Rule name");
  return { dialog, calls, decided };
}

describe("TrustRuleDialog: as narrow as it looks", () => {
  it("names the repository and the token it trusts, and saves both", async () => {
    const { dialog, calls, decided } = await openDialog(draftFor("token"));
    const scope = dialog.querySelector(".rule-scope")!.textContent!;
    expect(scope).toContain("from the holder of the token named gemini-cli in /home/me/src/webshop");
    expect(scope).not.toContain("any program");
    expect(dialog.querySelector(".rule-trust-declared")).toBeNull();
    const preview = JSON.parse(dialog.querySelector(".rule-preview")!.textContent!.replace('"at the end of today"', '"x"'));
    expect(preview.identity).toBe("token");
    expect(preview.repos).toEqual(["/home/me/src/webshop"]);
    fireEvent.click(within(dialog).getByRole("button", { name: "Approve and save rule" }));
    await waitFor(() => expect(decided).toHaveBeenCalledTimes(1));
    expect((calls.find((x) => x.method === "POST")!.body as { rule: { trustDeclaredName: boolean } }).rule.trustDeclaredName).toBe(
      false,
    );
  });

  it("says a confined session's rule is for confined sessions", async () => {
    const { dialog } = await openDialog(draftFor("session"));
    expect(dialog.querySelector(".rule-scope")!.textContent).toContain(
      "from gemini-cli in a confined session Sluice started in /home/me/src/webshop",
    );
    expect(dialog.querySelector(".rule-trust-declared")).toBeNull();
  });

  it("trusts a declared name only after the person opts in, in those words", async () => {
    const { dialog, calls, decided } = await openDialog(draftFor("declared"));
    expect(dialog.querySelector(".rule-scope")!.textContent).toContain("from any program calling itself gemini-cli in /home/me/src/webshop");
    const box = within(dialog).getByRole("checkbox", { name: /Trust any program calling itself gemini-cli/ }) as HTMLInputElement;
    expect(box.checked).toBe(false);
    const save = within(dialog).getByRole("button", { name: "Approve and save rule" }) as HTMLButtonElement;
    expect(save.disabled).toBe(true);
    fireEvent.submit(dialog.querySelector("form")!);
    expect(calls.some((x) => x.method === "POST")).toBe(false);

    fireEvent.click(box);
    expect(save.disabled).toBe(false);
    expect(JSON.parse(dialog.querySelector(".rule-preview")!.textContent!.replace('"at the end of today"', '"x"')).identity).toBe(
      "declared",
    );
    fireEvent.click(save);
    await waitFor(() => expect(decided).toHaveBeenCalledTimes(1));
    const post = calls.find((x) => x.method === "POST")!;
    expect((post.body as { rule: { trustDeclaredName: boolean } }).rule.trustDeclaredName).toBe(true);
  });
});
