import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuditView } from "./AuditView";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function stub(report: unknown) {
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL) => {
      const url = String(input);
      const body =
        url === "/api/audit"
          ? { keyId: "0123456789abcdef", signed: true, entries: [
                { id: "b", sequence: 2, auditChainVersion: 1, event_type: "proposal_submitted", result: "ok", proposal_id: "3f2a9c1e-0000-4000-8000-000000000001" },
                { id: "a", sequence: 1, auditChainVersion: 1, event_type: "app_started", result: "ok" },
                { tool: "repo_status", result: "ok" },
              ] }
          : url === "/api/session"
            ? { csrf: "c" }
            : report;
      return new Response(JSON.stringify(body), { status: 200 });
    }),
  );
}

describe("AuditView", () => {
  it("lists entries and shows the verifier's counts", async () => {
    stub({ ok: true, entries: 1, chained: 1, legacy: 0, signed: 1, unsigned: 0, segments: 1, firstSequence: 1, lastSequence: 1, checkpointUsed: "none" });
    render(<AuditView />);
    expect(await screen.findByText("app_started")).toBeTruthy();
    expect(screen.getByText(/signed with key 0123456789abcdef/)).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Verify" }));
    expect(await screen.findByText("Intact")).toBeTruthy();
    expect(screen.getByText("1..1")).toBeTruthy();
  });

  it("links entries to their proposal and explains legacy, segments and checkpoint where they appear", async () => {
    stub({ ok: true, entries: 3, chained: 2, legacy: 1, signed: 2, unsigned: 0, segments: 2, firstSequence: 1, lastSequence: 2, checkpointUsed: "none" });
    render(<AuditView />);
    const link = (await screen.findByText("proposal 3f2a9c1e")) as HTMLAnchorElement;
    expect(link.getAttribute("href")).toBe("#/proposal/3f2a9c1e-0000-4000-8000-000000000001");
    expect(document.querySelectorAll(".audit-proposal")).toHaveLength(1);
    // The line from before the chain is marked, and the mark explained.
    const rows = Array.from(document.querySelectorAll("table.entries tbody tr"));
    expect(rows[2].querySelector(".badge.legacy")).toBeTruthy();
    expect(rows[0].querySelector(".badge.legacy")).toBeNull();
    expect(document.querySelector(".audit-legacy-note")?.textContent).toMatch(/before the ledger was hash-chained/);
    fireEvent.click(screen.getByRole("button", { name: "Verify" }));
    await screen.findByText("Intact");
    const dl = document.querySelector("#verify-result dl")!.textContent!;
    expect(dl).toMatch(/legacy1 lines written before the ledger was hash-chained/);
    expect(dl).toMatch(/segments2 the ledger moves to a new file every 4 MiB/);
    expect(dl).toMatch(/checkpointnone no segment was ever deleted/);
  });

  it("shows a failed verification with its reason", async () => {
    stub({ ok: false, problem: "audit.jsonl line 3: previousHash does not link", entries: 2, chained: 2, legacy: 0, signed: 2, unsigned: 0, segments: 1, firstSequence: 1, lastSequence: 2, checkpointUsed: "" });
    render(<AuditView />);
    fireEvent.click(await screen.findByRole("button", { name: "Verify" }));
    expect(await screen.findByText("Verification failed")).toBeTruthy();
    expect(screen.getByText(/line 3: previousHash does not link/)).toBeTruthy();
  });

  it("shows a cut-off tail and the anchor to keep", async () => {
    const h = "sha256:" + "ab".repeat(32);
    stub({ ok: false, problem: "audit: verification failed: audit.jsonl: entries missing after sequence 4: the ledger is known to have held sequence 6", entries: 4, chained: 4, legacy: 0, signed: 4, unsigned: 0, segments: 1, firstSequence: 1, lastSequence: 4, checkpointUsed: "none", expectedHead: "6:" + h });
    render(<AuditView />);
    fireEvent.click(await screen.findByRole("button", { name: "Verify" }));
    expect(await screen.findByText("Verification failed")).toBeTruthy();
    expect(screen.getByText(/entries missing after sequence 4/)).toBeTruthy();
    expect(screen.getByText("6:" + h)).toBeTruthy();
  });

  it("offers the ledger's head as an anchor when intact", async () => {
    const h = "sha256:" + "cd".repeat(32);
    stub({ ok: true, entries: 2, chained: 2, legacy: 0, signed: 2, unsigned: 0, segments: 1, firstSequence: 1, lastSequence: 2, checkpointUsed: "none", head: "2:" + h });
    render(<AuditView />);
    fireEvent.click(await screen.findByRole("button", { name: "Verify" }));
    expect(await screen.findByText("Intact")).toBeTruthy();
    expect(screen.getByText("2:" + h).id).toBe("audit-anchor");
  });
});
