import { render, screen, cleanup, fireEvent, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

const status = {
  version: "1.2.3",
  ui: "web",
  gatewayAddr: "127.0.0.1:4000",
  pending: 0,
  allowedRoots: [],
  sidecarPath: "/opt/sluice/sluice-sidecar",
  startedAt: "2026-01-01T00:00:00Z",
};

function mockFetch(routes: Record<string, { status: number; body: unknown }>) {
  const calls: string[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    calls.push(`${init?.method ?? "GET"} ${url}`);
    const r = routes[url] ?? { status: 404, body: { error: { code: "not_found", message: "nope" } } };
    return new Response(JSON.stringify(r.body), { status: r.status, headers: { "Content-Type": "application/json" } });
  });
  vi.stubGlobal("fetch", fn);
  return calls;
}

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
  window.location.hash = "";
});

// A fresh module graph per test: the API module caches the CSRF token.
async function loadApp() {
  return (await import("./App")).App;
}

describe("App", () => {
  it("shows the teaching empty state with the sidecar path", async () => {
    const calls = mockFetch({
      "/api/status": { status: 200, body: status },
      "/api/session": { status: 200, body: { csrf: "c" } },
      "/api/ready": { status: 200, body: true },
      "/api/proposals": { status: 200, body: [] },
    });
    const App = await loadApp();
    render(<App />);
    expect(await screen.findByText("No proposals waiting")).toBeTruthy();
    expect(document.getElementById("empty-title")?.textContent).toBe("No proposals waiting");
    expect(screen.getByText("/opt/sluice/sluice-sidecar config --client claude-code --write")).toBeTruthy();
    expect(screen.queryByText(/claude mcp add/)).toBeNull();
    expect(screen.getByText(/No repository roots are allowed yet/)).toBeTruthy();
    expect(screen.getByLabelText("Folder that holds your repositories")).toBeTruthy();
    await vi.waitFor(() => expect(calls).toContain("POST /api/ready"));
  });

  it("asks for the login link when there is no session", async () => {
    mockFetch({ "/api/status": { status: 401, body: { error: { code: "unauthorized", message: "no session" } } } });
    const App = await loadApp();
    render(<App />);
    expect(await screen.findByText("Sign in")).toBeTruthy();
  });

  it("sends the CSRF header on state changes", async () => {
    const seen: Record<string, string | null> = {};
    vi.stubGlobal(
      "fetch",
      vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
        const url = String(input);
        seen[url] = new Headers(init?.headers).get("X-Sluice-CSRF");
        const body = url === "/api/session" ? { csrf: "tok123" } : url === "/api/status" ? status : true;
        return new Response(JSON.stringify(body), { status: 200 });
      }),
    );
    const App = await loadApp();
    render(<App />);
    await vi.waitFor(() => expect(seen["/api/ready"]).toBe("tok123"));
  });

  it("navigates between the screens from the top bar", async () => {
    mockFetch({
      "/api/status": { status: 200, body: status },
      "/api/session": { status: 200, body: { csrf: "c" } },
      "/api/ready": { status: 200, body: true },
      "/api/proposals": { status: 200, body: [] },
      "/api/history?limit=200": { status: 200, body: [] },
      "/api/rules": { status: 200, body: { policyFile: "/p.json", configured: false, rules: [] } },
      "/api/audit": { status: 200, body: { keyId: "", signed: false, entries: [] } },
      "/api/workspaces": { status: 400, body: { error: { code: "unsupported", message: "not yet" } } },
      "/api/sessions": { status: 200, body: [] },
    });
    const App = await loadApp();
    render(<App />);
    const nav = await screen.findByRole("navigation", { name: "Screens" });
    expect(within(nav).getAllByRole("button").map((b) => b.textContent)).toEqual([
      "Pending",
      "History",
      "Rules",
      "Timeline",
      "Workspaces",
      "Sessions",
      "Audit",
      "Settings",
      "Connect",
    ]);
    fireEvent.click(within(nav).getByText("History"));
    expect(await screen.findByRole("heading", { name: "History" })).toBeTruthy();
    expect(within(nav).getByText("History").getAttribute("aria-current")).toBe("page");
    fireEvent.click(within(nav).getByText("Rules"));
    expect(await screen.findByRole("heading", { name: "Rules" })).toBeTruthy();
    fireEvent.click(within(nav).getByText("Audit"));
    expect(await screen.findByRole("heading", { name: "Audit ledger" })).toBeTruthy();
    expect(document.getElementById("audit-title")).toBeTruthy();
    fireEvent.click(within(nav).getByText("Workspaces"));
    expect(await screen.findByText("Workspaces are not available: not yet")).toBeTruthy();
    fireEvent.click(within(nav).getByText("Sessions"));
    expect(await screen.findByRole("heading", { name: "Sessions" })).toBeTruthy();
    expect(window.location.hash).toBe("#/sessions");
    expect(document.getElementById("sessions-title")).toBeTruthy();
    fireEvent.click(within(nav).getByText("Pending"));
    expect(await screen.findByText("No proposals waiting")).toBeTruthy();
  });

  it("shows the pending count in the navigation and the title, and follows it live", async () => {
    const { stubEventSource, FakeEventSource, card } = await import("./testing");
    stubEventSource();
    let pending = 2;
    const routes: Record<string, { status: number; body: unknown }> = {
      "/api/session": { status: 200, body: { csrf: "c" } },
      "/api/ready": { status: 200, body: true },
      "/api/history?limit=200": { status: 200, body: [] },
    };
    vi.stubGlobal(
      "fetch",
      vi.fn(async (input: RequestInfo | URL) => {
        const url = String(input);
        const r =
          url === "/api/status"
            ? { status: 200, body: { ...status, pending } }
            : url === "/api/proposals"
              ? { status: 200, body: [card({ id: "a1" }), card({ id: "b2" })].slice(0, pending) }
              : (routes[url] ?? { status: 404, body: { error: { code: "not_found", message: "nope" } } });
        return new Response(JSON.stringify(r.body), { status: r.status, headers: { "Content-Type": "application/json" } });
      }),
    );
    window.location.hash = "#/history";
    const App = await loadApp();
    render(<App />);
    const nav = await screen.findByRole("navigation", { name: "Screens" });
    await vi.waitFor(() => expect(within(nav).getByRole("button", { name: "Pending 2 waiting" })).toBeTruthy());
    await vi.waitFor(() => expect(document.title).toBe("(2) Sluice"));
    pending = 1;
    FakeEventSource.emit("proposal:updated", { id: "b2", state: "rejected", version: 2 });
    await vi.waitFor(() => expect(within(nav).getByRole("button", { name: "Pending 1 waiting" })).toBeTruthy());
    await vi.waitFor(() => expect(document.title).toBe("(1) Sluice"));
    pending = 0;
    FakeEventSource.emit("proposal:updated", { id: "a1", state: "expired", version: 2 });
    await vi.waitFor(() => expect(document.title).toBe("Sluice"));
    expect(within(nav).getByRole("button", { name: "Pending" }).textContent).toBe("Pending");
  });

  it("says Sluice isn't running when nothing answers, and comes back when it does", async () => {
    let up = false;
    vi.stubGlobal(
      "fetch",
      vi.fn(async (input: RequestInfo | URL) => {
        const url = String(input);
        if (!up) throw new TypeError("Failed to fetch");
        const body = url === "/api/session" ? { csrf: "c" } : url === "/api/status" ? status : url === "/api/proposals" ? [] : true;
        return new Response(JSON.stringify(body), { status: 200 });
      }),
    );
    const App = await loadApp();
    render(<App />);
    expect(await screen.findByRole("heading", { name: "Sluice isn't running" })).toBeTruthy();
    expect(document.body.textContent).toContain("sluice serve");
    expect(document.body.textContent).not.toContain("Failed to fetch");
    up = true;
    expect(await screen.findByText("No proposals waiting", undefined, { timeout: 15_000 })).toBeTruthy();
    expect(screen.queryByRole("heading", { name: "Sluice isn't running" })).toBeNull();
  });

  it("tells a window opened beside a running sluice serve which one runs, and opens it", async () => {
    const calls: string[] = [];
    const API = {
      Status: async () => {
        throw { code: "already_serving", message: "Sluice is already running as `sluice serve` (pid 7) at http://127.0.0.1:7733" };
      },
      OpenRunning: async () => {
        calls.push("OpenRunning");
        return "opened";
      },
    };
    vi.stubGlobal("go", { app: { API } });
    const App = await loadApp();
    render(<App />);
    expect(await screen.findByRole("heading", { name: "Sluice is already running" })).toBeTruthy();
    expect(document.body.textContent).toContain("pid 7");
    fireEvent.click(screen.getByText("Open it in the browser"));
    expect(await screen.findByText("Opened in your browser.")).toBeTruthy();
    expect(calls).toEqual(["OpenRunning"]);
  });
});
