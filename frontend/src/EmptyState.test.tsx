import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { status, stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const settings = {
  allowedRoots: ["/home/me/src"],
  pendingExpiry: "15m",
  policyFile: "",
  toolsets: ["git", "propose"],
  notifications: true,
  availableToolsets: ["git", "propose", "workspace"],
  restartRequired: ["allowedRoots"],
};

describe("EmptyState", () => {
  it("asks for a root when none is set, and saves the answer", async () => {
    const calls = stubFetch({ "POST /api/roots": { body: settings } });
    const { EmptyState } = await import("./EmptyState");
    render(<EmptyState status={{ ...status, allowedRoots: [] }} />);
    const input = screen.getByLabelText("Folder that holds your repositories");
    const button = screen.getByRole("button", { name: "Allow agents here" }) as HTMLButtonElement;
    expect(button.disabled).toBe(true);
    fireEvent.change(input, { target: { value: " /home/me/src " } });
    fireEvent.click(button);
    expect(await screen.findByText("Agents may work in")).toBeTruthy();
    expect(screen.getByText("/home/me/src")).toBeTruthy();
    expect(screen.getByText(/Sluice and your agents use it from their next call: nothing needs a restart/)).toBeTruthy();
    const post = calls.find((c) => c.method === "POST")!;
    expect(post.url).toBe("/api/roots");
    expect(post.body).toEqual({ dir: "/home/me/src" });
  });

  it("shows the server's refusal and keeps the question", async () => {
    stubFetch({
      "POST /api/roots": { status: 400, body: { error: { code: "invalid_argument", message: 'allowedRoots: "/nope" cannot be resolved' } } },
    });
    const { EmptyState } = await import("./EmptyState");
    render(<EmptyState status={{ ...status, allowedRoots: [] }} />);
    fireEvent.change(screen.getByLabelText("Folder that holds your repositories"), { target: { value: "/nope" } });
    fireEvent.click(screen.getByRole("button", { name: "Allow agents here" }));
    expect(await screen.findByText(/cannot be resolved/)).toBeTruthy();
    expect(screen.getByLabelText("Folder that holds your repositories")).toBeTruthy();
  });

  it("does not ask when roots are set", async () => {
    const { EmptyState } = await import("./EmptyState");
    render(<EmptyState status={status} />);
    expect(screen.queryByLabelText("Folder that holds your repositories")).toBeNull();
    expect(screen.getByText("/home/me/src")).toBeTruthy();
  });

  it("leads with the confined way and keeps the configuration command for an agent started by hand", async () => {
    const { EmptyState } = await import("./EmptyState");
    render(<EmptyState status={{ ...status, allowedRoots: [] }} />);
    const confined = screen.getByRole("region", { name: "Start an agent confined" });
    expect(within(confined).getByText("sluice run claude", { selector: "pre code" })).toBeTruthy();
    expect(confined.textContent).toMatch(/sluice run -- COMMAND/);
    expect(confined.textContent).toMatch(/runs as your account: it could write to your repositories without asking/);
    const connect = screen.getByRole("heading", { name: "Connect an agent" });
    expect(confined.compareDocumentPosition(connect) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    // What the browser test of the first screen looks for is all still there.
    const text = document.body.textContent!;
    for (const want of ["Connect an agent", "config --client claude-code --write", "Where are your repositories?", "SLUICE_ALLOWED_ROOTS"]) {
      expect(text).toContain(want);
    }
  });
});
