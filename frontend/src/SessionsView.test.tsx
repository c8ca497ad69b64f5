import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeEventSource, agentSession, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

// A fresh module graph per test: the API module caches the CSRF token.
async function renderSessions() {
  const { SessionsView } = await import("./SessionsView");
  return render(<SessionsView />);
}

function sessionEl(id: string): HTMLElement {
  const el = document.getElementById(`session-${id}`);
  if (!el) throw new Error(`no session ${id}`);
  return el;
}

const leftover = "0a1b2c3d-0000-4000-8000-000000000009";

describe("SessionsView", () => {
  it("says how to start a confined agent when there are no sessions", async () => {
    stubFetch({ "GET /api/sessions": { body: [] } });
    await renderSessions();
    expect(document.getElementById("sessions-title")?.textContent).toBe("Sessions");
    const empty = await screen.findByText(/in a repository folder to start an agent confined/);
    expect(empty.textContent).toContain("sluice run claude");
    expect(empty.textContent).toMatch(/appears here/);
  });

  it("lists each session: program, repository, state, times, proposals, hosts with the granted ones marked, runtime", async () => {
    stubFetch({
      "GET /api/sessions": {
        body: [
          agentSession({ proposals: 2 }),
          agentSession({
            id: "s2",
            agent: "aider",
            repo: "/home/me/src/blog",
            repoName: "blog",
            network: [],
            granted: [],
            state: "ended",
            startedAt: "2026-01-01T10:00:00Z",
            endedAt: "2026-01-01T10:42:00Z",
          }),
        ],
      },
    });
    await renderSessions();
    const [running, ended] = await screen.findAllByRole("article");
    expect(running.id).toBe("session-s1");
    expect(within(running).getByRole("heading", { level: 2 }).textContent).toBe("claude-code in shop");
    expect(within(running).getByText("shop").getAttribute("title")).toBe("/home/me/src/shop");
    expect(within(running).getByText("running").closest(".badge")?.textContent).toBe("State: running");
    expect(running.textContent).toMatch(/running for 5m/);
    expect(running.querySelector(".session-proposals")?.textContent).toBe("2");
    const hosts = Array.from(running.querySelectorAll(".hosts li")).map((li) => li.textContent);
    expect(hosts).toEqual(["api.anthropic.com", "proxy.golang.org you allowed"]);
    expect(within(running).getByText("bubblewrap")).toBeTruthy();
    // The id its cards name ("…, session 6b794f95").
    expect(running.querySelector(".session-id")?.textContent).toBe("s1");
    expect(within(running).getByRole("button", { name: "Stop" }).id).toBe("stop-session-s1");

    expect(within(ended).getByRole("heading", { level: 2 }).textContent).toBe("aider in blog");
    expect(ended.textContent).toMatch(/ended .*\(ran 42m 00s\)/);
    expect(ended.querySelector(".session-proposals")?.textContent).toBe("none yet");
    expect(ended.querySelector(".hosts")).toBeNull();
    expect(within(ended).queryByRole("button", { name: "Stop" })).toBeNull();
  });

  it("stops a running session and reads the list again", async () => {
    let stopped = false;
    const calls = stubFetch({
      "GET /api/sessions": () => ({ body: [agentSession(stopped ? { state: "ended", endedAt: new Date().toISOString() } : {})] }),
      "POST /api/sessions/s1/stop": () => {
        stopped = true;
        return { body: true };
      },
    });
    await renderSessions();
    const stop = await screen.findByRole("button", { name: "Stop" });
    // What stopping does is said beside the button, not behind a dialog.
    expect(document.getElementById(stop.getAttribute("aria-describedby")!)?.textContent).toMatch(
      /What it left and never proposed comes to you as a card/,
    );
    fireEvent.click(stop);
    await waitFor(() => expect(sessionEl("s1").dataset.state).toBe("ended"));
    expect(screen.queryByRole("button", { name: "Stop" })).toBeNull();
    const post = calls.find((c) => c.method === "POST")!;
    expect(post.url).toBe("/api/sessions/s1/stop");
    expect(post.headers.get("X-Sluice-CSRF")).toBe("csrf-token");
  });

  it("shows why a stop failed, in the session's own box", async () => {
    stubFetch({
      "GET /api/sessions": { body: [agentSession()] },
      "POST /api/sessions/s1/stop": { status: 404, body: { error: { code: "not_found", message: "no confined session has that id" } } },
    });
    await renderSessions();
    fireEvent.click(await screen.findByRole("button", { name: "Stop" }));
    const alert = await within(sessionEl("s1")).findByRole("alert");
    expect(alert.textContent).toMatch(/no confined session has that id/);
    expect((screen.getByRole("button", { name: "Stop" }) as HTMLButtonElement).disabled).toBe(false);
  });

  it("links an ended session's leftover card with its state, and offers its changes again", async () => {
    let offered = false;
    const calls = stubFetch({
      "GET /api/sessions": () => ({
        body: [
          agentSession({
            state: "ended",
            endedAt: new Date().toISOString(),
            proposals: 1,
            leftover,
            leftoverFiles: 3,
            leftoverState: offered ? "pending" : "expired",
            canOffer: !offered,
          }),
        ],
      }),
      "POST /api/sessions/s1/offer": () => {
        offered = true;
        return { body: { proposal: "new-card", files: 3, message: "3 files offered again as a new card." } };
      },
    });
    await renderSessions();
    const el = await waitFor(() => sessionEl("s1"));
    const left = el.querySelector(".session-leftover")!;
    expect(left.textContent).toBe("3 file(s), offered as proposal 0a1b2c3d State: expired");
    expect(left.querySelector("a")?.getAttribute("href")).toBe(`#/proposal/${leftover}`);

    fireEvent.click(within(el).getByRole("button", { name: "Offer the changes again" }));
    const message = await within(el).findByText(/3 files offered again as a new card\./);
    expect(message.querySelector("a")?.getAttribute("href")).toBe("#/proposal/new-card");
    expect(calls.find((c) => c.method === "POST")!.url).toBe("/api/sessions/s1/offer");
    await waitFor(() => expect(within(el).queryByRole("button", { name: "Offer the changes again" })).toBeNull());
    expect(left.textContent).toMatch(/State: pending$/);
  });

  it("reads the list again when a session or a proposal changes", async () => {
    let n = 0;
    stubFetch({
      "GET /api/sessions": () => {
        n++;
        return { body: [agentSession({ proposals: n > 1 ? 1 : 0 })] };
      },
    });
    await renderSessions();
    const el = await waitFor(() => sessionEl("s1"));
    await waitFor(() => expect(FakeEventSource.instances.some((es) => es.url === "/api/events" && !es.closed)).toBe(true));
    const es = FakeEventSource.instances.find((e) => !e.closed)!;
    expect([...es.listeners.keys()].sort()).toEqual(["proposal:created", "proposal:updated", "proposals:resync", "session:changed"]);
    expect(el.querySelector(".session-proposals")?.textContent).toBe("none yet");
    FakeEventSource.emit("proposal:created", { id: "p1" });
    await waitFor(() => expect(el.querySelector(".session-proposals")?.textContent).toBe("1"));
    const before = n;
    FakeEventSource.emit("session:changed", undefined);
    await waitFor(() => expect(n).toBeGreaterThan(before));
  });

  it("says why the list could not be read", async () => {
    stubFetch({ "GET /api/sessions": { status: 500, body: { error: { code: "internal", message: "the session store is unreadable" } } } });
    await renderSessions();
    expect((await screen.findByRole("alert")).textContent).toMatch(/the session store is unreadable/);
  });
});
