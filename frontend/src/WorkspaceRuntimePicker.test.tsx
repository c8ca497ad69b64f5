import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const runtimes = [
  { name: "runc", default: true, noNetwork: false },
  { name: "runsc", default: false, noNetwork: true },
];

describe("WorkspaceRuntimePicker", () => {
  it("lists the Engine's runtimes, saves gVisor and says a restart is needed", async () => {
    const calls = stubFetch({
      "GET /api/workspace-runtime": { body: { saved: "", running: "", runtimes, restartRequired: false, overriddenByEnv: false } },
      "POST /api/workspace-runtime": { body: { saved: "runsc", running: "", runtimes, restartRequired: true, overriddenByEnv: false } },
    });
    const { WorkspaceRuntimePicker } = await import("./WorkspaceRuntimePicker");
    render(<WorkspaceRuntimePicker />);
    const select = (await screen.findByRole("combobox")) as HTMLSelectElement;
    expect(select.value).toBe("");
    expect(Array.from(select.options).map((o) => o.textContent)).toEqual([
      "the Engine's default",
      "runc · the Engine's default",
      "runsc (gVisor) · no network: egress grants cannot work",
    ]);
    const use = screen.getByRole("button", { name: "Use this runtime" }) as HTMLButtonElement;
    expect(use.disabled).toBe(true);
    fireEvent.change(select, { target: { value: "runsc" } });
    fireEvent.click(use);
    expect((await screen.findByRole("status")).textContent).toMatch(/Restart Sluice and your agents' MCP servers/);
    expect(calls.find((c) => c.method === "POST")?.body).toEqual({ name: "runsc" });
    expect(document.querySelector(".saved-runtime")?.textContent).toMatch(/Saved: runsc/);
  });

  it("shows the server's refusal", async () => {
    stubFetch({
      "GET /api/workspace-runtime": { body: { saved: "", running: "", runtimes, restartRequired: false, overriddenByEnv: false } },
      "POST /api/workspace-runtime": {
        status: 501,
        body: { error: { code: "unsupported", message: 'the configured workspace runtime "kata" is not a runtime of the Docker Engine' } },
      },
    });
    const { WorkspaceRuntimePicker } = await import("./WorkspaceRuntimePicker");
    render(<WorkspaceRuntimePicker />);
    const select = (await screen.findByRole("combobox")) as HTMLSelectElement;
    fireEvent.change(select, { target: { value: "runc" } });
    fireEvent.click(screen.getByRole("button", { name: "Use this runtime" }));
    expect((await screen.findByText(/is not a runtime of the Docker Engine/)).textContent).toMatch(/kata/);
  });
});
