import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FakeEventSource, stubEventSource, stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

describe("WorkspacesView", () => {
  it("says honestly when workspaces are not available", async () => {
    stubFetch({
      "GET /api/workspaces": { status: 400, body: { error: { code: "unsupported", message: "Docker is not running" } } },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    expect(await screen.findByText("Workspaces are not available: Docker is not running")).toBeTruthy();
  });

  it("lists workspaces with their runs and evidence", async () => {
    stubFetch({
      "GET /api/workspaces": {
        body: [
          {
            id: "ws1",
            state: "running",
            source: "/home/me/src/shop",
            base: "1111111111111111111111111111111111111111",
            leaseExpiresAt: new Date(Date.now() + 30 * 60_000).toISOString(),
            runs: [
              { argv: ["go", "test", "./..."], exitCode: 1, oomKilled: false, durationMs: 4200, truncated: true, tests: { passed: 41, failed: 2, skipped: 1, format: "go-test-json" } },
              { argv: ["make", "lint"], exitCode: 137, oomKilled: true, durationMs: 350, truncated: false, tests: null, stdout: "lint: out of memory\n", stderr: "" },
            ],
          },
        ],
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const ws = await screen.findByRole("article");
    expect(within(ws).getByText("ws1")).toBeTruthy();
    expect(within(ws).getByText(/lease ends in (29|30)m/)).toBeTruthy();
    const rows = within(ws).getAllByRole("row").slice(1);
    expect(rows[0].textContent).toMatch(/go test \.\/\.\.\.14\.2 s41 passed, 2 failed, 1 skipped \(go-test-json\)truncated/);
    expect(rows[1].textContent).toMatch(/137 out of memory350 msnone parsedcomplete/);
    // The run's output is there to read.
    expect(within(rows[1]).getByLabelText("standard output").textContent).toBe("lint: out of memory\n");
    expect(within(rows[0]).queryByText("output")).toBeNull();
  });
});

describe("WorkspacesView owner", () => {
  it("names the agent that owns each workspace, and says when none does", async () => {
    stubFetch({
      "GET /api/workspaces": {
        body: [
          { id: "ws1", state: "ready", owner: "claude-code", source: "/src/widgets", base: "", leaseExpiresAt: "", runs: [] },
          { id: "ws2", state: "ready", owner: "", source: "", base: "", leaseExpiresAt: "", runs: [] },
        ],
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const [first, second] = await screen.findAllByRole("article");
    expect(first.querySelector(".workspace-owner")?.textContent).toBe("claude-code");
    expect(second.querySelector(".workspace-owner")?.textContent).toMatch(/unknown \(no agent can use it\)/);
  });
});

describe("WorkspacesView grants", () => {
  it("sends a secret grant to the workspace's grants route with the CSRF header", async () => {
    const calls = stubFetch({
      "GET /api/workspaces": {
        body: [{ id: "ws1", state: "ready", source: "/src/widgets", base: "a".repeat(40), leaseExpiresAt: "", runs: [] }],
      },
      "POST /api/workspaces/ws1/grants": { body: true },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    fireEvent.click(await screen.findByText("Grant access…"));
    fireEvent.change(screen.getByPlaceholderText("DEPLOY_TOKEN"), { target: { value: "DEPLOY_TOKEN" } });
    fireEvent.change(screen.getByLabelText("Value"), { target: { value: "hunter2-long-value" } });
    fireEvent.click(screen.getByRole("button", { name: "Grant secret" }));
    expect(await screen.findByText("Secret DEPLOY_TOKEN granted.")).toBeTruthy();
    const post = calls.find((c) => c.method === "POST")!;
    expect(post.url).toBe("/api/workspaces/ws1/grants");
    expect(post.body).toEqual({ secretName: "DEPLOY_TOKEN", secretValue: "hunter2-long-value" });
    expect(post.headers.get("X-Sluice-CSRF")).toBe("csrf-token");
  });
});

describe("WorkspacesView live runs", () => {
  it("shows a running run with its output, reads it again when the app says the store changed, and names a limit a run hit", async () => {
    stubEventSource();
    let n = 0;
    const ws = (runs: unknown[]) => [{ id: "ws1", state: "ready", source: "fresh", base: "", leaseExpiresAt: "", runs }];
    const calls = stubFetch({
      "GET /api/workspaces": () => {
        n++;
        if (n === 1)
          return { body: ws([{ id: "r1", argv: ["make", "test"], exitCode: 0, oomKilled: false, durationMs: 1200, truncated: false, running: true, verdict: "running for 1.2s", stdout: "first\n" }]) };
        return {
          body: ws([
            { id: "r1", argv: ["make", "test"], exitCode: 0, oomKilled: false, durationMs: 2400, truncated: false, verdict: "exited 0 after 2.4s", stdout: "first\nsecond\n" },
            { id: "r2", argv: ["sleep", "60"], exitCode: 137, oomKilled: false, durationMs: 1000, truncated: false, timedOut: true, verdict: "killed at its time limit (1s) after 1s", ociRuntime: "runsc" },
          ]),
        };
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const article = await screen.findByRole("article");
    expect(within(article).getByText("running")).toBeTruthy();
    expect(within(article).getByLabelText("standard output").textContent).toBe("first\n");
    // Nothing is asked again until the app says something changed.
    await vi.waitFor(() => expect(FakeEventSource.instances.some((es) => es.url === "/api/events" && !es.closed)).toBe(true));
    expect(n).toBe(1);
    FakeEventSource.emit("workspace:changed", undefined);
    const second = await within(article).findByText("time limit");
    expect(second.closest("tr")?.getAttribute("title")).toBe("killed at its time limit (1s) after 1s");
    expect(within(article).queryByText("running")).toBeNull();
    expect(calls.filter((c) => c.url === "/api/workspaces").length).toBeGreaterThanOrEqual(2);
    const rows = within(article).getAllByRole("row").slice(1);
    expect(within(rows[0]).getByLabelText("standard output").textContent).toBe("first\nsecond\n");
    expect(within(rows[0]).queryByText(/gVisor/)).toBeNull();
    expect(within(rows[1]).getByTitle("ran under gVisor (runsc)")).toBeTruthy();
  });
});

describe("WorkspacesView sealed", () => {
  it("links a sealed workspace to its proposal and offers no grants on it", async () => {
    stubFetch({
      "GET /api/workspaces": {
        body: [
          { id: "ws1", state: "sealed", owner: "codex", source: "fresh", base: "", leaseExpiresAt: "", runs: [], proposalId: "0a1b2c3d-0000-4000-8000-000000000009" },
          { id: "ws2", state: "sealed", owner: "codex", source: "fresh", base: "", leaseExpiresAt: "", runs: [] },
          { id: "ws3", state: "ready", owner: "codex", source: "fresh", base: "", leaseExpiresAt: "", runs: [] },
        ],
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const [sealed, unlinked, ready] = await screen.findAllByRole("article");
    expect(sealed.querySelector(".workspace-proposal")?.getAttribute("href")).toBe("#/proposal/0a1b2c3d-0000-4000-8000-000000000009");
    expect(within(sealed).queryByText("Grant access…")).toBeNull();
    expect(within(unlinked).queryByText("Grant access…")).toBeNull();
    expect(unlinked.querySelector(".workspace-sealed")?.textContent).toMatch(/not yet stored/);
    expect(within(ready).getByText("Grant access…")).toBeTruthy();
  });
});

describe("WorkspacesView stop and destroy", () => {
  const ready = { id: "ws1", state: "ready", owner: "claude-code", source: "repo /src/widgets", base: "", leaseExpiresAt: "", runs: [] };

  it("destroys a workspace only after the person confirms, then says so", async () => {
    let destroyed = false;
    const calls = stubFetch({
      "GET /api/workspaces": () => ({ body: destroyed ? [] : [ready] }),
      "POST /api/workspaces/ws1/destroy": () => {
        destroyed = true;
        return { body: { id: "ws1", runsStopped: 0, destroyed: true } };
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const article = await screen.findByRole("article");
    // Nothing runs: there is nothing to stop.
    expect(within(article).queryByRole("button", { name: "Stop…" })).toBeNull();

    fireEvent.click(within(article).getByRole("button", { name: "Destroy…" }));
    const dialog = within(article).getByRole("alertdialog");
    expect(dialog.textContent).toMatch(/Destroy workspace ws1\? Its files, commits and run records are deleted/);
    expect(dialog.textContent).toMatch(/claude-code can no longer use it\. This cannot be undone\./);
    fireEvent.click(within(dialog).getByRole("button", { name: "Cancel" }));
    expect(within(article).queryByRole("alertdialog")).toBeNull();
    expect(calls.some((c) => c.method === "POST")).toBe(false);

    fireEvent.click(within(article).getByRole("button", { name: "Destroy…" }));
    fireEvent.click(within(article).getByRole("button", { name: "Destroy workspace" }));
    expect((await screen.findByText("Workspace ws1 destroyed.")).getAttribute("role")).toBe("status");
    const post = calls.find((c) => c.method === "POST")!;
    expect(post.url).toBe("/api/workspaces/ws1/destroy");
    expect(post.headers.get("X-Sluice-CSRF")).toBe("csrf-token");
    await waitFor(() => expect(screen.queryByRole("article")).toBeNull());
  });

  it("shows why a workspace whose changes are an open card is kept", async () => {
    const sealed = { ...ready, state: "sealed", proposalId: "0a1b2c3d-0000-4000-8000-000000000009" };
    stubFetch({
      "GET /api/workspaces": { body: [sealed] },
      "POST /api/workspaces/ws1/destroy": {
        status: 409,
        body: { error: { code: "conflict", message: "workspace ws1's changes are card 0a1b2c3d, which is pending: decide the card first" } },
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const article = await screen.findByRole("article");
    fireEvent.click(within(article).getByRole("button", { name: "Destroy…" }));
    expect(within(article).getByRole("alertdialog").textContent).toMatch(
      /came back as proposal 0a1b2c3d: while that card is open, Sluice keeps the workspace/,
    );
    fireEvent.click(within(article).getByRole("button", { name: "Destroy workspace" }));
    expect((await within(article).findByRole("alert")).textContent).toMatch(/card 0a1b2c3d, which is pending: decide the card first/);
    expect(screen.getByRole("article")).toBeTruthy();
  });

  it("stops a running command after the person confirms", async () => {
    let stopped = false;
    const run = { id: "r1", argv: ["sleep", "600"], exitCode: 0, oomKilled: false, durationMs: 1000, truncated: false, tests: null };
    const calls = stubFetch({
      "GET /api/workspaces": () => ({
        body: [{ ...ready, runs: [stopped ? { ...run, interrupted: true } : { ...run, running: true }] }],
      }),
      "POST /api/workspaces/ws1/stop": () => {
        stopped = true;
        return { body: { id: "ws1", runsStopped: 1, destroyed: false } };
      },
    });
    const { WorkspacesView } = await import("./WorkspacesView");
    render(<WorkspacesView />);
    const article = await screen.findByRole("article");
    fireEvent.click(within(article).getByRole("button", { name: "Stop…" }));
    expect(within(article).getByRole("alertdialog").textContent).toMatch(
      /Stop the command running in workspace ws1\? The agent's run ends as interrupted; the workspace, its files and its runs so far stay\./,
    );
    fireEvent.click(within(article).getByRole("button", { name: "Stop the command" }));
    expect((await screen.findByText("Workspace ws1: stopped 1 running command.")).getAttribute("role")).toBe("status");
    expect(calls.filter((c) => c.method === "POST").map((c) => c.url)).toEqual(["/api/workspaces/ws1/stop"]);
    await waitFor(() => expect(within(screen.getByRole("article")).getByText("interrupted")).toBeTruthy());
    expect(within(screen.getByRole("article")).queryByRole("button", { name: "Stop…" })).toBeNull();
  });
});
