import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConnectorsView, ConsentView as Consent } from "./api";
import { stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const connector = {
  id: "https://chatgpt.com/oauth/client.json",
  name: "ChatGPT",
  kind: "metadata document",
  redirectUris: ["https://chatgpt.com/connector_platform_oauth_redirect"],
  createdAt: "2026-12-05T10:00:00Z",
  grantedAt: "",
  scopes: [],
  lastUse: "",
  revoked: false,
};

const request: Consent = {
  id: "abc",
  client: connector,
  redirectUri: "https://chatgpt.com/connector_platform_oauth_redirect",
  redirectHost: "chatgpt.com",
  scopes: ["read", "propose"],
  resource: "https://sluice.example.com/mcp",
  created: "2026-12-05T10:00:00Z",
  allowedRoots: ["/home/me/src"],
};

describe("ConsentView", () => {
  it("shows who asks for what and sends the browser back with the person's Allow", async () => {
    const assign = vi.fn();
    vi.stubGlobal("location", { ...window.location, assign });
    const calls = stubFetch({
      "GET /api/connectors/consent/abc": { body: request },
      "POST /api/connectors/consent/abc": { body: { redirect: "https://chatgpt.com/cb?code=x&iss=y" } },
    });
    const { ConsentView } = await import("./ConsentView");
    render(<ConsentView id="abc" />);
    expect((await screen.findByRole("heading", { name: "Allow ChatGPT to connect?" })).textContent).toBeTruthy();
    const page = document.body.textContent ?? "";
    for (const want of ["https://chatgpt.com/oauth/client.json", "chatgpt.com", "read", "propose", "/home/me/src", "never approve"]) {
      expect(page).toContain(want);
    }
    fireEvent.click(screen.getByRole("button", { name: "Allow" }));
    await vi.waitFor(() => expect(assign).toHaveBeenCalledWith("https://chatgpt.com/cb?code=x&iss=y"));
    const post = calls.find((c) => c.method === "POST")!;
    expect(post.body).toEqual({ allow: true });
    expect(post.headers.get("X-Sluice-CSRF")).toBe("csrf-token");
  });

  it("says so when the request is gone, with nothing to allow", async () => {
    stubFetch({
      "GET /api/connectors/consent/old": {
        status: 404,
        body: { error: { code: "not_found", message: "no such authorization request" } },
      },
    });
    const { ConsentView } = await import("./ConsentView");
    render(<ConsentView id="old" />);
    expect(await screen.findByText(/no such authorization request/)).toBeTruthy();
    expect(screen.queryByRole("button", { name: "Allow" })).toBeNull();
  });
});

describe("ConnectorsList", () => {
  it("lists the allowed connectors and revokes one", async () => {
    const allowed = { ...connector, grantedAt: "2026-12-05T10:01:00Z", scopes: ["read", "propose"], lastUse: "2026-12-05T10:02:00Z" };
    const listed: ConnectorsView = { serving: true, connectors: [allowed] };
    const calls = stubFetch({
      "GET /api/connectors": { body: listed },
      "POST /api/connectors/revoke": { body: { serving: true, connectors: [{ ...allowed, revoked: true }] } },
    });
    const { ConnectorsList } = await import("./ConsentView");
    render(<ConnectorsList />);
    fireEvent.click(await screen.findByRole("button", { name: "Revoke ChatGPT" }));
    expect(await screen.findByText("revoked")).toBeTruthy();
    expect(calls.find((c) => c.method === "POST")!.body).toEqual({ id: connector.id });
  });

  it("says how to start the listener when none runs", async () => {
    stubFetch({ "GET /api/connectors": { body: { serving: false, connectors: [] } } });
    const { ConnectorsList } = await import("./ConsentView");
    render(<ConnectorsList />);
    expect(await screen.findByText(/No remote listener runs/)).toBeTruthy();
  });
});
