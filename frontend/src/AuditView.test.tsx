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
          ? { keyId: "0123456789abcdef", signed: true, entries: [{ id: "a", sequence: 1, event_type: "app_started", result: "ok" }] }
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
