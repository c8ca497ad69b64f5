import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Client } from "./api";
import { findEl, stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const clients: Client[] = [
  {
    client: "claude-code",
    displayName: "Claude Code",
    scopes: ["user", "project"],
    path: "/home/me/.claude.json",
    format: "json",
    preview: '{\n  "mcpServers": {\n    "sluice": { "command": "/opt/sluice/sluice-sidecar", "args": [] }\n  }\n}',
    preAllows: ["mcp__sluice__repo_brief", "mcp__sluice__propose_reset"],
    preAllowNote:
      "pre-allowed 2 Sluice tools in /home/me/.claude/settings.json (permissions.allow): the read tools, which change nothing, and the propose tools, which only propose: every change, propose_reset and propose_discard included, still waits for a person's approval in Sluice",
  },
  {
    client: "codex",
    displayName: "Codex",
    scopes: ["user"],
    path: "/home/me/.codex/config.toml",
    format: "toml",
    preview: '[mcp_servers.sluice]\ncommand = "/opt/sluice/sluice-sidecar"',
    preAllows: [],
    preAllowNote: "nothing was pre-allowed: it asks",
  },
  {
    client: "chatgpt",
    displayName: "ChatGPT",
    scopes: ["user"],
    path: "",
    format: "steps",
    preview: "1. Run sluice-sidecar --http\n2. Add a connector",
    preAllows: [],
    preAllowNote: "nothing was pre-allowed: it asks",
  },
];

describe("ConnectView", () => {
  it("shows each client's configuration and where it goes, and writes it", async () => {
    const calls = stubFetch({
      "GET /api/connect": { body: clients },
      "POST /api/connect": {
        body: {
          client: "claude-code",
          path: "/home/me/src/shop/.mcp.json",
          backupPath: "/home/me/src/shop/.mcp.json.sluice-backup",
          changed: true,
          preAllowed: ["mcp__sluice__repo_brief", "mcp__sluice__repo_status"],
          message: "Configuration written. Restart Claude Code (or reload its MCP servers) to pick up Sluice.",
        },
      },
    });
    const { ConnectView } = await import("./ConnectView");
    render(<ConnectView />);
    const panel = await screen.findByRole("tabpanel", { name: "Claude Code" });
    expect(within(panel).getByText("/home/me/.claude.json")).toBeTruthy();
    expect(within(panel).getByText(/"command": "\/opt\/sluice\/sluice-sidecar"/)).toBeTruthy();
    expect(within(panel).getByText("mcp__sluice__repo_brief")).toBeTruthy();
    // Proposal tools are pre-allowed because they only propose; the
    // screen says so and never calls them read-only.
    expect(within(panel).getByText(/the propose tools, which only propose/)).toBeTruthy();
    expect(panel.textContent).not.toMatch(/read-only/);

    fireEvent.click(within(panel).getByLabelText("For one project"));
    const write = within(panel).getByRole("button", { name: "Write configuration" }) as HTMLButtonElement;
    expect(write.disabled).toBe(true);
    fireEvent.change(within(panel).getByLabelText("Project folder"), { target: { value: " /home/me/src/shop " } });
    fireEvent.click(write);

    const result = await findEl(".connect-result", panel);
    expect(result.querySelector(".connect-message")!.textContent).toBe(
      "Configuration written. Restart Claude Code (or reload its MCP servers) to pick up Sluice.",
    );
    expect(result.textContent!.match(/Restart/g)).toHaveLength(1);
    expect(within(result).getByText("/home/me/src/shop/.mcp.json")).toBeTruthy();
    expect(within(result).getByText("/home/me/src/shop/.mcp.json.sluice-backup")).toBeTruthy();
    expect(within(result).getByText("mcp__sluice__repo_brief, mcp__sluice__repo_status")).toBeTruthy();
    expect(calls.find((c) => c.method === "POST")!.body).toEqual({
      client: "claude-code",
      scope: "project",
      project: "/home/me/src/shop",
    });
  });

  it("says when nothing changed, and offers no button for clients set up by hand", async () => {
    const calls = stubFetch({
      "GET /api/connect": { body: clients },
      "POST /api/connect": {
        body: {
          client: "codex",
          path: "/home/me/.codex/config.toml",
          changed: false,
          preAllowed: [],
          message: "Already configured; nothing changed.",
        },
      },
    });
    const { ConnectView } = await import("./ConnectView");
    render(<ConnectView />);
    fireEvent.click(await screen.findByRole("tab", { name: "Codex" }));
    const panel = screen.getByRole("tabpanel", { name: "Codex" });
    expect(within(panel).queryByLabelText("For one project")).toBeNull();
    fireEvent.click(within(panel).getByRole("button", { name: "Write configuration" }));
    const result = await findEl(".connect-result", panel);
    expect(result.getAttribute("role")).toBe("status");
    expect(result.querySelector(".connect-message")!.textContent).toBe("Already configured; nothing changed.");
    expect(result.textContent).not.toMatch(/Restart/);
    expect(calls.find((c) => c.method === "POST")!.body).toEqual({ client: "codex", scope: "user", project: "" });

    fireEvent.click(screen.getByRole("tab", { name: "ChatGPT" }));
    const manual = screen.getByRole("tabpanel", { name: "ChatGPT" });
    expect(within(manual).getByText(/Follow these steps/)).toBeTruthy();
    expect(within(manual).queryByRole("button", { name: "Write configuration" })).toBeNull();
  });

  it("leads with starting an agent confined, and says what the configuration connects", async () => {
    stubFetch({ "GET /api/connect": { body: clients } });
    const { ConnectView } = await import("./ConnectView");
    render(<ConnectView />);
    await screen.findByRole("tabpanel", { name: "Claude Code" });
    const confined = screen.getByRole("region", { name: "Start an agent confined" });
    expect(within(confined).getByText("sluice run claude", { selector: "pre code" })).toBeTruthy();
    for (const p of ["codex", "gemini", "copilot", "opencode", "qwen", "sluice run -- COMMAND"]) {
      expect(within(confined).getByText(p, { selector: "code" })).toBeTruthy();
    }
    expect(confined.textContent).toMatch(/private copy of the repository, with no access to your credentials or Sluice's files/);
    expect(confined.textContent).toMatch(/agent you start yourself instead\. That agent runs as your account: it could write to your repositories without asking/);
    expect(within(confined).getByRole("link", { name: "Sessions" }).getAttribute("href")).toBe("#/sessions");
    // It comes before the configuration writer.
    const writer = screen.getByRole("tablist", { name: "Clients" });
    expect(confined.compareDocumentPosition(writer) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(screen.getByRole("heading", { level: 2, name: "Connect an agent you start yourself" })).toBeTruthy();
  });

  it("says why a client has no configuration instead of showing an empty one", async () => {
    const broken: Client = {
      client: "claude-code",
      displayName: "Claude Code",
      scopes: ["user"],
      path: "",
      format: "json",
      preview: "",
      preAllows: [],
      preAllowNote: "",
      problem: "connect: the sidecar command must be an absolute path",
    };
    stubFetch({ "GET /api/connect": { body: [broken] } });
    const { ConnectView } = await import("./ConnectView");
    render(<ConnectView />);
    const panel = await screen.findByRole("tabpanel", { name: "Claude Code" });
    expect(within(panel).getByRole("alert").textContent).toMatch(
      /Sluice cannot make this configuration: connect: the sidecar command must be an absolute path/,
    );
    expect(panel.textContent).not.toMatch(/Goes in/);
    expect(within(panel).queryByRole("button", { name: "Write configuration" })).toBeNull();
  });
});
