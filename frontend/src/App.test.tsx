import { render, screen, cleanup } from "@testing-library/react";
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
    });
    const App = await loadApp();
    render(<App />);
    expect(await screen.findByText("No proposals waiting")).toBeTruthy();
    expect(screen.getByText(/claude mcp add sluice -- \/opt\/sluice\/sluice-sidecar/)).toBeTruthy();
    expect(screen.getByText(/No repository roots are allowed yet/)).toBeTruthy();
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
});
