import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

const a = "sha256:" + "a".repeat(64);
const b = "sha256:" + "b".repeat(64);

describe("WorkspaceImagePicker", () => {
  it("lists local images, marks the one in use, and pins another by ID", async () => {
    const images = [
      { id: a, tags: ["golang:1.26"], digests: [], size: 1, inUse: true },
      { id: b, tags: ["sluice-test/busybox:1"], digests: [], size: 1, inUse: false },
    ];
    const calls = stubFetch({
      "GET /api/workspace-images": { body: { images, pinned: a, running: a, restartRequired: false, overriddenByEnv: false } },
      "POST /api/workspace-images": {
        body: { images: images.map((im) => ({ ...im, inUse: im.id === b })), pinned: b, running: a, restartRequired: true, overriddenByEnv: false },
      },
    });
    const { WorkspaceImagePicker } = await import("./WorkspaceImagePicker");
    render(<WorkspaceImagePicker />);
    const select = (await screen.findByRole("combobox")) as HTMLSelectElement;
    expect(select.value).toBe(a);
    expect(screen.getByRole("option", { name: /golang:1\.26 · sha256:aaaaaaaaaaaa · in use/ })).toBeTruthy();
    const use = screen.getByRole("button", { name: "Use this image" }) as HTMLButtonElement;
    expect(use.disabled).toBe(true);
    fireEvent.change(select, { target: { value: b } });
    fireEvent.click(use);
    expect((await screen.findByRole("status")).textContent).toMatch(/Restart Sluice/);
    const post = calls.find((c) => c.method === "POST");
    expect(post?.body).toEqual({ ref: b });
    expect(post?.headers.get("X-Sluice-CSRF")).toBe("csrf-token");
    expect(screen.getByText(b)).toBeTruthy();
  });

  it("says so when images cannot be listed", async () => {
    stubFetch({
      "GET /api/workspace-images": { status: 400, body: { error: { code: "unsupported", message: "the Docker Engine is not reachable" } } },
    });
    const { WorkspaceImagePicker } = await import("./WorkspaceImagePicker");
    render(<WorkspaceImagePicker />);
    expect((await screen.findByRole("status")).textContent).toBe("Images cannot be listed: the Docker Engine is not reachable");
  });
});
