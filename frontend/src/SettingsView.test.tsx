import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Settings } from "./api";
import { stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const settings: Settings = {
  allowedRoots: ["/home/me/src"],
  pendingExpiry: "24h0m0s",
  policyFile: "",
  toolsets: ["git", "propose"],
  notifications: true,
  availableToolsets: ["git", "propose", "workspace"],
  restartRequired: [],
  overriddenByEnv: [],
};

describe("SettingsView", () => {
  it("saves the form and says which settings need a restart", async () => {
    const calls = stubFetch({
      "GET /api/settings": { body: settings },
      "POST /api/settings": (c) => ({
        body: { ...(c.body as object), availableToolsets: settings.availableToolsets, restartRequired: ["policyFile"] },
      }),
    });
    const { SettingsView } = await import("./SettingsView");
    render(<SettingsView />);
    const roots = (await screen.findByLabelText(/Allowed roots/)) as HTMLTextAreaElement;
    expect(roots.value).toBe("/home/me/src");
    const save = screen.getByRole("button", { name: "Save" }) as HTMLButtonElement;
    expect(save.disabled).toBe(true);

    fireEvent.change(roots, { target: { value: "/home/me/src\n /work \n\n" } });
    const expiry = screen.getByLabelText(/Pending expiry/) as HTMLSelectElement;
    expect(expiry.value).toBe("24h");
    expect([...expiry.options].map((o) => o.textContent)).toEqual(["15 minutes", "1 hour", "4 hours", "1 day", "3 days", "7 days"]);
    fireEvent.change(expiry, { target: { value: "168h" } });
    fireEvent.change(screen.getByLabelText(/Policy file/), { target: { value: "/home/me/.config/sluice/policy.json" } });
    fireEvent.click(screen.getByLabelText("workspace"));
    fireEvent.click(screen.getByLabelText(/Desktop notification/));
    expect(save.disabled).toBe(false);
    fireEvent.click(save);

    expect(await screen.findByText(/Restart Sluice for these to take effect: Policy file/)).toBeTruthy();
    const post = calls.find((c) => c.method === "POST")!;
    expect(post.url).toBe("/api/settings");
    expect(post.body).toEqual({
      allowedRoots: ["/home/me/src", "/work"],
      pendingExpiry: "168h",
      policyFile: "/home/me/.config/sluice/policy.json",
      toolsets: ["git", "propose", "workspace"],
      notifications: false,
    });
    expect(screen.getAllByText("restart needed")).toHaveLength(1);
    await waitFor(() => expect((screen.getByRole("button", { name: "Save" }) as HTMLButtonElement).disabled).toBe(true));
  });

  it("keeps an expiry written by hand in config.json as a choice", async () => {
    stubFetch({ "GET /api/settings": { body: { ...settings, pendingExpiry: "1h30m0s" } } });
    const { SettingsView } = await import("./SettingsView");
    render(<SettingsView />);
    const expiry = (await screen.findByLabelText(/Pending expiry/)) as HTMLSelectElement;
    expect(expiry.value).toBe("1h30m0s");
    expect(expiry.selectedOptions[0].textContent).toBe("1h30m0s (from config.json)");
    expect((screen.getByRole("button", { name: "Save" }) as HTMLButtonElement).disabled).toBe(true);
  });

  it("shows the server's reason when a setting is refused", async () => {
    stubFetch({
      "GET /api/settings": { body: settings },
      "GET /api/connectors": { body: { serving: false, connectors: [] } },
      "POST /api/settings": { status: 400, body: { error: { code: "invalid_argument", message: "allowedRoots: /nope does not exist" } } },
    });
    const { SettingsView } = await import("./SettingsView");
    render(<SettingsView />);
    fireEvent.change(await screen.findByLabelText(/Allowed roots/), { target: { value: "/nope" } });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    expect((await screen.findByRole("alert")).textContent).toMatch(/\/nope does not exist/);
  });
});
